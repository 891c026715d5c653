"""Closing the digest windows that are due: each window's message becomes an email job, ``BATCH``
windows per transaction, each a unit of work published after its commit. Shared, as the timer
runs are (server/timer_runs.py), by the sweeper of every server process, the ``runDigests``
mutation (through ``Background.run_digests``) and ``caseway run-digests``."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from engine.notify import digests
from models import Database

BATCH = 50  # windows closed per transaction


@dataclass
class DigestRun:
    jobs: int = 0  # digest messages queued
    empty: int = 0  # windows closed with nothing to send
    more: bool = False  # the limit stopped the run while a window was still due


async def run_digests(
    db: Database, *, now: datetime | None = None, clock: Callable[[], datetime] | None = None, limit: int
) -> DigestRun:
    """Close the digest windows due at ``now`` (or the clock's time, read per batch), up to
    ``limit``, ``BATCH`` per transaction; each window's message is a job the runner sends (woken
    when the transaction's unit of work is published)."""
    result = DigestRun()
    async with db.read_session() as session:
        due = await digests.next_due(session)
    at = now if now is not None else clock()  # type: ignore[misc]
    if due is None or due > at:
        return result
    while result.jobs + result.empty < limit:
        at = now if now is not None else clock()  # type: ignore[misc]
        async with db.transaction() as session:
            made = await digests.make_due(session, now=at, limit=min(BATCH, limit - result.jobs - result.empty))
        result.jobs += made.jobs
        result.empty += made.empty
        if made.jobs + made.empty == 0:
            return result
    async with db.read_session() as session:
        due = await digests.next_due(session)
    result.more = due is not None and due <= at
    return result
