"""The spec keys of parent actions (docs/workflows.md, "Child workflows"):
``children``, ``states``, ``for_each`` and ``complete_when``, validated into plain values.

``engine.spec.specs`` walks the scopes (each parent's ``states`` and ``children`` form a scope of
their own, validated like the top level); this module checks what only parents have, so that
each mistake is one precise INVALID_SPEC naming its key:

- ``workflow`` runs a child FSM: it needs ``states`` (and a terminal one, unless
  ``complete_when`` decides), its ``init`` child starts the scope.
- ``parallel`` enables all its children at once and keeps no state: no ``states``, no
  ``for_each``, no ``complete_when`` (a child that needs states is itself a ``workflow``).
- ``dynamic`` needs ``for_each`` (which role, how to map it to instances); with ``states`` each
  instance is a child scope, without them one instance per child action and party.
- ``complete_when`` (``{output: {state, at_least|more_than: n or "p/q" | all: true}}``) counts
  child scopes in a state, so its parent needs ``states``; each output must be declared in
  ``outputs``, and a parent with ``outputs`` needs ``complete_when`` to pick one.
"""

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from engine.spec.spec_checker import MAX_COUNT, MAX_NAMES, SpecChecker

PARENT_TRIGGERS = ("workflow", "parallel", "dynamic")
CHILD_KEYS = ("children", "states", "for_each", "complete_when")  # action keys of parents only
MAPPINGS = ("per_role", "per_member", "per_user")
_FOR_EACH_KEYS = {"role", "mapping"}
_CONDITION_KEYS = {"state", "at_least", "more_than", "all"}


@dataclass(frozen=True, slots=True)
class Condition:
    """One ``complete_when`` entry: the parent fires with ``output`` once enough child
    instances are in ``state`` (see ``engine.cases.quorum``). ``quota`` is a count (``whole``) or a
    fraction of all instances; ``strict`` is ``more_than``; ``every`` is ``all: true``."""

    output: str
    state: str
    quota: Fraction = Fraction(0)
    whole: bool = True
    strict: bool = False
    every: bool = False

    def describe(self) -> dict[str, Any]:
        """The condition as the log entry names it (as it was written in the spec)."""
        if self.every:
            return {"output": self.output, "state": self.state, "all": True}
        amount: int | str = int(self.quota) if self.whole else f"{self.quota.numerator}/{self.quota.denominator}"
        return {"output": self.output, "state": self.state, "more_than" if self.strict else "at_least": amount}


def check_not_parent(c: SpecChecker, path: list[str], name: str, body: dict[str, Any], trigger: str) -> None:
    """Children and their keys belong to workflow, parallel and dynamic actions only."""
    if trigger in PARENT_TRIGGERS:
        return
    for key in (k for k in CHILD_KEYS if k in body):
        c.fail(
            [*path, key],
            f"Action {name!r} has {key}, but it is a {trigger} action: only workflow, parallel and dynamic "
            "actions have children.",
        )


def parent_fields(
    c: SpecChecker, path: list[str], action: Any, body: dict[str, Any], roles: set[str], own_states: list[Any]
) -> dict[str, Any]:
    """The fields a parent ``action`` (an ActionSpec) gets from its keys, once its child scope
    (``own_states``, its children) was walked: its children, ``for_each``, ``complete_when``
    and whether it owns FSM scopes."""
    name = action.short_name
    for_each, conditions = check_parent(c, path, name, body, action.trigger, roles, action.outputs)
    check_terminal(c, path, name, body, any(s.terminal for s in own_states))
    children = body.get("children")
    return {
        "children": tuple(children) if isinstance(children, dict) else (),
        "for_each": for_each,
        "complete_when": conditions,
        "has_scope": bool(own_states) and action.trigger != "parallel",
    }


def check_parent(
    c: SpecChecker,
    path: list[str],
    name: str,
    body: dict[str, Any],
    trigger: str,
    roles: set[str],
    outputs: tuple[tuple[str, str], ...],
) -> tuple[tuple[tuple[str, str], ...], tuple[Condition, ...]]:
    """Check a parent's own keys; returns its ``for_each`` ((role, mapping), ...) and its
    ``complete_when`` conditions. The child scope itself (states, children) is checked by the
    scope walker in ``engine.spec.specs``."""
    if not c.mapping(body.get("children"), [*path, "children"]):
        c.fail(
            [*path, "children"],
            f"{trigger.capitalize()} action {name!r} needs children.",
            code="CHILD_WORKFLOW_MISSING",
            hint="Give it children (child actions), or another trigger if it has none to run.",
        )
    has_states = bool(body.get("states"))
    if trigger == "parallel" and "states" in body:
        c.fail(
            [*path, "states"],
            f"Parallel action {name!r} keeps no state: its children run side by side; "
            "give a child that needs states the trigger workflow.",
        )
    if trigger == "parallel" or not has_states:
        _check_side_by_side(c, path, name, body)
    for_each = _for_each(c, path, name, body, trigger, roles)
    conditions = _complete_when(c, path, name, body, has_states and trigger != "parallel")
    declared = {output for output, _ in outputs}
    for condition in conditions:
        if condition.output not in declared:
            c.fail(
                [*path, "complete_when", condition.output],
                f"complete_when of {name!r} names output {condition.output!r}, which its outputs do not declare.",
            )
    if outputs and not conditions:
        c.fail(
            [*path, "complete_when"],
            f"Action {name!r} has outputs but no complete_when: nothing would pick the output it fires with.",
        )
    return for_each, conditions


