"""A case's own lifecycle: suspend, resume, cancel (docs/api.md, "Case lifecycle").

A case is ACTIVE, COMPLETED (its top-level state is terminal; an action may reopen it),
SUSPENDED (nothing runs until it is resumed, by hand or at ``suspended_until``) or CANCELED
(final: nothing runs, nothing reopens it). The transitions:

- ``suspend_case``: ACTIVE -> SUSPENDED, optionally until a time within a year. The case's
  enabled instances stay ENABLED, timers included: they are what the case resumes with, and a
  timer that fell due meanwhile fires once the case is ACTIVE again (the timer sweep claims
  ACTIVE cases only).
- ``resume_case``: SUSPENDED -> ACTIVE, or COMPLETED if its top-level state is terminal (it
  cannot be today: only an ACTIVE case is suspended, and no action moves a suspended one; the
  rule is the same as after an action, so it stays right whatever changes that).
- ``cancel_case``: ACTIVE or SUSPENDED -> CANCELED. Its enabled instances become CANCELED, so
  no task list shows them and no timer fires them. A COMPLETED case is not canceled: it is
  already closed, and canceling it would rewrite how it ended.

Who may: ``workflowItem.update`` on the case's item (admins hold every intent). It is the
intent that already governs changing the item, and suspending or canceling is a change of the
item as a whole, not a step of its workflow, so a role in the case is not enough. Someone who
may not even see the item is told the case does not exist (``case_not_found``, hidden ≡ missing).

Each change locks the case row, bumps ``version`` (``expected_version`` is checked as by
``engine.cases.execute``), writes its own log entry (``case_suspended``, ``case_resumed``,
``case_canceled``; the comment, and ``until``/``from``/``to`` in data) and the notifications of
that entry; the caller publishes the entries after its commit, like every other entry.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine import validation
from engine.cases.context import CaseContext, case_not_found, load_case
from engine.cases.transitions import assigned_parties, set_status_for_state, timer_written
from engine.clock import SYSTEM_CLOCK
from engine.errors import DomainError, ErrorCode
from engine.history import activity, visits
from engine.history.activity import LogEntry
from engine.notify import notifications
from engine.people import permissions
from engine.people.actors import SYSTEM, Actor
from models import Case, as_utc

MAX_SUSPENSION = timedelta(days=365)
INTENT = "workflowItem.update"


@dataclass
class LifecycleResult:
    case: Case
    activity: LogEntry


async def suspend_case(
    session: AsyncSession,
    *,
    actor: Actor,
    case_id: str | None = None,
    workflow_item_id: str | None = None,
    until: datetime | None = None,
    comment: str | None = None,
    expected_version: int | None = None,
    now: datetime | None = None,
) -> LifecycleResult:
    """Suspend an ACTIVE case, indefinitely or until ``until`` (later than now, at most a year
    ahead), when ``resume_due_suspensions`` resumes it."""
    now = now or SYSTEM_CLOCK.now()
    until = _check_until(until, now)
    ctx = await _lock(session, actor, case_id, workflow_item_id, comment, expected_version)
    status = ctx.case.status
    if status != "ACTIVE":
        reason = {
            "SUSPENDED": "is already suspended; resume it first",
            "COMPLETED": "is completed; only an active case can be suspended",
            "CANCELED": "is canceled, which is final",
        }[status]
        raise DomainError(ErrorCode.CASE_NOT_ACTIVE, f"The case {reason}.")
    ctx.case.status, ctx.case.suspended_until = "SUSPENDED", until
    visits.suspended(session, case_id=ctx.case.id, at=now)
    if until is not None:  # the sweepers wake up then to resume it, as for a timer due then
        timer_written(session, until)
    data = {"from": status, "to": "SUSPENDED", "until": until.isoformat() if until else None}
    return await _record(ctx, "case_suspended", actor, comment, data, now, assigned=set())


async def resume_case(
    session: AsyncSession,
    *,
    actor: Actor,
    case_id: str | None = None,
    workflow_item_id: str | None = None,
    comment: str | None = None,
    expected_version: int | None = None,
    now: datetime | None = None,
) -> LifecycleResult:
    """Resume a SUSPENDED case before its time (or one suspended indefinitely). Its assignees
    hear of it (level ASSIGNED): their work can go on."""
    now = now or SYSTEM_CLOCK.now()
    ctx = await _lock(session, actor, case_id, workflow_item_id, comment, expected_version, with_enabled=True)
    return await _resume(ctx, actor, comment, now)


async def cancel_case(
    session: AsyncSession,
    *,
    actor: Actor,
    case_id: str | None = None,
    workflow_item_id: str | None = None,
    comment: str | None = None,
    expected_version: int | None = None,
    now: datetime | None = None,
) -> LifecycleResult:
    """Cancel an ACTIVE or SUSPENDED case, for good: its enabled instances are canceled and no
    action, resume or suspend applies to it again."""
    now = now or SYSTEM_CLOCK.now()
    ctx = await _lock(session, actor, case_id, workflow_item_id, comment, expected_version, with_enabled=True)
    status = ctx.case.status
    if status not in ("ACTIVE", "SUSPENDED"):
        reason = "is already canceled" if status == "CANCELED" else "is completed; only an open case can be canceled"
        raise DomainError(ErrorCode.CASE_NOT_ACTIVE, f"The case {reason}.")
    canceled = sorted({instance.action for instance in ctx.enabled or ()})
    for instance in ctx.enabled or ():
        instance.status, instance.completed_at = "CANCELED", now
    ctx.case.status, ctx.case.suspended_until = "CANCELED", None
    visits.canceled(session, case_id=ctx.case.id, at=now, was_suspended=status == "SUSPENDED")
    data = {"from": status, "to": "CANCELED", "canceled": canceled}
    return await _record(ctx, "case_canceled", actor, comment, data, now, assigned=set())


# The sweeper's side: SUSPENDED cases whose time has come, oldest first.
_DUE = (
    select(Case.id)
    .where(Case.status == "SUSPENDED", Case.suspended_until.is_not(None))
    .order_by(Case.suspended_until, Case.id)
)


async def resume_due_suspensions(session: AsyncSession, *, now: datetime, limit: int = 1) -> list[Case]:
    """Resume, as the system actor, up to ``limit`` cases whose ``suspended_until`` is at or
    before ``now``; returns them (empty when none is due).

    The caller owns the transaction, as everywhere in the engine: a sweeper calls this with
    ``limit=1`` in a transaction of its own per case, until it returns nothing, so one case's
    failure rolls back that case alone. On PostgreSQL the due rows are claimed with
    ``FOR UPDATE SKIP LOCKED``: several processes sweep at once and each case is resumed once
    (a row another transaction resumed meanwhile is re-checked under the lock and skipped)."""
    if limit < 1:
        raise validation.invalid("limit must be at least 1.", "limit")
    resumed = []
    for case_id in (await session.scalars(_claim(session, now, limit))).all():
        case = await resume_claimed(session, case_id=case_id, now=now)
        if case is not None:
            resumed.append(case)
    return resumed


def _claim(session: AsyncSession, now: datetime, limit: int) -> Select:
    query = _DUE.where(Case.suspended_until <= now).limit(limit)
    if session.bind.dialect.name == "postgresql":
        query = query.with_for_update(skip_locked=True)
    return query


async def claim_due_suspension(session: AsyncSession, *, now: datetime) -> str | None:
    """The id of the oldest case whose suspension has ended by ``now``, locked (SKIP LOCKED on
    PostgreSQL), or None. A sweeper claims, then resumes with ``resume_claimed`` in the same
    transaction: when the resumption fails it knows which case failed, and postpones that one
    alone (``postpone_resumption``) instead of meeting it first again on every run."""
    return await session.scalar(_claim(session, now, 1))


async def resume_claimed(session: AsyncSession, *, case_id: str, now: datetime) -> Case | None:
    """Resume a claimed case as the system actor; None when a transaction that committed before
    the lock resumed it (or suspended it anew) already."""
    ctx = await load_case(session, case_id=case_id, lock=True, with_enabled=True)
    if ctx.case.status != "SUSPENDED" or ctx.case.suspended_until is None or ctx.case.suspended_until > now:
        return None
    await _resume(ctx, SYSTEM, None, now)
    return ctx.case


async def postpone_resumption(
    session: AsyncSession, *, case_id: str, now: datetime, retry_at: datetime, code: str, message: str
) -> None:
    """A case that could not be resumed (a rule refused, or something broke) is tried again at
    ``retry_at``: its ``suspended_until`` moves there, so the cases due behind it resume and the
    timers due fire in the meantime; the failure is written into its item's history, as a
    timer's is."""
    ctx = await load_case(session, case_id=case_id, lock=True)
    if ctx.case.status != "SUSPENDED" or ctx.case.suspended_until is None:
        return
    ctx.case.suspended_until = retry_at
    timer_written(session, retry_at)
    await activity.record(
        session,
        kind="timer_failed",
        actor_id=SYSTEM.user_id,
        about=ctx.item,
        case_id=ctx.case.id,
        comment=message,
        data={"code": code, "resumption": True, "retryAt": retry_at.isoformat()},
        at=now,
    )


