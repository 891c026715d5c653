"""The timer sweeper: a background task of every server process (docs/api.md, "Timers").

It sleeps until the next ``fire_at`` it knows of; a commit that writes an earlier timer wakes it
through the event hub (in-process, and with PostgreSQL by NOTIFY from other processes), carrying
the time, so a wake-up costs no query. It also sweeps every ``poll_interval`` seconds as a
safety net (a NOTIFY lost, a timer written by `caseway run-due-timers`). Its first sweep, at
startup, catches up with the timers that fell due while no server ran, oldest first, in the
background: the server answers meanwhile. Several processes sweep one PostgreSQL database at
once; each timer is claimed by one of them (engine/cases/timers.py).
"""

import asyncio
import logging
from datetime import datetime, timedelta

from engine.cases import lifecycle, reminders, timers
from engine.clock import SYSTEM_CLOCK, Clock
from engine.notify import digests
from models import Database, as_utc
from server import metrics
from server.digest_runs import run_digests
from server.hub import EventHub
from server.loop import Loop
from server.timer_runs import run_due_timers

log = logging.getLogger("caseway.sweeper")

BATCH = 100  # timers fired per pass before the next one is looked up
BUSY_RETRY = 0.2  # seconds before trying again a due timer whose case was busy


class Sweeper:
    """The timers' side of the one background loop (server/loop.py): its pass is ``sweep``."""

    def __init__(
        self,
        db: Database,
        hub: EventHub,
        *,
        poll_interval: float,
        clock: Clock = SYSTEM_CLOCK,
        min_interval: float = timers.MIN_INTERVAL,
    ) -> None:
        self.db = db
        self.min_interval = min_interval  # CASEWAY_TIMER_MIN_INTERVAL
        self.hub = hub
        self.clock = clock
        self.poll_interval = poll_interval
        self.fired = 0  # timers fired by this process (for logs and tests)
        self._loop = Loop("caseway-sweeper", self.sweep, poll_interval=poll_interval, clock=clock, log=log)

    @property
    def task(self) -> "asyncio.Task[None] | None":
        return self._loop.task

    def start(self) -> None:
        self.hub.on_timer = self.timer_written
        self._loop.start()

    async def stop(self) -> None:
        await self._loop.stop()

    def timer_written(self, at: datetime) -> None:
        """A committed transaction wrote a timer due at ``at``: sleep no later than that."""
        self._loop.wake(at)

    async def sweep(self) -> datetime | None:
        """Resume the cases whose suspension ended and fire what is due now; when the next timer
        or suspension falls due (None: neither)."""
        run = await run_due_timers(self.db, clock=self.clock.now, limit=BATCH, min_interval=self.min_interval)
        fired = [e for e in run.fired if "timer" in e.data]
        self.fired += len(fired)
        for entry in fired:  # lateness: from fireAt to the entry's commit
            metrics.timer_fired(as_utc(datetime.fromisoformat(entry.data["timer"]["fireAt"])), as_utc(entry.at))
        if run.more:
            return self.clock.now()  # the batch was full: go on at once
        await run_digests(self.db, clock=self.clock.now, limit=BATCH)  # close the digest windows that ended
        async with self.db.read_session() as session:
            ends = [await timers.next_fire_at(session), await lifecycle.next_suspension_end(session)]
            ends += [await reminders.next_due(session), await digests.next_due(session)]
        next_at = min((at for at in ends if at is not None), default=None)
        if next_at is not None and next_at <= self.clock.now():
            if run.fired:  # it fell due while this pass fired others: go on at once (bench T1)
                return self.clock.now()
            return self.clock.now() + timedelta(seconds=BUSY_RETRY)  # due, but its case was busy
        return next_at
