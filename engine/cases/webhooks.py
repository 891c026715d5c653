"""The payloads of an action's webhook jobs, built in the action's transaction from what it
holds (engine/jobs/webhook_payload.py says why then, and what a payload is).

Each endpoint gets its own payload: the case fields it may see are those its configuration
names for the workflow (none by default), less those the case's top-level state hides after the
action, as the reads judge it for a reader who plays no role (hidden ≡ missing). The actor's
name costs one read, and only for an action that made a webhook job.
"""

from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from engine.cases.context import CaseContext
from engine.history.activity import LogEntry
from engine.jobs import webhook, webhook_payload
from engine.jobs.webhook_payload import Named
from engine.notify import sentences, wording
from engine.people.actors import SYSTEM, Actor
from engine.spec.specs import ActionSpec
from models import Job, User

SYSTEM_NAME = "The system"  # the actor of what no person did (a timer, an automatic action)


async def attach_payloads(
    ctx: CaseContext,
    jobs: Sequence[Job],
    entry: LogEntry,
    *,
    action: ActionSpec,
    actor: Actor,
    from_state: str | None,
    to_state: str | None,
    output: str | None,
    resolution: str | None,
    changes: dict[str, dict[str, Any]] | None,
) -> None:
    """Store each webhook job's payload in its input, which never changes after this."""
    hooks = [job for job in jobs if job.kind == webhook.WEBHOOK.name]
    if not hooks:
        return
    spec = ctx.spec
    top = ctx.states.get("")
    hidden = set(spec.states[top].hidden_fields) if top in spec.states else set()
    facts = webhook_payload.Facts(
        entry_id=entry.id,
        kind=entry.kind,
        at=entry.at,
        comment=entry.comment,
        project_id=ctx.item.project_id,
        subproject_id=ctx.subproject.id,
        subproject_name=ctx.subproject.display_name,
        item_id=ctx.item.id,
        item_name=ctx.item.display_name,
        item_path=sentences.path_to(ctx.item.id) or "",
        amount_type=ctx.item.amount_type,
        amount=money(ctx.item.amount, ctx.item.currency),
        case_id=ctx.case.id,
        workflow=Named(spec.short_name, spec.pretty_name),
        action=Named(action.short_name, action.pretty_name),
        past_tense=action.pretty_past_tense,
        output=output,
        resolution=_resolution(action, resolution),
        from_state=_state(ctx, from_state),
        to_state=_state(ctx, to_state),
        actor_id=actor.user_id,
        actor_login=actor.login,
        actor_name=await _actor_name(ctx, actor),
        fields={name: _shown(ctx, name, value) for name, value in (ctx.case.fields or {}).items()},
        changes={
            name: {"from": _shown(ctx, name, change.get("from")), "to": _shown(ctx, name, change.get("to"))}
            for name, change in (changes or {}).items()
        },
    )
    endpoints = webhook.configured()
    for job in hooks:
        endpoint = endpoints.get(str(job.input.get("endpoint")))
        allowed = endpoint.fields_of(spec.short_name) - hidden if endpoint is not None else frozenset()
        public_url = endpoint.public_url if endpoint is not None else None
        job.input = {**job.input, "payload": webhook_payload.build(facts, allowed=allowed, public_url=public_url)}


def money(amount: Any, currency: str | None) -> dict[str, Any] | None:
    """An amount as a payload carries it: a decimal string with at least its currency's minor
    units ("1450.50" EUR, "1450" JPY; never rounded), the currency, and the minor units (null for
    a code without, such as XAU: the amount as stored), as the sentences count them."""
    if amount is None or not currency:
        return None
    try:
        value = Decimal(str(amount))
    except InvalidOperation:
        return None
    units = wording.minor_units(currency)
    if units is not None and value.as_tuple().exponent > -units:  # type: ignore[operator]
        value = wording.with_places(value, units)
    return {"amount": f"{value:f}", "currency": currency, "minorUnits": units}


def _state(ctx: CaseContext, name: str | None) -> Named | None:
    state = ctx.spec.states.get(name) if name is not None else None
    return None if state is None else Named(state.short_name, state.pretty_name)


def _resolution(action: ActionSpec, code: str | None) -> Named | None:
    if code is None:
        return None
    return Named(code, next((pretty for known, pretty in action.resolutions if known == code), code))


async def _actor_name(ctx: CaseContext, actor: Actor) -> str:
    if actor.user_id == SYSTEM.user_id:
        return SYSTEM_NAME
    user = await ctx.session.get(User, actor.user_id)
    return user.display_name if user is not None else actor.login


def _shown(ctx: CaseContext, name: str, value: Any) -> Any:
    """A case field's value as a payload shows it: an amount with its currency's minor units."""
    declared = ctx.spec.fields.get(name)
    if declared is not None and declared.type == "money" and isinstance(value, dict):
        return money(value.get("amount"), value.get("currency"))
    return value


__all__ = ["attach_payloads", "money"]