async def next_suspension_end(session: AsyncSession) -> datetime | None:
    """The earliest ``suspended_until`` of a SUSPENDED case: when a sweeper must next wake up."""
    return await session.scalar(
        select(func.min(Case.suspended_until)).where(Case.status == "SUSPENDED", Case.suspended_until.is_not(None))
    )


async def _resume(ctx: CaseContext, actor: Actor, comment: str | None, now: datetime) -> LifecycleResult:
    status = ctx.case.status
    if status != "SUSPENDED":
        if status == "CANCELED":
            raise DomainError(ErrorCode.CASE_NOT_ACTIVE, "The case is canceled, which is final; it cannot be resumed.")
        raise DomainError(ErrorCode.CASE_NOT_SUSPENDED, f"The case is {status.lower()}, not suspended.")
    until = ctx.case.suspended_until
    ctx.case.status, ctx.case.suspended_until = "ACTIVE", None
    visits.resumed(ctx.session, case_id=ctx.case.id, at=now)
    set_status_for_state(ctx)  # COMPLETED when its state is terminal, as after an action
    if any(instance.fire_at is not None and instance.fire_at <= now for instance in ctx.enabled or ()):
        timer_written(ctx.session, now)  # its overdue timers fire now, not at the next poll
    data = {"from": status, "to": ctx.case.status, "until": until.isoformat() if until else None}
    assigned = assigned_parties(ctx, ctx.enabled or ())
    return await _record(ctx, "case_resumed", actor, comment, data, now, assigned=assigned)


