"""The two read sessions a request context can hold."""

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from models import Database
from models.replicas import Replica
from resolvers.records import records


class ReadSession:
    """The request's read session, one statement at a time: GraphQL resolves sibling fields
    concurrently, and an AsyncSession must never run two statements at once. On a replica
    (``replica``, models/replicas.py) a statement that fails there is run again on the primary,
    and the rest of the request reads from the primary: a replica that went away costs a
    request nothing but the time of the failed attempt."""

    def __init__(self, session: AsyncSession, *, replica: Replica | None = None, db: Database | None = None) -> None:
        self._session = session
        self._lock = asyncio.Lock()
        self._replica = replica
        self._db = db

    async def _run(self, call: Callable[[AsyncSession], Awaitable[Any]]) -> Any:
        async with self._lock:
            try:
                return await call(self._session)
            except (DBAPIError, OSError, TimeoutError) as error:
                if self._replica is None or self._db is None or self._db.replicas is None:
                    raise
                self._db.replicas.failed(self._replica, error)
                with contextlib.suppress(Exception):
                    await self._session.close()
                self._session, self._replica = self._db.read_session(), None
                return await call(self._session)

    @property
    def bind(self) -> Any:
        """The engine, as ``AsyncSession.bind``: engine reads ask it which dialect they speak."""
        return self._session.bind

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        return await self._run(lambda session: session.execute(*args, **kwargs))

    async def rows(
        self, statement: Any, params: dict[str, Any] | None = None, *, generic_plan: bool = False
    ) -> list[Any]:
        """A Core statement's rows as namedtuples, run on the session's connection: the same
        snapshot, without the ORM's execution and loading machinery.

        ``generic_plan`` (PostgreSQL): planned once for any parameters and the plan reused, for
        a statement whose planning costs far more than its run and whose best plan does not
        depend on its parameters' values (myTasks: see resolvers/compiled/__init__.py). Only
        this statement: the setting is the transaction's, and set back after it."""

        async def core(session: AsyncSession) -> list[Any]:
            return await _rows(await session.connection(), statement, params, generic_plan=generic_plan)

        return await self._run(core)

    async def scalars(self, *args: Any, **kwargs: Any) -> Any:
        return await self._run(lambda session: session.scalars(*args, **kwargs))

    async def scalar(self, *args: Any, **kwargs: Any) -> Any:
        return await self._run(lambda session: session.scalar(*args, **kwargs))

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        return await self._run(lambda session: session.get(*args, **kwargs))

    async def close(self) -> None:
        async with self._lock:
            await self._session.close()


class EphemeralReadSession:
    """For long-lived WebSocket connections: every statement gets a fresh session, so no
    snapshot or pooled connection outlives the event it serves."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        async with self._db.read_session() as session:
            return await getattr(session, method)(*args, **kwargs)

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("execute", *args, **kwargs)

    async def rows(
        self, statement: Any, params: dict[str, Any] | None = None, *, generic_plan: bool = False
    ) -> list[Any]:
        async with self._db.reader.connect() as connection:
            return await _rows(connection, statement, params, generic_plan=generic_plan)

    async def scalars(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("scalars", *args, **kwargs)

    async def scalar(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("scalar", *args, **kwargs)

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("get", *args, **kwargs)

    async def close(self) -> None:
        return None


async def _rows(connection: AsyncConnection, statement: Any, params: Any, *, generic_plan: bool) -> list[Any]:
    """``ReadSession.rows``'s statement on ``connection``, under a generic plan if asked."""
    if not generic_plan:
        return records(await connection.execute(statement, params))
    await connection.exec_driver_sql("SET LOCAL plan_cache_mode = force_generic_plan")
    found = records(await connection.execute(statement, params))
    # set back for the request's next statements (a failed statement aborts the transaction,
    # whose rollback undoes the setting as well)
    await connection.exec_driver_sql("SET LOCAL plan_cache_mode = DEFAULT")
    return found
