"""Read replicas with read-your-writes (CASEWAY_DATABASE_REPLICA_URLS; docs/scaling.md).

A request's reads go to a streaming replica only when it has replayed the WAL position the
reader must see: the position of the reader's last commit (remembered per token by the server,
or sent back by the client in ``Caseway-Read-After`` so several processes agree), and only while
it lags the primary by at most ``max_lag_ms``. Otherwise, and when no replica answers, the
primary does. Mutations, live subscriptions, timers and jobs use the primary always: only an
HTTP request's reads ask for a replica, and none once the request has begun writing.

What the monitor knows of each replica is at most one ``interval`` old: its replayed position
only grows, so a replica found far enough along stays so; a replica that stops answering is
marked down at its next check, or by the request whose statement fails on it.
"""

import asyncio
import collections
import contextlib
import logging
import re
import time
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

log = logging.getLogger("caseway.replicas")

_LSN = re.compile(r"^([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})$")
HISTORY_SECONDS = 120.0  # how far back the primary's positions are kept to date a replica's lag
NOWHERE = (1 << 64) - 1  # past any WAL position: a reader who must see it reads the primary


def parse_lsn(value: str | None) -> int | None:
    """A WAL position as PostgreSQL writes it (``16/B374D848``) as a number; None if it is not one."""
    match = _LSN.match(value or "")
    return (int(match[1], 16) << 32) + int(match[2], 16) if match else None


def format_lsn(value: int) -> str:
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


@dataclass(eq=False)
class ReadPosition:
    """One HTTP request's reads: the WAL position they must see (``after``), and whether the
    request began a write transaction (then everything it reads comes from the primary), and the
    position its last commit reached (``committed``), which the server remembers for the token."""

    after: int = 0
    writing: bool = False
    committed: int | None = None
    token: str | None = None  # whose position it is (server/read_positions.py remembers it)


# The request being served (server/app.py sets it; Database.transaction marks it).
READ_POSITION: ContextVar[ReadPosition | None] = ContextVar("caseway_read_position", default=None)


@dataclass(eq=False)
class Replica:
    url: str
    engine: AsyncEngine
    sessionmaker: async_sessionmaker[AsyncSession]
    name: str  # host:port/database, without credentials: for /ready, /metrics and the log
    replayed: int = 0
    lag_ms: float | None = None  # None until measured
    healthy: bool = False
    problem: str | None = None
    reads: int = 0  # read sessions served, for /metrics

    def state(self) -> str:
        return "up" if self.healthy else "down"


@dataclass(eq=False)
class ReplicaSet:
    replicas: list[Replica]
    max_lag_ms: float
    interval: float = 0.2
    _next: int = 0
    _history: collections.deque[tuple[float, int]] = field(default_factory=lambda: collections.deque(maxlen=4096))

    @classmethod
    def connect(cls, urls: Iterable[str], *, max_lag_ms: float, pool_size: int, normalize: Any) -> "ReplicaSet":
        replicas = []
        for raw in urls:
            url = normalize(raw)
            engine = create_async_engine(
                url,
                pool_size=pool_size,
                max_overflow=pool_size * 2,
                isolation_level="AUTOCOMMIT",
                connect_args={"server_settings": {"jit": "off"}, "timeout": 2},
            )
            parsed = make_url(url)
            name = f"{parsed.host}:{parsed.port or 5432}/{parsed.database}"
            maker = async_sessionmaker(engine, expire_on_commit=False, autoflush=False)
            replicas.append(Replica(url=url, engine=engine, sessionmaker=maker, name=name))
        return cls(replicas=replicas, max_lag_ms=max_lag_ms)

    def choose(self, after: int) -> Replica | None:
        """A replica that may answer a reader who must see ``after``, round robin among those
        up, within the lag limit and far enough along; None: the primary answers."""
        count = len(self.replicas)
        for step in range(count):
            replica = self.replicas[(self._next + step) % count]
            if (
                replica.healthy
                and replica.lag_ms is not None
                and replica.lag_ms <= self.max_lag_ms
                and replica.replayed >= after
            ):
                self._next = (self._next + step + 1) % count
                replica.reads += 1
                return replica
        return None

    def failed(self, replica: Replica, error: BaseException) -> None:
        """A request's statement failed on ``replica``: down until the monitor finds it again."""
        if replica.healthy:
            log.warning("replica %s failed a read and is left out until it answers: %s", replica.name, error)
        replica.healthy = False
        replica.problem = f"{type(error).__name__}: {(str(error).splitlines() or [''])[0][:200]}"

    def _lag_ms(self, replayed: int, now: float) -> float:
        """How old the primary's state the replica shows is: from the first moment the primary
        had WAL the replica has not replayed, to now (0 when it has replayed all it was seen to
        have)."""
        for at, position in self._history:
            if position > replayed:
                return (now - at) * 1000
        return 0.0

    async def check(self, primary: AsyncEngine) -> None:
        """One pass: the primary's position, then each replica's."""
        now = time.monotonic()
        async with primary.connect() as connection:
            # flushed, not inserted: WAL still in the primary's buffers cannot be shipped, and a
            # replica is not behind for lacking it
            current = parse_lsn(await connection.scalar(text("SELECT pg_current_wal_flush_lsn()::text"))) or 0
        if not self._history or self._history[-1][1] != current:
            self._history.append((now, current))
        while self._history and self._history[0][0] < now - HISTORY_SECONDS and len(self._history) > 1:
            self._history.popleft()
        for replica in self.replicas:
            try:
                async with asyncio.timeout(2), replica.engine.connect() as connection:
                    replayed = await connection.scalar(text("SELECT pg_last_wal_replay_lsn()::text"))
            except Exception as error:  # any failure: down, and why
                if replica.healthy or replica.problem is None:
                    log.warning("replica %s is down: %s", replica.name, error)
                replica.healthy, replica.lag_ms = False, None
                replica.problem = f"{type(error).__name__}: {(str(error).splitlines() or [''])[0][:200]}"
                continue
            position = parse_lsn(replayed)
            if position is None:  # not in recovery: a primary, not a replica
                replica.healthy, replica.problem = False, "not a replica (pg_last_wal_replay_lsn() is null)"
                continue
            if not replica.healthy:
                log.info("replica %s is up", replica.name)
            replica.replayed, replica.healthy, replica.problem = position, True, None
            replica.lag_ms = self._lag_ms(position, time.monotonic())

    async def run(self, primary: AsyncEngine, *, on_check: Callable[["ReplicaSet"], None] | None = None) -> None:
        """Check every ``interval`` until cancelled, telling ``on_check`` (the metrics); a failure
        of the primary is logged, not fatal."""
        while True:
            try:
                await self.check(primary)
            except Exception as error:  # the primary did not answer: keep trying
                log.warning("replica monitor: the primary did not answer: %s", error)
            if on_check is not None:
                on_check(self)
            await asyncio.sleep(self.interval)

    def report(self) -> dict[str, dict[str, Any]]:
        """Each replica's state for /ready: up or down, its lag, why it is down."""
        return {
            r.name: {
                "state": r.state(),
                "lag_ms": None if r.lag_ms is None else round(r.lag_ms),
                **({"problem": r.problem} if r.problem else {}),
            }
            for r in self.replicas
        }

    async def dispose(self) -> None:
        for replica in self.replicas:
            with contextlib.suppress(Exception):
                await replica.engine.dispose()
