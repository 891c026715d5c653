"""The per-request context: database, viewer and loaders."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.actors import Actor
from models import Database, utcnow
from resolvers.errors import unauthenticated
from resolvers.loaders import Loaders
from resolvers.sessions import EphemeralReadSession, ReadSession


@dataclass(eq=False)
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
    live: bool = False  # a WebSocket connection: nothing read is kept between events
    token: str | None = None  # of a live connection, re-checked periodically by the server
    connection_params: dict[str, Any] | None = None
    active_subscriptions: int = 0
    _session: ReadSession | EphemeralReadSession | None = None
    _loaders: Loaders | None = field(default=None, repr=False)

    @property
    def session(self) -> ReadSession | EphemeralReadSession:
        if self._session is None:
            self._session = EphemeralReadSession(self.db) if self.live else ReadSession(self.db.read_session())
        return self._session

    @property
    def loaders(self) -> Loaders:
        if self._loaders is None:
            self._loaders = Loaders(self, cache=not self.live)
        return self._loaders

    @property
    def viewer(self) -> Actor:
        if self.actor is None or (self.actor.expires_at is not None and self.actor.expires_at <= utcnow()):
            raise unauthenticated()
        return self.actor

    def start_event(self, known: Mapping[str, Mapping[Any, Any]]) -> None:
        """Before a live event is executed: loaders that remember this event's reads only,
        starting with ``known`` (what the event's subscribers share, see resolvers/live.py)."""
        self._loaders = Loaders(self, cache=True, known=known)

    async def refresh(self) -> None:
        """Forget everything read so far (called after a mutation commits)."""
        await self.close()
        self._loaders = None

    async def published(self, activities: list[Any]) -> None:
        """Hand committed activity entries to the event hub, if the server runs one."""
        if self.hub is not None and activities:
            await self.hub.publish(activities)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
