"""Every background part of a server process, with one owner that starts them and stops them.

Why one owner: parts started here and there were stopped here and there, and three of them
(the live connections' re-check, the document collector, the checkpoint signer) were cancelled
and never awaited, so a shutdown could end while they still ran. ``Background.start`` starts
each part; ``Background.stop`` stops each one, awaited and bounded (server/shutdown.py), the
producers of work first (re-check, collector, signer, sweeper, job runner), then the event hub
that wakes them. The publisher (server/publisher.py) is the database's from the server's creation
to its stop: every unit of work of this process reaches the hub and the metrics, once.
"""

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from datetime import datetime
from typing import Any

from models import Database
from server import metrics
from server.actor_cache import ActorCache
from server.checkpoints import checkpoint_forever
from server.digest_runs import DigestRun, run_digests
from server.documents import DocumentService, collect_forever
from server.history_archive import partition_forever
from server.hub import EventHub, create_hub
from server.job_runner import JobRunner
from server.publisher import Publisher
from server.settings import Settings
from server.shutdown import cancel_and_wait, stop_within
from server.sweeper import Sweeper
from server.timer_runs import TimerRun, run_due_timers


class Background:
    def __init__(
        self,
        db: Database,
        settings: Settings,
        *,
        actor_cache: ActorCache,
        documents: DocumentService,
        recheck: Callable[[], Coroutine[Any, Any, None]],
    ) -> None:
        self.db = db
        self.settings = settings
        self.documents = documents
        self._recheck = recheck
        self.hub: EventHub = create_hub(
            db, poll_interval=settings.hub_poll_interval, on_identity_change=actor_cache.clear
        )
        # From the server's creation (its requests' writes are published before it runs, as in
        # tests that never run it) until it stops; the newest server of a process takes over.
        self.publisher = db.publisher = Publisher(self.hub, on_identity_change=actor_cache.clear)
        self.sweeper = Sweeper(
            db, self.hub, poll_interval=settings.timer_poll_interval, min_interval=settings.timer_min_interval
        )
        self.job_runner = (
            JobRunner(db, self.hub, poll_interval=settings.job_poll_interval, concurrency=settings.job_concurrency)
            if settings.run_jobs
            else None
        )
        self._tasks: dict[str, asyncio.Task[None] | None] = {}

    async def start(self) -> None:
        settings = self.settings
        await self.hub.start()
        if settings.run_timers:
            self.sweeper.start()  # catches up with overdue timers in the background
        if self.job_runner is not None:
            self.job_runner.start()  # reconciles jobs a crash left RUNNING, then runs what is due
        self._tasks["recheck"] = asyncio.create_task(self._recheck(), name="caseway-recheck")
        if self.db.replicas is not None:  # the replicas' positions and lag (models/replicas.py)
            self._tasks["replicas"] = asyncio.create_task(
                self.db.replicas.run(self.db.engine, on_check=metrics.replicas_checked), name="caseway-replicas"
            )
        self._tasks["collector"] = asyncio.create_task(
            collect_forever(self.db, self.documents.store), name="caseway-collector"
        )
        if settings.secret_key:  # signed history checkpoints, only with a key (engine/history/history.py)
            self._tasks["signer"] = asyncio.create_task(
                checkpoint_forever(self.db, secret_key=settings.secret_key, interval=settings.checkpoint_interval),
                name="caseway-signer",
            )
        if self.db.engine.dialect.name == "postgresql":  # the log's next partitions (engine/history/partitions.py)
            self._tasks["partitioner"] = asyncio.create_task(partition_forever(self.db), name="caseway-partitioner")

    @property
    def tasks(self) -> dict[str, "asyncio.Task[None] | None"]:
        """Every background task by name (for /ready): None where a part does not run by design."""
        return {
            **self.hub.tasks,
            "recheck": self._tasks.get("recheck"),
            "collector": self._tasks.get("collector"),
            "signer": self._tasks.get("signer"),
            "replicas": self._tasks.get("replicas"),
            "partitioner": self._tasks.get("partitioner"),
            "sweeper": self.sweeper.task if self.settings.run_timers else None,
            "job_runner": self.job_runner.task if self.job_runner is not None else None,
        }

    async def stop(self) -> None:
        """Stop every part, each within ``shutdown.STOP_WITHIN``: one that does not stop in time is
        left behind, named in the log, and the others still stop."""
        for name, label in (
            ("recheck", "the live connections' re-check"),
            ("collector", "the document collector"),
            ("signer", "the checkpoint signer"),
            ("replicas", "the replica monitor"),
            ("partitioner", "the log's partitioner"),
        ):
            task = self._tasks.pop(name, None)
            if task is not None:
                await stop_within(label, lambda task=task: cancel_and_wait(task))  # type: ignore[misc]
        await stop_within("the timer sweeper", self.sweeper.stop)
        if self.job_runner is not None:
            await stop_within("the job runner", self.job_runner.stop)
        await stop_within("the event hub", self.hub.stop)
        if self.db.publisher is self.publisher:
            self.db.publisher = None

    async def run_due_timers(self, *, now: datetime, limit: int) -> TimerRun:
        """``runDueTimers``: what is due at ``now``, fired in this process (server/timer_runs.py)."""
        return await run_due_timers(self.db, now=now, limit=limit, min_interval=self.settings.timer_min_interval)

    async def run_digests(self, *, now: datetime, limit: int) -> DigestRun:
        """``runDigests``: the windows due at ``now``, closed in this process (server/digest_runs.py)."""
        return await run_digests(self.db, now=now, limit=limit)


@contextlib.asynccontextmanager
async def publishing(db: Database) -> AsyncIterator[EventHub]:
    """For a command that writes outside a server (``caseway run-due-timers``, ``run-jobs``): its
    units of work published through an event hub of its own, so that on PostgreSQL the servers'
    hubs, sweepers and job runners are woken by NOTIFY as by one of their own commits."""
    hub = create_hub(db)
    await hub.start()
    previous, db.publisher = db.publisher, Publisher(hub)
    try:
        yield hub
    finally:
        db.publisher = previous
        await stop_within("the event hub", hub.stop)
