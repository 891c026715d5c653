"""The event hub: follows the activity table and fans new entries out to live subscribers.

Publishing only says "look again": subscribers are fed from rows read back by ``seq`` (which
is commit order, see engine/history/activity.py), so nothing published can be lost or reordered, a
rolled-back transaction publishes nothing, and the table refills any gap after a reconnect.
One read per wake-up serves every subscriber of this process; a process without subscribers
reads nothing (it catches up with the table when its next subscriber arrives).

- ``EventHub``: one server process (the SQLite default). Wakes on local commits.
- ``PostgresEventHub``: several processes on one database. Each keeps one LISTEN connection
  as a wake-up; commits send a NOTIFY afterwards, coalesced so that a burst of commits costs
  one NOTIFY, never one inside each write transaction. The same connection hears the
  database's triggers say that who a token stands for changed (``IDENTITY_CHANNEL``,
  migration 0006), for the server's remembered actors (server/actor_cache.py).
"""

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import asyncpg
from sqlalchemy import func, select

from engine.history.activity import LogEntry
from engine.notify.events import Event, Subscriber, audiences
from models import Activity, Database, Notification
from resolvers.live import read_shared
from server import metrics
from server.shutdown import until_set

log = logging.getLogger("caseway.hub")
CHANNEL = "caseway_activity"
IDENTITY_CHANNEL = "caseway_identity"
TIMER_CHANNEL = "caseway_timers"  # payload: the ISO time of a timer just written (server/sweeper.py)
JOB_CHANNEL = "caseway_jobs"  # jobs were written or made due (server/job_runner.py)
_NEWEST_SEQ = select(func.max(Activity.seq))


class EventHub:
    def __init__(
        self,
        db: Database,
        *,
        poll_interval: float = 5.0,
        batch_size: int = 500,
        queue_size: int = 10_000,
        on_identity_change: Callable[[], None] | None = None,
    ) -> None:
        self.db = db
        # Called when another process may have changed who a token stands for (PostgreSQL only:
        # this process's own changes are handled by whoever commits them).
        self.on_identity_change = on_identity_change or (lambda: None)
        self.poll_interval = poll_interval
        self.batch_size = batch_size
        self.queue_size = queue_size
        self.last_seq = 0
        # True when entries may have committed past ``last_seq`` while nobody was subscribed
        # (from the start: the first subscriber reads where the log is).
        self._behind = True
        self._subscribers: set[Subscriber] = set()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # Told when a committed transaction wrote a timer, in this process or (PostgreSQL) another
        # one: the process's sweeper (server/sweeper.py) sets it.
        self.on_timer: Callable[[datetime], None] = lambda at: None
        # Told when a committed transaction wrote jobs or made one due: the job runner sets it.
        # It answers whether this process's runner takes them (it runs and has a free slot);
        # if not, the other processes are told (PostgreSQL).
        self.on_jobs: Callable[[], bool] = lambda: False

    async def start(self) -> None:
        self._task = asyncio.create_task(self._follow(), name="caseway-hub")

    def timer_written(self, at: datetime) -> None:
        """Called after a commit that wrote a timer falling due at ``at``."""
        self.on_timer(at)

    def jobs_written(self) -> None:
        """Called after a commit that wrote jobs (or made one due now)."""
        self.on_jobs()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def publish(self, entries: Sequence[LogEntry]) -> None:
        """Called after a commit: look at the table again."""
        self._wake.set()

    async def subscribe(self, *, notifications_for: str | None = None) -> Subscriber:
        """Register, then the caller replays up to ``start_seq`` from the table: nothing falls
        between. A hub that went without subscribers first moves to the newest entry, so a new
        subscriber does not receive what committed while nobody listened as live."""
        if self._behind:
            async with self.db.reader.connect() as connection:
                newest = (await connection.execute(_NEWEST_SEQ)).scalar() or 0
            if self._behind:  # unless a subscriber that came meanwhile moved it already
                self.last_seq, self._behind = max(self.last_seq, newest), False
                self._wake.set()  # what committed during the read may have woken nobody
        subscriber = Subscriber(
            start_seq=self.last_seq, wants_notifications_for=notifications_for, maxsize=self.queue_size
        )
        self._subscribers.add(subscriber)
        metrics.SUBSCRIBERS.inc()
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        if subscriber in self._subscribers:
            self._subscribers.discard(subscriber)
            metrics.SUBSCRIBERS.dec()

    @property
    def tasks(self) -> "dict[str, asyncio.Task[None] | None]":
        """The hub's background tasks, by name (for /ready)."""
        return {"hub": self._task}

    @property
    def subscriber_count(self) -> int:
        return len(self._subscribers)

    async def _follow(self) -> None:
        while True:
            await until_set(self._wake, self.poll_interval)
            self._wake.clear()
            try:
                await self.catch_up()
            except Exception:  # a failed read is retried on the next wake-up or poll
                log.exception("event hub: reading the activity log failed")
                await asyncio.sleep(0.5)

    async def catch_up(self) -> None:
        """Read everything past ``last_seq`` and hand it to the subscribers, in seq order."""
        while True:
            if not self._subscribers:
                # Nobody to feed: read nothing (with several processes, every commit wakes
                # every process). The next subscriber moves ``last_seq`` to the newest entry.
                self._behind = True
                return
            async with self.db.read_session() as session:
                entries = list(
                    (
                        await session.scalars(
                            select(Activity)
                            .where(Activity.seq > self.last_seq)
                            .order_by(Activity.seq)
                            .limit(self.batch_size)
                        )
                    ).all()
                )
                if not entries:
                    return
                if not self._subscribers:
                    self.last_seq = entries[-1].seq or self.last_seq
                    continue
                audience = await audiences(session, entries)
                shared = None
                if any(s.wants_notifications_for is None for s in self._subscribers):  # activity streams
                    shared = await read_shared(session, entries)
                notes: dict[str, list[Notification]] = {}
                if any(s.wants_notifications_for for s in self._subscribers):
                    for note in await session.scalars(
                        select(Notification)
                        .where(Notification.activity_id.in_([e.id for e in entries]), Notification.in_app)
                        .order_by(Notification.id)
                    ):
                        notes.setdefault(note.activity_id, []).append(note)
            for entry in entries:
                event = Event(entry, audience[entry.id], tuple(notes.get(entry.id, ())), shared)
                for subscriber in list(self._subscribers):
                    subscriber.offer(event)
                self.last_seq = entry.seq or self.last_seq
            metrics.hub_delivered(entries[0].at)  # the oldest of the batch waited longest


