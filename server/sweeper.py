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
import contextlib
import logging
import time
from datetime import datetime, timedelta

from engine.cases import lifecycle, timers
from engine.clock import SYSTEM_CLOCK, Clock
from engine.notify import digests, reminders
from models import Database, as_utc
from resolvers.delivery import run_digests
from server import metrics
from server.hub import EventHub
from server.shutdown import until_set
from server.timer_runs import run_due_timers

log = logging.getLogger("caseway.sweeper")

BATCH = 100  # timers fired per pass before the next one is looked up
BUSY_RETRY = 0.2  # seconds before trying again a due timer whose case was busy
MAX_BACKOFF = 30.0  # seconds, the longest pause after the database failed


class Sweeper:
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
        self._deadline: datetime | None = None  # when the next known timer falls due
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def task(self) -> "asyncio.Task[None] | None":
        return self._task

    def start(self) -> None:
        self.hub.on_timer = self.timer_written
        self._task = asyncio.create_task(self._run(), name="caseway-sweeper")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def timer_written(self, at: datetime) -> None:
        """A committed transaction wrote a timer due at ``at``: sleep no later than that."""
        if self._deadline is None or at < self._deadline:
            self._deadline = at
            self._wake.set()

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

    async def _run(self) -> None:
        last_sweep = -float("inf")
        backoff = 0.0
        while True:
            self._wake.clear()
            now = self.clock.now()
            if (self._deadline is not None and self._deadline <= now) or (
                time.monotonic() - last_sweep >= self.poll_interval
            ):
                self._deadline = None  # timers written from here on are remembered by timer_written
                try:
                    next_at = await self.sweep()
                    backoff = 0.0
                except Exception:
                    backoff = min(max(backoff * 2, 0.5), MAX_BACKOFF)
                    log.exception("sweeping timers failed; trying again in %.1f s", backoff)
                    next_at = self.clock.now() + timedelta(seconds=backoff)
                last_sweep = time.monotonic()
                if next_at is not None and (self._deadline is None or next_at < self._deadline):
                    self._deadline = next_at
                continue
            wait = self.poll_interval - (time.monotonic() - last_sweep)
            if self._deadline is not None:
                wait = min(wait, (self._deadline - now).total_seconds())
            await until_set(self._wake, max(wait, 0.0))
