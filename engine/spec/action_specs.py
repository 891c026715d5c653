"""The checks of one action of a workflow spec (``engine.spec.specs.parse`` walks the scopes and
hands each action here): its trigger, roles, states, outputs and the callbacks that pick them,
resolutions, gating, side effects and jobs, and the reminder and child-workflow keys their own
modules check.
"""

from typing import Any

from engine.people.permissions import WORKFLOW_ITEM_INTENTS
from engine.spec.child_specs import check_not_parent
from engine.spec.defaults import VALUES, names
from engine.spec.field_specs import action_fields
from engine.spec.reminder_specs import reminder_fields
from engine.spec.spec_checker import MAX_NAMES, MAX_TIMEOUT, SpecChecker, kind
from engine.spec.spec_model import TRIGGERS, UNATTENDED_TRIGGERS, ActionSpec, RoleSpec

__all__ = ["action", "side_effects_of"]


def action(
    c: SpecChecker,
    path: list[str],
    name: str,
    body: dict[str, Any],
    parent: str | None,
    roles: dict[str, RoleSpec],
    scope_states: set[str],
) -> ActionSpec:
    """The action ``name`` at ``path`` of a scope (``parent``: None at the top level), every
    problem reported on ``c``."""
    trigger = body.get("trigger", VALUES["trigger"])
    if not isinstance(trigger, str) or trigger not in TRIGGERS:
        c.fail([*path, "trigger"], f"{c.where([*path, 'trigger'])} must be one of {', '.join(TRIGGERS)}.")
        trigger = VALUES["trigger"]
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
    always = c.flag(body.get("always_enabled"), [*path, "always_enabled"], VALUES["always_enabled"])
    attach = c.flag(body.get("attach_documents"), [*path, "attach_documents"], VALUES["attach_documents"])
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
    named = c.pretty(body, path, name, ("pretty_name", "pretty_past_tense"))
    return ActionSpec(
        short_name=name,
        pretty_name=named["pretty_name"],
        pretty_past_tense=named["pretty_past_tense"],
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
        **action_fields(c, path, name, body, c.fields, scope_states),
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
        (code, _resolution_name(c, [*rpath, code], code, pretty))
        for code, pretty in c.entries(body.get("resolutions"), rpath, "resolution", MAX_NAMES).items()
    )
    if found and trigger in UNATTENDED_TRIGGERS:
        c.fail(rpath, f"Resolutions are picked by the person executing an action; {name!r} is {trigger.upper()}.")
    return found


def _resolution_name(c: SpecChecker, path: list[str], code: str, given: Any) -> str:
    """A resolution's pretty name (the value under its code), else its code: a pretty name's
    default (engine/spec/defaults.py) with the code as its short name."""
    return names(lambda key, default: c.text(given, path, default), code)["pretty_name"]


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
