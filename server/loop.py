"""The one loop of the background parts that wait for work: the timer sweeper
(server/sweeper.py) and the job runner (server/job_runner.py).

Written once: a pass (``step``) runs when its deadline comes (the earliest time a pass said to
look again, or a wake-up: a commit that wrote a timer or a job, carried by the event hub) or
when ``poll_interval`` passed since the last one (the safety net: a NOTIFY lost, work written
by a command outside the server), and at once when the loop starts (catching up with what fell
due while no server ran). Between passes it sleeps until the sooner of the two. A pass that
fails (the database, most often) is logged and tried again after a back-off doubling from
0.5 s to ``MAX_BACKOFF``; a pass that succeeds resets it. What a pass does, and when work that
is due but busy elsewhere is looked at again, is the step's to say (its return value).
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from engine.clock import Clock
from server.shutdown import until_set

MAX_BACKOFF = 30.0  # seconds, the longest pause after a pass failed

Step = Callable[[], Awaitable[datetime | None]]  # one pass; when to look again (None: nothing known)


class Loop:
    def __init__(self, name: str, step: Step, *, poll_interval: float, clock: Clock, log: logging.Logger) -> None:
        self.name = name
        self.step = step
        self.poll_interval = poll_interval
        self.clock = clock
        self.log = log
        self._deadline: datetime | None = None  # when to run the next pass, at the latest
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def task(self) -> "asyncio.Task[None] | None":
        return self._task

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=self.name)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def wake(self, at: datetime | None = None) -> None:
        """Run a pass no later than ``at`` (None: now)."""
        at = self.clock.now() if at is None else at
        if self._deadline is None or at < self._deadline:
            self._deadline = at
            self._wake.set()

    async def _run(self) -> None:
        last_pass = -float("inf")  # the first pass at once
        backoff = 0.0
        while True:
            self._wake.clear()
            now = self.clock.now()
            if (self._deadline is not None and self._deadline <= now) or (
                time.monotonic() - last_pass >= self.poll_interval
            ):
                self._deadline = None  # wake-ups from here on are remembered by ``wake``
                try:
                    next_at = await self.step()
                    backoff = 0.0
                except Exception:
                    backoff = min(max(backoff * 2, 0.5), MAX_BACKOFF)
                    self.log.exception("%s failed; trying again in %.1f s", self.name, backoff)
                    next_at = self.clock.now() + timedelta(seconds=backoff)
                last_pass = time.monotonic()
                if next_at is not None and (self._deadline is None or next_at < self._deadline):
                    self._deadline = next_at
                continue
            wait = self.poll_interval - (time.monotonic() - last_pass)
            if self._deadline is not None:
                wait = min(wait, (self._deadline - now).total_seconds())
            await until_set(self._wake, max(wait, 0.0))


__all__ = ["MAX_BACKOFF", "Loop"]
