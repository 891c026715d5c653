"""Timers (docs/workflows.md, "Timers"): an enabled instance with a ``fire_at`` fires at that
time as the system actor, through the path a user's action takes (``transitions.fire``: log
entry, recompute, notifications). Its clock starts when the instance is enabled; disabled and
enabled again, it is a new instance with a new clock (``transitions.recompute``).

These verbs work inside the caller's transaction and never commit: firing is one transaction
per timer, which the caller opens (``server/timer_runs.py``, for the sweeper, the mutation and
the CLI alike), so a failing timer rolls back alone.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.cases.context import load_case, load_facts
from engine.cases.transitions import fire_as_system, run_automatic, timer_written, written_timer
from engine.errors import DomainError, ErrorCode
from engine.history import activity
from engine.people.actors import SYSTEM, Actor
from models import Case, EnabledAction, Subproject, WorkflowItem

# A timer whose firing failed is tried again this much later, so it does not hold up the others.
RETRY_AFTER = timedelta(seconds=60)
# The floor on how often one case's timers fire (CASEWAY_TIMER_MIN_INTERVAL; docs/workflows.md
# "Timers"): a timer enabled by a timer's firing falls due no sooner than this after it. A TIME
# action that leaves its case where it is enabled again fired every second, for ever, writing to
# the log each time (issue 47, finding 3).
MIN_INTERVAL = 60.0

_DUE = (EnabledAction.status == "ENABLED") & (EnabledAction.fire_at <= bindparam("now")) & (Case.status == "ACTIVE")

# The oldest due timer of an ACTIVE case (a suspended case's timers wait for its resumption),
# locked with its case, and read with the case's row, item and subproject (what load_case's own
# locking statement reads: one round trip less). SKIP LOCKED: several sweepers each take a
# different timer, and a case in the middle of a user's action is skipped rather than waited for
# (never a lock cycle with it: a user's transaction locks the case, then its instances). The
# locked rows are their newest versions (PostgreSQL re-reads a row it waited for), so the
# re-check in ``fire_claimed`` sees the case's status as of the lock. Timers due at the same
# instant fire in the index's order: a tie-break by id made PostgreSQL sort a batch of 33 due
# rows, each joined to its case, item and subproject, for every claim (213 buffers against 12).
# SQLite has one writer: no clause.
_CLAIM = (
    select(EnabledAction.id, Case, WorkflowItem, Subproject)
    .join(Case, Case.id == EnabledAction.case_id)
    .join(WorkflowItem, WorkflowItem.id == Case.object_id)
    .join(Subproject, Subproject.id == WorkflowItem.subproject_id)
    .where(_DUE)
    .order_by(EnabledAction.fire_at)  # as ix_enabled_action_fire_at reads: the first row, no sort
    .limit(1)
    .with_for_update(of=[EnabledAction.__table__, Case.__table__], skip_locked=True)
)
_NEXT = (
    select(func.min(EnabledAction.fire_at))
    .join(Case, Case.id == EnabledAction.case_id)
    .where(EnabledAction.status == "ENABLED", EnabledAction.fire_at.is_not(None), Case.status == "ACTIVE")
)


@dataclass
class Firing:
    """One claimed timer: its instance, its locked case (with item and subproject), and the log
    entries of what fired (the timer's own first, then the automatic actions and other due
    timers of its case that followed)."""

    enabled_action_id: str
    case: Case
    item: WorkflowItem
    subproject: Subproject
    entries: list[activity.LogEntry] = field(default_factory=list)

    @property
    def case_id(self) -> str:
        return self.case.id


async def claim_due(session: AsyncSession, *, now: datetime) -> Firing | None:
    """Claim the oldest timer due at ``now`` (locked with its case until the transaction ends);
    None when nothing is due, or every due timer's case is busy."""
    claimed = (await session.execute(_CLAIM, {"now": now})).first()
    if claimed is None:
        return None
    instance_id, case, item, subproject = claimed
    return Firing(enabled_action_id=instance_id, case=case, item=item, subproject=subproject)


async def fire_claimed(
    session: AsyncSession, firing: Firing, *, now: datetime, min_interval: float = MIN_INTERVAL
) -> Firing:
    """Fire a claimed timer, re-checked under its case's lock (still enabled, the case ACTIVE),
    then the automatic actions and other due timers of its case that follow. The case's states,
    roles, subscribers and instances are read after the claim, as ``load_case`` reads them
    after its lock. The timers this firing enabled fall due ``min_interval`` seconds from now
    at the soonest (``MIN_INTERVAL``)."""
    ctx = await load_facts(session, firing.case, firing.item, firing.subproject, lock=True, with_enabled=True)
    instance = next((ea for ea in ctx.enabled or () if ea.id == firing.enabled_action_id), None)
    if instance is None or ctx.case.status != "ACTIVE":  # changed since the claim (SQLite: cannot happen)
        return firing
    firing.entries.append(await fire_as_system(ctx, instance, now))
    firing.entries += await run_automatic(ctx, now)
    floor = now + timedelta(seconds=min_interval)
    for enabled in ctx.enabled or ():
        if enabled.status == "ENABLED" and enabled.enabled_at == now and enabled.fire_at is not None:
            if enabled.fire_at < floor:  # enabled by this firing: not again within the floor
                enabled.fire_at = floor
                timer_written(session, floor)
    return firing


async def postpone(session: AsyncSession, *, enabled_action_id: str, now: datetime, code: str, message: str) -> None:
    """A timer that could not fire (a rule refused it, or something broke) is tried again
    ``RETRY_AFTER`` later, and the refusal is written into its item's history."""
    instance = await session.get(EnabledAction, enabled_action_id, with_for_update=True)
    if instance is None or instance.status != "ENABLED":
        return
    ctx = await load_case(session, case_id=instance.case_id, lock=True)
    instance.fire_at = now + RETRY_AFTER
    timer_written(session, instance.fire_at)
    await activity.record(
        session,
        kind="timer_failed",
        actor_id=SYSTEM.user_id,
        about=ctx.item,
        case_id=ctx.case.id,
        action=instance.action,
        comment=message,
        data={"code": code, "enabledActionId": instance.id, "retryAt": instance.fire_at.isoformat()},
        at=now,
    )


async def next_fire_at(session: AsyncSession) -> datetime | None:
    """When the next timer of an ACTIVE case falls due (possibly already past)."""
    return await session.scalar(_NEXT)


async def is_due(session: AsyncSession, *, now: datetime) -> bool:
    """Whether some timer is due at ``now``."""
    query = select(EnabledAction.id).join(Case, Case.id == EnabledAction.case_id).where(_DUE).limit(1)
    found = await session.scalar(query, {"now": now})
    return found is not None


MAX_RUN = 1000  # timers one runDueTimers call may fire


def check_run(actor: Actor, *, limit: int) -> None:
    """Firing timers on demand (tests, operations) is for admins; ``limit`` bounds the work."""
    if not actor.is_admin:
        raise DomainError(ErrorCode.NOT_ALLOWED, "Only an admin may run due timers.")
    if not 1 <= limit <= MAX_RUN:
        raise DomainError(ErrorCode.INVALID_INPUT, f"limit must be between 1 and {MAX_RUN}.", ["limit"])


__all__ = [
    "MAX_RUN",
    "MIN_INTERVAL",
    "RETRY_AFTER",
    "Firing",
    "check_run",
    "claim_due",
    "fire_claimed",
    "is_due",
    "next_fire_at",
    "postpone",
    "written_timer",
]
