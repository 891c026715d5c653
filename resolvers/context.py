"""The per-request context: database, viewer and loaders."""

import asyncio
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from engine.actors import Actor
from models import Database
from resolvers.errors import unauthenticated
from resolvers.loaders import Loaders


class ReadSession:
    """The request's read session, one statement at a time: GraphQL resolves sibling fields
    concurrently, and an AsyncSession must never run two statements at once."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session
        self._lock = asyncio.Lock()

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        async with self._lock:
            return await self._session.execute(*args, **kwargs)

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


@dataclass
class Context:
    """Created once per HTTP request. Reads share one session; each mutation runs in its own
    transaction, after which the read session and the loaders start afresh so the payload
    shows the committed state."""

    db: Database
    settings: Any
    hub: Any = None  # the event hub of the live-activity layer, when one runs
    actor: Actor | None = None
    request: Any = None
    response: Any = None
    _session: ReadSession | None = None
    _loaders: Loaders | None = field(default=None, repr=False)

    @property
    def session(self) -> ReadSession:
        if self._session is None:
            self._session = ReadSession(self.db.session())
        return self._session

    @property
    def loaders(self) -> Loaders:
        if self._loaders is None:
            self._loaders = Loaders(self)
        return self._loaders

    @property
    def viewer(self) -> Actor:
        if self.actor is None:
            raise unauthenticated()
        return self.actor

    async def refresh(self) -> None:
        """Forget everything read so far (called after a mutation commits)."""
        if self._session is not None:
            await self._session.close()
            self._session = None
        self._loaders = None

    async def published(self, activities: list[Any]) -> None:
        """Hand committed activity entries to the event hub, if the server runs one."""
        if self.hub is not None and activities:
            await self.hub.publish(activities)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
