"""Workflow specs: roles, states and actions keyed by short name (docs/workflows.md),
validated into an immutable model.

The stored spec is the *normalized* input (keys in the given order, defaults omitted), so
exporting a workflow returns what was defined and define(export(w)) clones it exactly.
"""

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from engine.spec.action_specs import action as action_spec
from engine.spec.action_specs import side_effects_of
from engine.spec.child_specs import CHILD_KEYS, PARENT_TRIGGERS, parent_fields
from engine.spec.defaults import VALUES
from engine.spec.field_specs import field_specs, hiding, title_placeholders
from engine.spec.reminder_specs import KEYS as REMINDER_KEYS
from engine.spec.spec_checker import (
    MAX_ACTIONS,
    MAX_CHILD_DEPTH,
    MAX_DESCRIPTION,
    MAX_NAME,
    MAX_ROLES,
    MAX_STATES,
    SpecChecker,
    kind,
)
from engine.spec.spec_model import TRIGGERS, UNATTENDED_TRIGGERS, ActionSpec, RoleSpec, StateSpec, WorkflowSpec

# The parser and the model it makes: callers import both from here (the model's own module,
# engine/spec/spec_model.py, is where the engine's classes are defined; the checks of one action are
# engine/spec/action_specs.py's).
__all__ = [
    "TRIGGERS",
    "UNATTENDED_TRIGGERS",
    "ActionSpec",
    "RoleSpec",
    "StateSpec",
    "WorkflowSpec",
    "normalize",
    "parse",
]

_ROLE_KEYS = {"pretty_name", "callbacks", "allowed_parties", "static_parties", "assignable_by"}
_STATE_KEYS = {"pretty_name", "terminal", "hidden_fields"}
_ACTION_KEYS = {
    "pretty_name",
    "pretty_past_tense",
    "trigger",
    "assigned_role",
    "allowed_roles",
    "privileges",
    "enabled_states",
    "assigned_states",
    "always_enabled",
    "attach_documents",
    "new_state",
    "timeout_seconds",
    "side_effects",
    "depends_on",
    "outputs",
    "on_fire",
    "resolutions",
    "enable_conditions",
    "children",
    "states",
    "fields",
    "required_fields",
    "enabled_when",
    "routes",
    "log_title",
    *REMINDER_KEYS,
}
_TOP_KEYS = {"short_name", "pretty_name", "description", "fields", "roles", "states", "actions", "side_effects"}
_OPTIONAL_COLLECTIONS = {
    "callbacks",
    "allowed_parties",
    "static_parties",
    "assignable_by",
    "hidden_fields",
    "allowed_roles",
    "privileges",
    "enabled_states",
    "assigned_states",
    "side_effects",
    "depends_on",
    "outputs",
    "resolutions",
    "enable_conditions",
    "fields",
    "required_fields",
    "routes",
}


def parse(
    raw: Any,
    *,
    known_callbacks: set[str],
    known_side_effects: set[str],
    known_on_fire: set[str] | None = None,
    known_enable_conditions: set[str] | None = None,
    check_job: Callable[[str, Any], list[str] | None] | None = None,
) -> WorkflowSpec:
    """Validate a spec key by key; raises InvalidSpec (DomainErrors, code INVALID_SPEC) listing
    every problem found, each with the path of its key. Every key is type-checked and the whole
    is bounded (spec_checker). What only the whole spec shows (a state no case reaches, an
    action never enabled) is engine.spec.spec_analysis's, asked of new definitions only."""
    c = SpecChecker(
        known_callbacks,
        known_side_effects,
        known_on_fire=known_on_fire or set(),
        known_enable_conditions=known_enable_conditions or set(),
    )
    c.check_job = check_job or (lambda kind, args: None)
    if not isinstance(raw, dict):
        c.fail([], f"A spec must be an object, not {kind(raw)}.")
        c.raise_if_failed()
    top = raw
    c.unknown_keys(top, _TOP_KEYS, [])
    short_name = top.get("short_name")
    if (
        not isinstance(short_name, str)
        or not short_name.strip()
        or len(short_name) > MAX_NAME
        or not short_name.replace("_", "").replace("-", "").isalnum()
    ):
        c.fail(["short_name"], f"short_name is required: 1 to {MAX_NAME} letters, digits, '-' and '_'.")
        short_name = "invalid"
    pretty_name = c.pretty(top, [], short_name)["pretty_name"]
    c.text(top.get("description"), ["description"], "", max_len=MAX_DESCRIPTION)

    roles: dict[str, RoleSpec] = {}
    for name, body in c.entries(top.get("roles"), ["roles"], "role", MAX_ROLES).items():
        path = ["roles", name]
        body = c.mapping(body, path)
        c.unknown_keys(body, _ROLE_KEYS, path)
        callbacks = c.names(body.get("callbacks"), [*path, "callbacks"], "callback name")
        for cb in callbacks:
            if cb not in known_callbacks:
                c.fail([*path, "callbacks"], f"Role {name!r} names unknown assignee callback {cb!r}.")
        roles[name] = RoleSpec(
            short_name=name,
            pretty_name=c.pretty(body, path, name)["pretty_name"],
            callbacks=callbacks,
            allowed_parties=c.names(body.get("allowed_parties"), [*path, "allowed_parties"], "user or group id"),
            static_parties=c.names(body.get("static_parties"), [*path, "static_parties"], "user or group id"),
            assignable_by=c.names(body.get("assignable_by"), [*path, "assignable_by"], "role name"),
        )
    for role in roles.values():
        for other in role.assignable_by:
            if other not in roles:
                c.fail(
                    ["roles", role.short_name, "assignable_by"],
                    f"Role {role.short_name!r} names unknown role {other!r}.",
                )

    c.fields = field_specs(c, top.get("fields"))
    states: dict[str, StateSpec] = {}
    actions: dict[str, ActionSpec] = {}
    _scope(c, top, [], None, roles, states, actions, depth=0)
    _check_hiding(c, states, actions, set(roles))

    c.count_transitions(states.values(), actions.values())
    workflow_effects, workflow_jobs = side_effects_of(c, top.get("side_effects"), ["side_effects"], "The workflow")
    c.raise_if_failed()
    return WorkflowSpec(
        short_name=short_name,
        pretty_name=pretty_name,
        roles=roles,
        states=states,
        actions=actions,
        side_effects=workflow_effects,
        normalized=normalize(top),
        jobs=workflow_jobs,
        has_children=any(a.children for a in actions.values()),
        fields=c.fields,
    )