def _check_until(until: datetime | None, now: datetime) -> datetime | None:
    """``until`` as an aware UTC instant (naive means UTC, as everywhere), later than ``now``
    and at most ``MAX_SUSPENSION`` ahead."""
    if until is None:
        return None
    try:
        until = as_utc(until)
    except OverflowError:
        raise validation.invalid("until is outside the years 1 to 9999 in UTC.", "until") from None
    if until <= now:
        raise validation.invalid("until must be later than now; leave it out to suspend indefinitely.", "until")
    if until - now > MAX_SUSPENSION:
        raise validation.invalid("until is more than a year ahead; leave it out to suspend indefinitely.", "until")
    return until


async def _lock(
    session: AsyncSession,
    actor: Actor,
    case_id: str | None,
    workflow_item_id: str | None,
    comment: str | None,
    expected_version: int | None,
    *,
    with_enabled: bool = False,
) -> CaseContext:
    """Check the input, lock the case and check the actor may change it, in that order: a hidden
    case is refused exactly as a missing one."""
    if (case_id is None) == (workflow_item_id is None):
        raise validation.invalid("Give exactly one of caseId and workflowItemId.", "caseId")
    if comment is not None:
        validation.optional_text(comment, "comment", max_len=validation.MAX_COMMENT)
    ctx = await load_case(
        session, case_id=case_id, workflow_item_id=workflow_item_id, lock=True, with_enabled=with_enabled
    )
    held = await permissions.held_intents(session, actor=actor, resource_id=ctx.item.id)
    if INTENT not in held:
        if "workflowItem.view" not in held and not ctx.roles_of(actor.party_ids):
            raise case_not_found(case_id=case_id, workflow_item_id=workflow_item_id)
        raise DomainError(
            ErrorCode.NOT_ALLOWED,
            f"You may not do {INTENT} on this workflow item.",
            ["caseId" if case_id is not None else "workflowItemId"],
        )
    if expected_version is not None and expected_version != ctx.case.version:
        raise DomainError(
            ErrorCode.VERSION_CONFLICT,
            f"The case is at version {ctx.case.version}, not {expected_version}; reload and retry.",
            ["expectedVersion"],
        )
    return ctx


async def _record(
    ctx: CaseContext,
    kind: str,
    actor: Actor,
    comment: str | None,
    data: dict[str, object],
    now: datetime,
    *,
    assigned: set[str],
) -> LifecycleResult:
    ctx.case.version += 1
    entry = await activity.record(
        ctx.session,
        kind=kind,
        actor_id=actor.user_id,
        about=ctx.item,
        case_id=ctx.case.id,
        comment=comment,
        data=data,
        at=now,
    )
    await notifications.notify(ctx, entry, assigned_parties=assigned)
    await ctx.session.flush()
    return LifecycleResult(case=ctx.case, activity=entry)


__all__ = [
    "MAX_SUSPENSION",
    "LifecycleResult",
    "cancel_case",
    "claim_due_suspension",
    "next_suspension_end",
    "postpone_resumption",
    "resume_case",
    "resume_claimed",
    "resume_due_suspensions",
    "suspend_case",
]
