"""The database handle: engine, sessions and the one way to open a write transaction."""

import asyncio
import contextlib
import hashlib
import json
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
from sqlalchemy import ColumnElement, any_, bindparam, event, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from models.replicas import NOWHERE, READ_POSITION, Replica, ReplicaSet, parse_lsn
from models.unit_of_work import APP_PUBLISHER, UNIT_OF_WORK, Publisher, UnitOfWork

log = logging.getLogger("caseway.publisher")


def normalize_url(url: str) -> str:
    """Accept the plain URLs people type and pick the async driver for them."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url.removeprefix("postgres://")
    if url.startswith("postgresql://"):
        return "postgresql+asyncpg://" + url.removeprefix("postgresql://")
    if url.startswith("sqlite://") and not url.startswith("sqlite+"):
        return "sqlite+aiosqlite://" + url.removeprefix("sqlite://")
    return url


class Database:
    """Owns the engine. Writes go through :meth:`transaction`; on SQLite they are also
    serialized in-process, because SQLite has one writer and a deferred transaction that
    reads before it writes would otherwise fail with "database is locked"."""

    def __init__(
        self,
        url: str,
        *,
        echo: bool = False,
        pool_size: int = 10,
        direct_url: str | None = None,
        replica_urls: tuple[str, ...] = (),
        replica_max_lag_ms: float = 1000,
    ) -> None:
        self.url = normalize_url(url)
        self.is_sqlite = self.url.startswith("sqlite")
        # ``direct_url`` (CASEWAY_DATABASE_DIRECT_URL): the database itself, for what needs a
        # session of its own (the event hub's LISTEN, migrations); given, ``url`` is taken to be a
        # pooler in transaction mode (PgBouncer), where one client's statements may reach a
        # different server connection after every transaction.
        self.direct_url = normalize_url(direct_url) if direct_url else None
        self.pooled = self.direct_url is not None and not self.is_sqlite
        kwargs: dict[str, Any] = {"echo": echo, "json_deserializer": _json_loads}
        if self.pooled:
            kwargs.update(pool_size=pool_size, max_overflow=pool_size * 2, pool_pre_ping=False)
            kwargs["connect_args"] = pooler_connect_args()
        elif not self.is_sqlite:
            kwargs.update(pool_size=pool_size, max_overflow=pool_size * 2, pool_pre_ping=False)
            # No JIT compilation: PostgreSQL compiles a plan whose estimated cost passes
            # jit_above_cost, as a page of a 20,000-item subproject's does; compiling was 30 ms
            # of that statement's 120 (bench R4). Caseway's statements are short; none gains.
            # (Behind a pooler the startup parameter is refused: docs/scaling.md says to set it
            # on the database's role instead.)
            kwargs["connect_args"] = {"server_settings": {"jit": "off"}}
        else:
            kwargs.update(pool_size=pool_size, max_overflow=pool_size * 4)
        self.engine: AsyncEngine = create_async_engine(self.url, **kwargs)
        if self.is_sqlite:
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
        self.sessionmaker = async_sessionmaker(self.engine, expire_on_commit=False)
        # Requests' reads on PostgreSQL run outside a transaction: under READ COMMITTED each
        # statement sees its own snapshot either way, and BEGIN and ROLLBACK were two round
        # trips more per request (an authentication alone was three). SQLite keeps its read
        # transaction: there it is what gives a request's statements one snapshot.
        # Behind a pooler in transaction mode the reads keep their transaction too: outside one,
        # a statement's parse and its execution may reach two server connections.
        self.reader: AsyncEngine = (
            self.engine
            if self.is_sqlite or self.pooled
            else self.engine.execution_options(isolation_level="AUTOCOMMIT")
        )
        self._read_sessionmaker = async_sessionmaker(self.reader, expire_on_commit=False, autoflush=False)
        self._write_lock = asyncio.Lock() if self.is_sqlite else None
        # Streaming replicas an HTTP request's reads may go to (models/replicas.py); their
        # monitor runs in the server's background (server/background.py).
        self.replicas: ReplicaSet | None = (
            ReplicaSet.connect(
                replica_urls, max_lag_ms=replica_max_lag_ms, pool_size=pool_size, normalize=normalize_url
            )
            if replica_urls and not self.is_sqlite
            else None
        )
        # Told of every transaction's unit of work once it ended: the process's (one server per
        # process: server/background.py sets it, server/publisher.py); None in a tool that tells
        # nobody. One, not a list: a unit of work is counted and announced once per process.
        self.publisher: Publisher | None = None

    def session(self) -> AsyncSession:
        """A session in a transaction, which the caller closes (tools, tests); requests read
        through ``read_session`` and write through ``transaction``."""
        return self.sessionmaker()

    def read_session(self) -> AsyncSession:
        """A session that only reads (see ``reader``): a request's reads, the event hub's."""
        return self._read_sessionmaker()

    def routed_read_session(self) -> tuple[AsyncSession, Replica | None]:
        """The read session of an HTTP request (``READ_POSITION`` set): on a replica that has
        replayed what the reader must see, unless the request began writing; else the primary's.
        Returns the session and the replica it reads from (None: the primary)."""
        position = READ_POSITION.get()
        if self.replicas is not None and position is not None and not position.writing:
            replica = self.replicas.choose(position.after)
            if replica is not None:
                return replica.sessionmaker(), replica
        return self._read_sessionmaker(), None

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """One unit of work: commits when the block ends, rolls back if it raises. What the
        engine recorded in it (``models.unit_of_work``) is handed to the ``publisher`` once the
        transaction ended, outside the write lock; its ``before_commit`` hooks run last, just
        before the commit."""
        work = UnitOfWork()
        position = READ_POSITION.get()
        if position is not None:  # the request writes: its reads go to the primary from now on
            position.writing = True
        try:
            async with self._write_lock or contextlib.nullcontext(), self.sessionmaker() as session:
                async with session.begin():
                    session.info[UNIT_OF_WORK] = work
                    yield session
                    await _before_commit(session, work)
                work.committed = True
            if position is not None and self.replicas is not None:
                try:
                    position.committed = await self.wal_position()
                except Exception:  # committed already: never reported as failed; no replica then qualifies
                    log.warning("reading the WAL position after a commit failed", exc_info=True)
                    position.committed = NOWHERE
        finally:
            await self.publish(work)

    async def wal_position(self) -> int | None:
        """The primary's WAL position now: past every commit that has returned."""
        async with self.reader.connect() as connection:
            return parse_lsn(await connection.scalar(text("SELECT pg_current_wal_insert_lsn()::text")))

    async def publish(self, work: UnitOfWork) -> None:
        """Hand ``work`` to the publisher: every transaction's once it ended, and the unit of
        work of a request refused before its transaction began (its outcome is counted too).
        Never raises: the transaction has ended, so a failure here must neither tell a client
        that a committed write failed nor replace the error that rolled a transaction back
        (the pollers are the safety net of a wake-up that was lost); it is logged."""
        publisher = APP_PUBLISHER.get() or self.publisher
        if publisher is None:
            return
        try:
            await publisher(work)
        except Exception:
            log.exception("publishing a transaction's unit of work failed")

    @property
    def session_dsn(self) -> str:
        """The libpq URL of a connection that keeps its session (the event hub's LISTEN): the
        direct URL behind a pooler, else the database's own."""
        return (self.direct_url or self.url).replace("postgresql+asyncpg://", "postgresql://")

    async def dispose(self) -> None:
        await self.engine.dispose()
        if self.replicas is not None:
            await self.replicas.dispose()


