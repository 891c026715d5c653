"""Running due reminders, escalations and due-date notices (engine/cases/reminders.py): one
transaction each, each a unit of work published after its commit. Part of every timer run: the
sweeper's, ``runDueTimers`` and ``caseway run-due-timers`` (server/timer_runs.py)."""

import logging
from collections.abc import Callable
from datetime import datetime

from engine.cases import reminders
from engine.history.activity import LogEntry
from models import Database, unit_of_work

log = logging.getLogger("caseway.reminders")


async def run_due_reminders(db: Database, *, clock: Callable[[], datetime], limit: int) -> tuple[list[LogEntry], bool]:
    """Fire up to ``limit`` reminders due, oldest first; their entries, and whether some are
    still due. One that fails is logged and tried again at the next run (its row is kept); the
    others go on."""
    fired: list[LogEntry] = []
    async with db.read_session() as session:
        due = await reminders.next_due(session)
    if due is None or due > clock():
        return fired, False
    failures = 0
    for _ in range(limit):
        try:
            async with db.transaction() as session:
                claimed = await reminders.claim_due(session, now=clock())
                if claimed is None:
                    return fired, False
                await reminders.fire_claimed(session, claimed, now=clock())
                committed = list(unit_of_work(session).entries)
        except Exception:
            log.exception("a reminder failed; it is tried again at the next run")
            failures += 1
            if failures >= 3:  # the same one again, most likely: leave it to the next run
                return fired, False
            continue
        fired += committed
    async with db.read_session() as session:
        due = await reminders.next_due(session)
    return fired, due is not None and due <= clock()
