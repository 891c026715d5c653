"""Running due timers: one transaction per timer, each a unit of work published after its commit
(models/unit_of_work.py). Shared by the sweeper of every server process, the `runDueTimers`
mutation and `caseway run-due-timers`."""

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from engine.cases import lifecycle, timers
from engine.errors import DomainError
from engine.history.activity import LogEntry
from models import Database, unit_of_work
from server.reminder_runs import run_due_reminders

log = logging.getLogger("caseway.timers")


@dataclass
class TimerRun:
    fired: list[LogEntry] = field(default_factory=list)  # every entry of every firing (and resumption), in order
    failed: int = 0  # timers (and resumptions) postponed by timers.RETRY_AFTER
    more: bool = False  # the limit stopped the run while a timer was still due


async def run_due_timers(
    db: Database,
    *,
    now: datetime | None = None,
    clock: Callable[[], datetime] | None = None,
    limit: int,
    min_interval: float = timers.MIN_INTERVAL,
) -> TimerRun:
    """Fire up to ``limit`` timers due, oldest first, each in its own transaction. ``now`` is a
    fixed time (runDueTimers, the CLI: what is due then, fired as of then); ``clock`` is read
    afresh for each timer (the sweeper: a run goes on with the timers that fall due while it
    fires, each entry stamped with the time it really fired). A timer that fails is postponed
    (and the failure logged in its history) so the ones behind it still fire; a failure of the
    database itself propagates to the caller. ``min_interval``: the floor on how often one
    case's timers fire (CASEWAY_TIMER_MIN_INTERVAL, engine/cases/timers.py)."""
    if clock is None:
        assert now is not None, "run_due_timers needs now or clock"
        fixed = now
        clock = lambda: fixed  # noqa: E731 - the one time of the whole run
    run = TimerRun()
    # Read first, write only for what is due: a sweep that finds nothing (every poll, most
    # wake-ups) opens no write transaction, which on SQLite would take the one writer's lock.
    async with db.read_session() as session:
        ends = await lifecycle.next_suspension_end(session)
        any_due = await timers.is_due(session, now=clock())
    if ends is not None and ends <= clock():
        await _resume_due_suspensions(db, now=clock(), limit=limit, run=run)
        any_due = True  # a resumed case's overdue timers are due now
    reminded, run.more = await run_due_reminders(db, clock=clock, limit=limit)  # engine/cases/reminders.py
    run.fired += reminded
    if not any_due:
        return run
    for _ in range(limit):
        now = clock()
        claimed: str | None = None
        try:
            async with db.transaction() as session:
                firing = await timers.claim_due(session, now=now)
                if firing is None:
                    return run
                claimed = firing.enabled_action_id
                await timers.fire_claimed(session, firing, now=now, min_interval=min_interval)
        except Exception as error:
            if claimed is None:  # nothing claimed: the database itself failed
                raise
            await _postpone(db, claimed, now, error)
            run.failed += 1
            continue
        run.fired += firing.entries
    async with db.read_session() as session:
        run.more = await timers.is_due(session, now=clock()) or run.more
    return run


async def _resume_due_suspensions(db: Database, *, now: datetime, limit: int, run: TimerRun) -> None:
    """First the cases whose suspension ends by ``now`` (engine/cases/lifecycle.py), one transaction
    each: their overdue timers are then due like any other and fire in the same run. A case that
    fails to resume, whatever the error, is postponed by ``timers.RETRY_AFTER`` (the failure
    logged and written into its history), so the cases behind it resume and the timers fire; a
    failure of the database itself propagates to the caller."""
    for _ in range(limit):
        claimed: str | None = None
        try:
            async with db.transaction() as session:
                claimed = await lifecycle.claim_due_suspension(session, now=now)
                if claimed is None:
                    return
                await lifecycle.resume_claimed(session, case_id=claimed, now=now)
                committed = unit_of_work(session).entries
        except Exception as error:
            if claimed is None:  # nothing claimed: the database itself failed
                raise
            code, message = _failure(
                error, f"resuming case {claimed}", "The case could not resume because of an internal error."
            )
            async with db.transaction() as session:
                retry_at = now + timers.RETRY_AFTER
                await lifecycle.postpone_resumption(
                    session, case_id=claimed, now=now, retry_at=retry_at, code=code, message=message
                )
            run.failed += 1
            continue
        run.fired += committed


def _failure(error: Exception, about: str, internal: str) -> tuple[str, str]:
    """The code and sentence a failure leaves in the history: a refusal's own, or INTERNAL with
    ``internal`` (and the traceback in the log) for anything else."""
    if isinstance(error, DomainError):
        log.warning("%s was refused: %s", about, error.message)
        return str(error.code), error.message
    log.exception("%s failed", about, exc_info=error)
    return "INTERNAL", internal


async def _postpone(db: Database, instance_id: str, now: datetime, error: Exception) -> None:
    code, message = _failure(error, f"timer {instance_id}", "The timer could not fire because of an internal error.")
    async with db.transaction() as session:
        await timers.postpone(session, enabled_action_id=instance_id, now=now, code=code, message=message)
