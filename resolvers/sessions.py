"""The two read sessions a request context can hold."""

import asyncio
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from models import Database
from resolvers.records import records


class ReadSession:
    """The request's read session, one statement at a time: GraphQL resolves sibling fields
    concurrently, and an AsyncSession must never run two statements at once."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session
        self._lock = asyncio.Lock()

    @property
    def bind(self) -> Any:
        """The engine, as ``AsyncSession.bind``: engine reads ask it which dialect they speak."""
        return self._session.bind

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        async with self._lock:
            return await self._session.execute(*args, **kwargs)

    async def rows(self, statement: Any, params: dict[str, Any] | None = None) -> list[Any]:
        """A Core statement's rows as namedtuples, run on the session's connection: the same
        snapshot, without the ORM's execution and loading machinery."""
        async with self._lock:
            connection = await self._session.connection()
            return records(await connection.execute(statement, params))

    async def scalars(self, *args: Any, **kwargs: Any) -> Any:
        async with self._lock:
            return await self._session.scalars(*args, **kwargs)

    async def scalar(self, *args: Any, **kwargs: Any) -> Any:
        async with self._lock:
            return await self._session.scalar(*args, **kwargs)

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        async with self._lock:
            return await self._session.get(*args, **kwargs)

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

    async def rows(self, statement: Any, params: dict[str, Any] | None = None) -> list[Any]:
        async with self._db.reader.connect() as connection:
            return records(await connection.execute(statement, params))

    async def scalars(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("scalars", *args, **kwargs)

    async def scalar(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("scalar", *args, **kwargs)

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call("get", *args, **kwargs)

    async def close(self) -> None:
        return None