def pooler_connect_args() -> dict[str, Any]:
    """asyncpg behind PgBouncer in transaction pooling (1.18 keeps no prepared statements there):
    no statement cache, and every statement prepared under a name of its own, so a name never
    meets a server connection that holds another statement of that name; the statements of one
    transaction stay on one server connection. No startup parameters beyond those PgBouncer
    passes on (it refuses ``jit``)."""
    return {
        "statement_cache_size": 0,
        "prepared_statement_cache_size": 0,
        "prepared_statement_name_func": lambda: f"__caseway_{uuid.uuid4().hex}__",
    }


async def _before_commit(session: AsyncSession, work: UnitOfWork) -> None:
    """Run the unit of work's hooks in order (a hook may add hooks, or go after the others),
    then flush what is still pending: a flush may add hooks of its own (the task index notes the
    cases it moves, engine/cases/task_index.py), which run before the commit too."""
    while True:
        while work.before_commit:
            await work.before_commit.pop(0)(session)
        if not (session.new or session.dirty or session.deleted):
            return
        await session.flush()
        if not work.before_commit:
            return


def insert_for(session: AsyncSession) -> Any:
    """The dialect's INSERT, which has ``on_conflict_do_nothing()`` on both SQLite and PostgreSQL."""
    return postgresql.insert if session.bind.dialect.name == "postgresql" else sqlite.insert


def _json_loads(text: str | bytes) -> Any:
    """JSON columns are read on every big read (tags, additional data): orjson is several times
    faster; json for what only it accepts (NaN and Infinity, which json.dumps writes)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def among(column: Any, values: Any) -> ColumnElement[bool]:
    """``column = ANY(:values)``, the values as one array parameter (PostgreSQL). IN renders one
    parameter per value on every execution, and each list length is a new statement for the
    server to plan; an array is one statement whose plan PostgreSQL keeps."""
    return column == any_(bindparam(None, list(values), type_=postgresql.ARRAY(column.type)))


def _sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # caseway_sha256(text): the hex SHA-256 PostgreSQL computes with encode(sha256(...)), so a log
    # entry's insert can seal its hash in SQL on both databases (engine/history/activity.py).
    dbapi_connection.create_function("caseway_sha256", 1, _sha256_hex, deterministic=True)
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()