def check_terminal(c: SpecChecker, path: list[str], name: str, body: dict[str, Any], terminal: bool) -> None:
    """A child workflow that complete_when does not decide completes in a terminal state: it
    needs one, or its parent could never fire by itself."""
    if body.get("trigger") == "workflow" and body.get("states") and not terminal and "complete_when" not in body:
        c.fail(
            [*path, "states"],
            f"Child workflow {name!r} has no terminal state, so it could never complete; mark one terminal "
            "or add complete_when.",
            code="NO_PATH_TO_TERMINAL",
        )


def _check_side_by_side(c: SpecChecker, path: list[str], name: str, body: dict[str, Any]) -> None:
    """The children of a parent without states are enabled all at once, when it is: nothing
    enables one later, so gating them (or asking enable conditions) could never let one in."""
    for child, child_body in c.mapping(body.get("children"), [*path, "children"]).items():
        for key in ("depends_on", "enable_conditions"):
            if isinstance(child_body, dict) and child_body.get(key):
                c.fail(
                    [*path, "children", child, key],
                    f"{child!r} runs side by side with the other children of {name!r}, all enabled at once, so it "
                    f"cannot have {key}; give {name!r} states (or make {child!r} a workflow) to gate it.",
                )


def _for_each(
    c: SpecChecker, path: list[str], name: str, body: dict[str, Any], trigger: str, roles: set[str]
) -> tuple[tuple[str, str], ...]:
    """``{role, mapping}``, or a list of them (the cartesian product of their parties)."""
    fpath = [*path, "for_each"]
    raw = body.get("for_each")
    if trigger != "dynamic":
        if raw is not None:
            c.fail(fpath, f"Only a dynamic action has for_each; {name!r} is a {trigger} action.")
        return ()
    if raw is None:
        c.fail(fpath, f"Dynamic action {name!r} needs for_each: {{role, mapping: per_role|per_member|per_user}}.")
        return ()
    entries = raw if isinstance(raw, list) else [raw]
    if not entries or len(entries) > MAX_NAMES:
        c.fail(fpath, f"{c.where(fpath)} names 1 to {MAX_NAMES} roles.")
        return ()
    found: list[tuple[str, str]] = []
    for i, entry in enumerate(entries):
        epath = fpath if isinstance(raw, dict) else [*fpath, str(i)]
        entry = c.mapping(entry, epath)
        c.unknown_keys(entry, _FOR_EACH_KEYS, epath)
        role = c.name(entry.get("role"), [*epath, "role"], "a role name")
        mapping = entry.get("mapping", "per_role")
        if role is None:
            c.fail([*epath, "role"], f"for_each of {name!r} needs a role.")
        elif role not in roles:
            c.fail([*epath, "role"], f"for_each of {name!r} names unknown role {role!r}.")
        if mapping not in MAPPINGS:
            c.fail([*epath, "mapping"], f"{c.where([*epath, 'mapping'])} must be one of {', '.join(MAPPINGS)}.")
        elif role is not None:
            found.append((role, mapping))
    return tuple(found)


def _complete_when(
    c: SpecChecker, path: list[str], name: str, body: dict[str, Any], has_states: bool
) -> tuple[Condition, ...]:
    cpath = [*path, "complete_when"]
    if "complete_when" not in body:
        return ()
    if not has_states:
        c.fail(
            cpath,
            f"complete_when counts child scopes in a state, and {name!r} declares no states "
            "(a workflow action, or a dynamic one with states, has them).",
        )
        return ()
    scope_states = set(c.mapping(body.get("states"), [*path, "states"]))
    conditions = []
    for output, raw in c.entries(body.get("complete_when"), cpath, "output", MAX_NAMES).items():
        opath = [*cpath, output]
        raw = c.mapping(raw, opath)
        c.unknown_keys(raw, _CONDITION_KEYS, opath)
        state = c.name(raw.get("state"), [*opath, "state"], "a state name")
        if state is None:
            c.fail([*opath, "state"], f"Condition {output!r} of {name!r} needs the state it counts.")
            continue
        if state not in scope_states:
            c.fail([*opath, "state"], f"Condition {output!r} of {name!r} names unknown child state {state!r}.")
            continue
        given = [k for k in ("at_least", "more_than", "all") if k in raw]
        if len(given) != 1:
            c.fail(opath, f"Condition {output!r} of {name!r} needs exactly one of at_least, more_than, all.")
            continue
        key = given[0]
        if key == "all":
            if raw["all"] is not True:
                c.fail([*opath, "all"], f"{c.where([*opath, 'all'])} can only be true.")
                continue
            conditions.append(Condition(output=output, state=state, every=True))
            continue
        amount = _amount(c, [*opath, key], raw[key])
        if amount is not None:
            quota, whole = amount
            conditions.append(
                Condition(output=output, state=state, quota=quota, whole=whole, strict=key == "more_than")
            )
    return tuple(conditions)


def _amount(c: SpecChecker, path: list[str], value: Any) -> tuple[Fraction, bool] | None:
    """A count (whole number, 0 to MAX_COUNT) or a fraction "p/q" of all instances (0 <= p/q <= 1)."""
    if isinstance(value, str):
        parts = value.split("/")
        if len(parts) == 2 and all(p.strip().isdigit() and len(p.strip()) <= 6 for p in parts):
            p, q = (int(x) for x in parts)
            if q > 0 and p <= q:
                return Fraction(p, q), False
        c.fail(path, f'{c.where(path)} must be a count or a fraction "p/q" with 0 <= p <= q and q > 0.')
        return None
    count = c.whole(value, path, low=0, high=MAX_COUNT)
    return None if count is None else (Fraction(count), True)
