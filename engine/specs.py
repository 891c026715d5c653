"""Workflow specs: roles, states and actions keyed by short name (docs/workflows.md),
validated into an immutable model.

The stored spec is the *normalized* input (keys in the given order, defaults omitted), so
exporting a workflow returns what was defined and define(export(w)) clones it exactly.
"""

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from engine.child_specs import CHILD_KEYS, PARENT_TRIGGERS, Condition, check_not_parent, parent_fields
from engine.permissions import WORKFLOW_ITEM_INTENTS
from engine.reminder_specs import KEYS as REMINDER_KEYS
from engine.reminder_specs import Escalation, Reminders, reminder_fields
from engine.spec_checker import (
    MAX_ACTIONS,
    MAX_CHILD_DEPTH,
    MAX_DESCRIPTION,
    MAX_NAME,
    MAX_NAMES,
    MAX_ROLES,
    MAX_STATES,
    MAX_TIMEOUT,
    SpecChecker,
    kind,
)

TRIGGERS = ("user", "auto", "init", "time", "workflow", "parallel", "dynamic")
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
    *REMINDER_KEYS,
}
_TOP_KEYS = {"short_name", "pretty_name", "description", "roles", "states", "actions", "side_effects"}
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
}
# Values that mean "not set"; normalization drops them so exports stay minimal.
_DEFAULTS: dict[str, Any] = {
    "trigger": "user",
    "always_enabled": False,
    "attach_documents": False,
    "terminal": False,
    "timeout_seconds": None,
    "assigned_role": None,
    "new_state": None,
    "on_fire": None,
}
# Triggers whose actions fire without a person choosing: no caller gives them an output or a resolution.
UNATTENDED_TRIGGERS = ("auto", "time", "init")


@dataclass(frozen=True, slots=True)
class RoleSpec:
    short_name: str
    pretty_name: str
    callbacks: tuple[str, ...] = ()
    allowed_parties: tuple[str, ...] = ()
    static_parties: tuple[str, ...] = ()
    assignable_by: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class StateSpec:
    short_name: str
    pretty_name: str
    terminal: bool = False
    hidden_fields: tuple[str, ...] = ()
    scope: str | None = None  # the parent action of a child workflow's states


@dataclass(frozen=True, slots=True)
class ActionSpec:
    short_name: str
    pretty_name: str
    pretty_past_tense: str
    trigger: str = "user"
    assigned_role: str | None = None
    allowed_roles: tuple[str, ...] = ()
    privileges: tuple[str, ...] = ()
    enabled_states: tuple[str, ...] = ()
    assigned_states: tuple[str, ...] = ()
    always_enabled: bool = False
    # Whoever may execute the action may attach documents with it (executeAction's documents),
    # without workflowItem.update: an invoice on "submit" (engine/documents/records.py).
    attach_documents: bool = False
    new_state: str | None = None
    timeout_seconds: int | None = None
    side_effects: tuple[str, ...] = ()
    jobs: tuple[tuple[str, dict[str, Any]], ...] = ()  # (kind, args): the outbox (engine/jobs/outbox.py)
    depends_on: tuple[tuple[str, int, int | None], ...] = ()
    outputs: tuple[tuple[str, str], ...] = ()
    on_fire: str | None = None  # the callback that picks the output (engine.registry.on_fire_callbacks)
    resolutions: tuple[tuple[str, str], ...] = ()  # (code, pretty name), in the spec's order
    enable_conditions: tuple[str, ...] = ()  # callbacks asked before each enabling
    parent: str | None = None
    children: tuple[str, ...] = ()
    for_each: tuple[tuple[str, str], ...] = ()  # (role, per_role|per_member|per_user): DYNAMIC
    complete_when: tuple[Condition, ...] = ()  # in the spec's order: the first that holds fires
    has_scope: bool = False  # the parent's children run in child FSM scopes with their own states
    reminders: Reminders | None = None  # remind the assignees while it waits (engine/reminders.py)
    escalate: Escalation | None = None  # tell a role once it has waited that long

    def is_enabled_in(self, state: str) -> bool:
        return self.always_enabled or state in self.enabled_states or state in self.assigned_states

    def is_assigned_in(self, state: str) -> bool:
        return self.assigned_role is not None and state in self.assigned_states

    def output_state(self, output: str) -> str | None:
        """The state an output leads to; None for an output the action does not declare."""
        return next((state for name, state in self.outputs if name == output), None)