def _scope(
    c: SpecChecker,
    body: dict[str, Any],
    path: list[str],
    parent: str | None,
    roles: dict[str, RoleSpec],
    states: dict[str, StateSpec],
    actions: dict[str, ActionSpec],
    *,
    depth: int,
) -> bool:
    """Validate one FSM scope: the top level, or the child workflow of a parent action; False
    when it nests too deep to be looked into."""
    if depth > MAX_CHILD_DEPTH:
        c.fail(
            path,
            f"Child workflows nest at most {MAX_CHILD_DEPTH} levels deep.",
            code="CHILD_RECURSION",
            hint="Flatten a level: give a child workflow's steps to its parent's scope.",
        )
        return False
    scope_states: list[str] = []
    spath = [*path, "states"]
    for name, state in c.entries(body.get("states"), spath, "state", MAX_STATES - c.states).items():
        state_path = [*spath, name]
        state = c.mapping(state, state_path)
        c.unknown_keys(state, _STATE_KEYS, state_path)
        if name in states:
            c.fail(state_path, f"State {name!r} is defined twice.")
            continue
        c.states += 1
        hidden = hiding(c, [*state_path, "hidden_fields"], state.get("hidden_fields"))
        states[name] = StateSpec(
            short_name=name,
            pretty_name=c.pretty(state, state_path, name)["pretty_name"],
            terminal=c.flag(state.get("terminal"), [*state_path, "terminal"], VALUES["terminal"]),
            hidden_fields=hidden.names,
            hidden_visible_to=hidden.visible_to,
            scope=parent,
        )
        scope_states.append(name)
    needs_states = parent is None or body.get("trigger", "user") == "workflow"
    # Only when none were given: states refused for their number or type were reported already.
    if needs_states and body.get("states") in (None, {}):
        if parent is None:
            c.fail(spath, "A workflow needs at least one state.")
        else:
            c.fail(
                spath,
                f"Child workflow {parent!r} needs at least one state.",
                code="CHILD_WORKFLOW_MISSING",
                hint="Give it states (one terminal) and children that move between them.",
            )

    key = "actions" if parent is None else "children"
    pending: list[tuple[list[str], str, dict[str, Any]]] = []
    inits = 0
    for name, action in c.entries(body.get(key), [*path, key], "action", MAX_ACTIONS - c.actions).items():
        apath = [*path, key, name]
        action = c.mapping(action, apath)
        c.unknown_keys(action, _ACTION_KEYS | set(CHILD_KEYS), apath)
        if name in actions or any(name == p[1] for p in pending):
            c.fail(apath, f"Action {name!r} is defined twice.")
            continue
        c.actions += 1
        if action.get("trigger", "user") == "init":
            inits += 1
        pending.append((apath, name, action))
        actions[name] = ActionSpec.named(name)  # a placeholder until the actions are read below
    if inits > 1:
        c.fail([*path, key], "A workflow scope has at most one INIT action.")

    known_states = set(scope_states)
    for apath, name, action in pending:
        actions[name] = action_spec(c, apath, name, action, parent, roles, known_states)
        if actions[name].trigger in PARENT_TRIGGERS and _scope(
            c, action, apath, name, roles, states, actions, depth=depth + 1
        ):
            own = [s for s in states.values() if s.scope == name]
            actions[name] = replace(actions[name], **parent_fields(c, apath, actions[name], action, set(roles), own))
    for apath, name, _ in pending:
        for dep, _, _ in actions[name].depends_on:
            if dep not in actions:
                c.fail([*apath, "depends_on"], f"Action {name!r} depends on unknown action {dep!r}.")
    return True


def _check_hiding(
    c: SpecChecker, states: dict[str, StateSpec], actions: dict[str, ActionSpec], roles: set[str]
) -> None:
    """A state's visible_to names roles; a log title never shows a field some state hides (the
    title is written once for every reader of the log)."""
    hideable = set()
    for state in states.values():
        hideable.update(state.hidden_fields)
        for role in state.hidden_visible_to:
            if role not in roles:
                c.fail(
                    ["states", state.short_name, "hidden_fields", "visible_to"],
                    f"State {state.short_name!r} names unknown role {role!r}.",
                )
    for action in actions.values():
        for placeholder in title_placeholders(action.log_title or ""):
            if placeholder.startswith("fields.") and placeholder[7:] in hideable:
                c.fail(
                    ["actions", action.short_name, "log_title"],
                    f"The log title of {action.short_name!r} shows field {placeholder[7:]!r}, which a state hides; "
                    "a title is the same for every reader of the log.",
                )


def normalize(value: Any) -> Any:
    """Drop keys set to their default (and empty lists/objects), recursively, keeping key order."""
    if isinstance(value, dict):
        result = {}
        for key, item in value.items():
            item = normalize(item)
            if key in VALUES and item == VALUES[key]:
                continue
            if item in ([], {}) and key in _OPTIONAL_COLLECTIONS:
                continue
            result[key] = item
        return result
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value
