"""The rules of a workflow at run time: an action's ``enabled_when`` and ``routes``, evaluated
inside the transaction of the change over the case's fields, its state and status and the actor,
and the log title an action declares (docs/workflows.md, "Fields and rules").

A rule that cannot be evaluated (a field without a value, a division by zero) refuses the change
with a sentence (CONDITION_FAILED), never an unexpected error: the transaction rolls back.
"""

from typing import Any

from engine.cases.case_fields import cel_values
from engine.cases.context import CaseContext
from engine.errors import DomainError, ErrorCode
from engine.people.actors import Actor
from engine.spec.field_specs import title_placeholders
from engine.spec.rules import ROOTS, Rule, RuleError, evaluate
from engine.spec.specs import ActionSpec

__all__ = ["enabled", "route", "title"]


def _activation(
    ctx: CaseContext, state: str, actor: Actor | None, reads: dict[str, frozenset[str]] | None
) -> dict[str, Any]:
    """What the conditions read (``reads``, their members by root, Rule.reads; None: all of it):
    converting every field of the case (and the actor's roles) for a rule that reads one amount
    was half of what evaluating a route cost."""
    values = ctx.case.fields or {}
    if reads is not None:
        values = {name: values[name] for name in reads["fields"] if name in values}
    activation = {
        "fields": cel_values(ctx.spec, values),
        "case": {"state": state, "status": ctx.case.status},
        "actor": {
            "id": actor.user_id if actor else "",
            "roles": sorted(ctx.roles_of(actor.party_ids))
            if actor and (reads is None or "roles" in reads["actor"])
            else [],
            "is_admin": bool(actor and actor.is_admin),
        },
    }
    if reads is None:
        return activation
    return {
        "fields": activation["fields"],
        "case": {key: value for key, value in activation["case"].items() if key in reads["case"]},
        "actor": {key: value for key, value in activation["actor"].items() if key in reads["actor"]},
    }


def _reads(rules: list[Rule]) -> dict[str, frozenset[str]] | None:
    """What any of ``rules`` reads (None when one of them may read anything)."""
    merged = dict.fromkeys(ROOTS, frozenset[str]())
    for rule in rules:
        if rule.reads is None:
            return None
        for root, names in rule.reads.items():
            merged[root] = merged[root] | names
    return merged


def _holds(rule: Rule, activation: dict[str, Any], what: str) -> bool:
    try:
        return evaluate(rule, activation)
    except RuleError as error:
        raise DomainError(ErrorCode.CONDITION_FAILED, f"{what} could not be decided: {error}.", ["fields"]) from None


def enabled(ctx: CaseContext, action: ActionSpec, state: str) -> bool:
    """Whether the action's ``enabled_when`` holds now (true when it has none). A condition that
    cannot be decided (it reads a field without a value) does not hold: it is asked for every
    action at every change, so refusing would block whatever action someone else ran (found by
    review: an optional field left empty refused an unrelated submit)."""
    if action.enabled_when is None:
        return True
    try:
        return evaluate(action.enabled_when, _activation(ctx, state, None, action.enabled_when.reads))
    except RuleError:
        return False


def route(ctx: CaseContext, action: ActionSpec, actor: Actor, state: str) -> tuple[str, int]:
    """The state the first route whose condition holds leads to, and its place (from 0); the last
    route has no condition."""
    activation = _activation(ctx, state, actor, _reads([r.when for r in action.routes if r.when is not None]))
    for place, candidate in enumerate(action.routes):
        if candidate.when is None or _holds(candidate.when, activation, f"Route {place + 1} of {action.pretty_name}"):
            return candidate.to, place
    raise AssertionError("the parser makes the last route a default")  # pragma: no cover


def title(
    ctx: CaseContext,
    action: ActionSpec,
    *,
    actor_name: str,
    state: str,
    resolution: str | None,
) -> str | None:
    """The action's ``log_title`` with its placeholders filled in (None when it has none)."""
    template = action.log_title
    if template is None:
        return None
    fields = ctx.case.fields or {}
    values = {
        "actor": actor_name,
        "item": ctx.item.display_name,
        "action": action.pretty_name,
        "state": ctx.spec.states[state].pretty_name if state in ctx.spec.states else state,
        "resolution": dict(action.resolutions).get(resolution or "", resolution or ""),
    }
    for placeholder in title_placeholders(template):
        if placeholder.startswith("fields."):
            values[placeholder] = _shown(fields.get(placeholder[7:]))
    text = template
    for placeholder in dict.fromkeys(title_placeholders(template)):
        text = text.replace("{" + placeholder + "}", values.get(placeholder, ""))
    return text or None  # an empty title is no title: both read roads then say the default sentence


def _shown(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, dict):  # an amount
        return f"{value['amount']} {value.get('currency') or ''}".strip()
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)