@dataclass(frozen=True, slots=True)
class WorkflowSpec:
    short_name: str
    pretty_name: str
    roles: dict[str, RoleSpec]
    states: dict[str, StateSpec]
    actions: dict[str, ActionSpec]
    side_effects: tuple[str, ...]
    normalized: dict[str, Any] = field(repr=False)
    jobs: tuple[tuple[str, dict[str, Any]], ...] = ()  # declared on the workflow: made by every action
    has_children: bool = False  # any parent action: flat workflows skip engine.cases.children altogether

    @property
    def has_automatic(self) -> bool:
        """Whether any action can fire without a user (AUTO, or a timeout of 0)."""
        return any(a.trigger == "auto" or a.timeout_seconds == 0 for a in self.actions.values())

    def scope_actions(self, parent: str | None) -> list[ActionSpec]:
        return [a for a in self.actions.values() if a.parent == parent]

    def scope_states(self, parent: str | None) -> list[StateSpec]:
        return [s for s in self.states.values() if s.scope == parent]

    def init_action(self, parent: str | None = None) -> ActionSpec | None:
        return next((a for a in self.scope_actions(parent) if a.trigger == "init"), None)

    def initial_state(self, parent: str | None = None) -> str:
        init = self.init_action(parent)
        if init is not None and init.new_state:
            return init.new_state
        return self.scope_states(parent)[0].short_name


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
    action never enabled) is engine.spec_analysis's, asked of new definitions only."""
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
    pretty_name = c.text(top.get("pretty_name"), ["pretty_name"], short_name)
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
            pretty_name=c.text(body.get("pretty_name"), [*path, "pretty_name"], name),
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

    states: dict[str, StateSpec] = {}
    actions: dict[str, ActionSpec] = {}
    _scope(c, top, [], None, roles, states, actions, depth=0)

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
        states[name] = StateSpec(
            short_name=name,
            pretty_name=c.text(state.get("pretty_name"), [*state_path, "pretty_name"], name),
            terminal=c.flag(state.get("terminal"), [*state_path, "terminal"]),
            hidden_fields=c.names(state.get("hidden_fields"), [*state_path, "hidden_fields"], "field name"),
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
        actions[name] = ActionSpec(short_name=name, pretty_name=name, pretty_past_tense=name)  # placeholder
    if inits > 1:
        c.fail([*path, key], "A workflow scope has at most one INIT action.")

    known_states = set(scope_states)
    for apath, name, action in pending:
        actions[name] = _action(c, apath, name, action, parent, roles, known_states)
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


def _action(
    c: SpecChecker,
    path: list[str],
    name: str,
    body: dict[str, Any],
    parent: str | None,
    roles: dict[str, RoleSpec],
    scope_states: set[str],
) -> ActionSpec:
    trigger = body.get("trigger", "user")
    if not isinstance(trigger, str) or trigger not in TRIGGERS:
        c.fail([*path, "trigger"], f"{c.where([*path, 'trigger'])} must be one of {', '.join(TRIGGERS)}.")
        trigger = "user"
    role_names = c.names(body.get("allowed_roles"), [*path, "allowed_roles"], "role name")
    for role in role_names:
        if role not in roles:
            c.fail([*path, "allowed_roles"], f"Action {name!r} names unknown role {role!r}.")
    assigned_role = c.name(body.get("assigned_role"), [*path, "assigned_role"], "a role name")
    if assigned_role is not None and assigned_role not in roles:
        c.fail([*path, "assigned_role"], f"Action {name!r} names unknown role {assigned_role!r}.")
        assigned_role = None
    privileges = c.names(body.get("privileges"), [*path, "privileges"], "intent")
    for privilege in privileges:
        if privilege not in WORKFLOW_ITEM_INTENTS:
            c.fail(
                [*path, "privileges"],
                f"Action {name!r} names unknown privilege {privilege!r}; one of {', '.join(WORKFLOW_ITEM_INTENTS)}.",
            )

    def state_list(key: str) -> tuple[str, ...]:
        values = c.names(body.get(key), [*path, key], "state name")
        for state in values:
            if state not in scope_states:
                c.fail([*path, key], f"Action {name!r} names unknown state {state!r}.")
        return values

    enabled_states, assigned_states = state_list("enabled_states"), state_list("assigned_states")
    if assigned_states and "assigned_role" not in body:
        c.fail([*path, "assigned_states"], f"Action {name!r} has assigned_states but no assigned_role.")
    new_state = c.name(body.get("new_state"), [*path, "new_state"], "a state name")
    if new_state is not None and new_state not in scope_states:
        c.fail([*path, "new_state"], f"Action {name!r} names unknown state {new_state!r}.")
    if trigger == "init" and "new_state" not in body:
        c.fail([*path, "new_state"], f"INIT action {name!r} must name its new_state.")
    always = c.flag(body.get("always_enabled"), [*path, "always_enabled"])
    attach = c.flag(body.get("attach_documents"), [*path, "attach_documents"])
    if attach and trigger != "user":
        c.fail(
            [*path, "attach_documents"],
            f"{trigger.upper()} action {name!r} is executed by no one; only a USER action can attach documents.",
        )
    timeout = c.whole(
        body.get("timeout_seconds"), [*path, "timeout_seconds"], low=0, high=MAX_TIMEOUT, unit=" of seconds"
    )
    if trigger == "time" and "timeout_seconds" not in body:
        c.fail([*path, "timeout_seconds"], f"TIME action {name!r} needs timeout_seconds.")
    effects, jobs = side_effects_of(c, body.get("side_effects"), [*path, "side_effects"], f"Action {name!r}")
    outputs: list[tuple[str, str]] = []
    for output, state in c.entries(body.get("outputs"), [*path, "outputs"], "output", MAX_NAMES).items():
        target = c.name(state, [*path, "outputs", output], "a state name")
        if target is None:
            continue
        if target not in scope_states:
            c.fail([*path, "outputs", output], f"Output {output!r} of {name!r} names unknown state {target!r}.")
        outputs.append((output, target))
    on_fire = _on_fire(c, path, name, body, trigger, timeout, outputs)
    resolutions = _resolutions(c, path, name, body, trigger)
    conditions = c.names(body.get("enable_conditions"), [*path, "enable_conditions"], "enable condition name")
    for condition in conditions:
        if condition not in c.known_enable_conditions:
            c.fail([*path, "enable_conditions"], f"Action {name!r} names unknown enable condition {condition!r}.")
    if conditions and trigger == "init":
        c.fail([*path, "enable_conditions"], f"INIT action {name!r} is never enabled; it has no enable conditions.")
    check_not_parent(c, path, name, body, trigger)
    pretty = c.text(body.get("pretty_name"), [*path, "pretty_name"], name)
    return ActionSpec(
        short_name=name,
        pretty_name=pretty,
        pretty_past_tense=c.text(body.get("pretty_past_tense"), [*path, "pretty_past_tense"], pretty),
        trigger=trigger,
        assigned_role=assigned_role,
        allowed_roles=role_names,
        privileges=privileges,
        enabled_states=enabled_states,
        assigned_states=assigned_states,
        always_enabled=always,
        attach_documents=attach,
        new_state=new_state,
        timeout_seconds=timeout,
        side_effects=effects,
        jobs=jobs,
        depends_on=_depends_on(c, path, name, body),
        outputs=tuple(outputs),
        on_fire=on_fire,
        resolutions=resolutions,
        enable_conditions=conditions,
        parent=parent,
        **reminder_fields(c, path, name, body, trigger, set(roles)),
    )


def _on_fire(
    c: SpecChecker,
    path: list[str],
    name: str,
    body: dict[str, Any],
    trigger: str,
    timeout: int | None,
    outputs: list[tuple[str, str]],
) -> str | None:
    """The ``on_fire`` callback, which picks one of the action's outputs when it fires. An
    action with outputs that can fire without a person (AUTO, TIME, a timeout) needs one: no
    caller is there to choose."""
    on_fire = c.name(body.get("on_fire"), [*path, "on_fire"], "an on_fire callback name")
    if on_fire is not None and on_fire not in c.known_on_fire:
        c.fail([*path, "on_fire"], f"Action {name!r} names unknown on_fire callback {on_fire!r}.")
    if "on_fire" in body and not body.get("outputs"):
        c.fail([*path, "on_fire"], f"on_fire picks one of an action's outputs; {name!r} declares none.")
    if outputs and "new_state" in body and body["new_state"] is not None:
        c.fail([*path, "new_state"], f"Action {name!r} has outputs, which decide its new state; drop new_state.")
    if outputs and trigger == "init":
        c.fail([*path, "outputs"], f"INIT action {name!r} starts the case in its new_state; it has no outputs.")
    elif outputs and "on_fire" not in body and (trigger in UNATTENDED_TRIGGERS or timeout is not None):
        c.fail(
            [*path, "on_fire"],
            f"Action {name!r} can fire without a person (trigger {trigger}"
            f"{'' if timeout is None else ', timeout_seconds'}), so an on_fire callback must pick its output.",
        )
    return on_fire


def _resolutions(
    c: SpecChecker, path: list[str], name: str, body: dict[str, Any], trigger: str
) -> tuple[tuple[str, str], ...]:
    """``{code: pretty_name}``: the codes a person picks from when executing the action;
    an action nobody executes by hand has none."""
    rpath = [*path, "resolutions"]
    found = tuple(
        (code, c.text(pretty, [*rpath, code], code))
        for code, pretty in c.entries(body.get("resolutions"), rpath, "resolution", MAX_NAMES).items()
    )
    if found and trigger in UNATTENDED_TRIGGERS:
        c.fail(rpath, f"Resolutions are picked by the person executing an action; {name!r} is {trigger.upper()}.")
    return found


def _depends_on(
    c: SpecChecker, path: list[str], name: str, body: dict[str, Any]
) -> tuple[tuple[str, int, int | None], ...]:
    """Gating. A dependency of an action on itself only caps how often it runs (``max``; seed
    003): its ``min`` is 0, and a larger one could never be met."""
    depends = c.depends_on(body.get("depends_on"), [*path, "depends_on"])
    if not any(dep == name for dep, _, _ in depends):
        return depends
    limits = body["depends_on"][name]
    if isinstance(limits, dict) and limits.get("min"):
        c.fail(
            [*path, "depends_on", name, "min"],
            f"Action {name!r} depends on itself: that caps how often it runs (max); it takes no min.",
            code="GUARD_UNSATISFIABLE",
            hint="An action cannot have completed before it first runs: drop min, keep max.",
        )
    return tuple((dep, 0 if dep == name else low, high) for dep, low, high in depends)


def side_effects_of(
    c: SpecChecker, value: Any, path: list[str], owner: str
) -> tuple[tuple[str, ...], tuple[tuple[str, dict[str, Any]], ...]]:
    """``side_effects``: names of in-process side effects, and jobs (``{kind: {args}}``, or a bare
    kind name) that the outbox writes with each action. Every entry must be one or the other,
    with arguments its kind accepts."""
    if value is None:
        return (), ()
    if not isinstance(value, list) or len(value) > MAX_NAMES:
        c.fail(path, f"{c.where(path)} must be a list of at most {MAX_NAMES} side effects, not {kind(value)}.")
        return (), ()
    names: list[str] = []
    jobs: list[tuple[str, dict[str, Any]]] = []
    for entry in value:
        if isinstance(entry, str) and entry in c.known_side_effects:
            names.append(entry)
            continue
        if isinstance(entry, dict) and len(entry) == 1:
            job_kind, args = next(iter(entry.items()))
        elif isinstance(entry, str):
            job_kind, args = entry, {}
        else:
            c.fail(path, f"{c.where(path)} entries are a name or {{kind: {{arguments}}}}, not {kind(entry)}.")
            continue
        problems = c.check_job(job_kind, args)
        if problems is None:
            c.fail(path, f"{owner} names unknown side effect {job_kind!r}.")
            continue
        for problem in problems:
            c.fail(path, problem)
        if not problems:
            jobs.append((job_kind, dict(args)))
    return tuple(names), tuple(jobs)


def normalize(value: Any) -> Any:
    """Drop keys set to their default (and empty lists/objects), recursively, keeping key order."""
    if isinstance(value, dict):
        result = {}
        for key, item in value.items():
            item = normalize(item)
            if key in _DEFAULTS and item == _DEFAULTS[key]:
                continue
            if item in ([], {}) and key in _OPTIONAL_COLLECTIONS:
                continue
            result[key] = item
        return result
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value