class PostgresEventHub(EventHub):
    def __init__(self, db: Database, *, dsn: str, notify_delay: float = 0.002, **kwargs: Any) -> None:
        super().__init__(db, **kwargs)
        self.dsn = dsn
        self.notify_delay = notify_delay
        self._conn: asyncpg.Connection | None = None
        self._notify_wanted = False
        self._timer_wanted: datetime | None = None  # the earliest timer to announce to other processes
        self._jobs_wanted = False
        self._notifier: asyncio.Task[None] | None = None
        self._listener_task: asyncio.Task[None] | None = None
        self.reconnects = 0

    async def start(self) -> None:
        await super().start()
        await self._connect()
        self._listener_task = asyncio.create_task(self._watch_connection(), name="caseway-hub-listen")

    @property
    def tasks(self) -> "dict[str, asyncio.Task[None] | None]":
        return {**super().tasks, "hub_listener": self._listener_task}

    async def stop(self) -> None:
        if self._listener_task is not None:
            self._listener_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener_task
        if self._notifier is not None:
            await asyncio.gather(self._notifier, return_exceptions=True)
        if self._conn is not None and not self._conn.is_closed():
            await self._conn.close()
        await super().stop()

    async def _connect(self) -> None:
        self._conn = await asyncpg.connect(self.dsn, server_settings={"application_name": "caseway-hub"})
        await self._conn.add_listener(CHANNEL, lambda *_: self._wake.set())
        await self._conn.add_listener(IDENTITY_CHANNEL, lambda *_: self.on_identity_change())
        await self._conn.add_listener(TIMER_CHANNEL, self._heard_timer)
        await self._conn.add_listener(JOB_CHANNEL, lambda *_: self.on_jobs())
        self._wake.set()  # refill whatever committed while we were not listening
        self.on_identity_change()  # and forget who tokens stood for: a change may have been missed

    async def _watch_connection(self) -> None:
        """Reconnect the LISTEN connection when it drops, with backoff."""
        delay = 0.1
        while True:
            await asyncio.sleep(0.5)
            if self._conn is not None and not self._conn.is_closed():
                delay = 0.1
                continue
            try:
                await self._connect()
                self.reconnects += 1
                log.warning("event hub: LISTEN connection re-established")
            except (OSError, asyncpg.PostgresError):
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def publish(self, entries: Sequence[LogEntry]) -> None:
        self._wake.set()  # local subscribers need no round trip
        self._notify_wanted = True
        if self._notifier is None or self._notifier.done():
            self._notifier = asyncio.create_task(self._send_notifies(), name="caseway-hub-notify")

    def timer_written(self, at: datetime) -> None:
        self.on_timer(at)  # this process's sweeper needs no round trip
        if self._timer_wanted is None or at < self._timer_wanted:
            self._timer_wanted = at
        if self._notifier is None or self._notifier.done():
            self._notifier = asyncio.create_task(self._send_notifies(), name="caseway-hub-notify")

    def jobs_written(self) -> None:
        if self.on_jobs():
            # This process's runner claims them now: waking every other process for each job
            # cost each of them a claim and a look for the next due job that found nothing
            # (bench J1). Jobs it cannot take at once stay due: its next claim after a slot
            # frees, or another process's poll, finds them.
            return
        self._jobs_wanted = True
        if self._notifier is None or self._notifier.done():
            self._notifier = asyncio.create_task(self._send_notifies(), name="caseway-hub-notify")

    def _heard_timer(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        with contextlib.suppress(ValueError):
            self.on_timer(datetime.fromisoformat(payload))

    async def _send_notifies(self) -> None:
        """One NOTIFY at a time on the shared connection (asyncpg runs one operation per
        connection); commits that land while one is in flight are covered by the next."""
        while self._notify_wanted or self._timer_wanted is not None or self._jobs_wanted:
            await asyncio.sleep(self.notify_delay)
            wanted, timer, jobs = self._notify_wanted, self._timer_wanted, self._jobs_wanted
            self._notify_wanted, self._timer_wanted, self._jobs_wanted = False, None, False
            try:
                if self._conn is not None and not self._conn.is_closed():
                    if wanted:
                        await self._conn.execute(f"NOTIFY {CHANNEL}")
                    if timer is not None:
                        await self._conn.execute("SELECT pg_notify($1, $2)", TIMER_CHANNEL, timer.isoformat())
                    if jobs:
                        await self._conn.execute(f"NOTIFY {JOB_CHANNEL}")
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                log.warning("event hub: NOTIFY failed; other processes will catch up on their next poll")


def create_hub(db: Database, **kwargs: Any) -> EventHub:
    if db.is_sqlite:
        return EventHub(db, **kwargs)
    return PostgresEventHub(db, dsn=db.session_dsn, **kwargs)
