"""The per-request context: database, viewer and loaders."""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.people.actors import Actor
from engine.people.identity import TokenProblem
from engine.people.oidc_identities import SignInRefused
from models import Database, utcnow
from resolvers.errors import unauthenticated
from resolvers.loaders import Loaders
from resolvers.sessions import EphemeralReadSession, ReadSession

if TYPE_CHECKING:
    from resolvers.live import SharedRows


@dataclass(eq=False)
class Context:
    """Created once per HTTP request. Reads share one session; each mutation runs in its own
    transaction, after which the read session and the loaders start afresh so the payload
    shows the committed state."""

    db: Database
    settings: Any
    hub: Any = None  # the event hub of the live-activity layer, when one runs
    background: Any = None  # the server's background parts (server/background.py): runDueTimers
    actor_cache: Any = None  # the server's remembered bearer tokens (server/actor_cache.py)
    documents: Any = None  # the document store, size limit and signed links (server/documents.py)
    actor: Actor | None = None
    request: Any = None
    response: Any = None
    live: bool = False  # a WebSocket connection: nothing read is kept between events
    token: str | None = None  # of a live connection, re-checked periodically by the server
    # why ``actor`` is None, told by ``viewer``; a provider's token is refused in words of its own
    auth_problem: TokenProblem | SignInRefused = TokenProblem.MISSING
    connection_params: dict[str, Any] | None = None
    active_subscriptions: int = 0
    running_operations: int = 0  # a live connection's queries and mutations now running (schema/limits/)
    _session: ReadSession | EphemeralReadSession | None = None
    _loaders: Loaders | None = field(default=None, repr=False)
    # The live event being executed: its entry, its results shared by subscribers
    # (engine.notify.events.Event) and which of its rows this viewer may see. None outside a live event.
    _event: tuple[Any, dict[Any, Any], tuple[Any, ...]] | None = field(default=None, repr=False)
    # The live event whose shared rows this viewer's loaders start with, once made.
    _primed_with: "tuple[SharedRows | None, Any] | None" = field(default=None, repr=False)
    # Set when the viewer was asked for or the database read (by a loader that missed, say):
    # what is computed since may be this viewer's own.
    _personal: bool = field(default=False, repr=False)

    @property
    def session(self) -> ReadSession | EphemeralReadSession:
        self._personal = True
        if self._session is None:
            if self.live:
                self._session = EphemeralReadSession(self.db)
            else:
                session, replica = self.db.routed_read_session()
                self._session = ReadSession(session, replica=replica, db=self.db)
        return self._session

    @property
    def loaders(self) -> Loaders:
        if self._loaders is None:
            if self._primed_with is None:
                self._loaders = Loaders(self, cache=not self.live)
            else:  # a live event's: remembers its reads, starting with the shared rows
                shared, entry = self._primed_with
                known = shared.known_to(self.actor, entry) if shared is not None else {}
                self._loaders = Loaders(self, cache=True, known=known)
        return self._loaders

    @property
    def viewer(self) -> Actor:
        self._personal = True
        if self.actor is None:
            raise unauthenticated(self.auth_problem)
        if self.actor.expires_at is not None and self.actor.expires_at <= utcnow():
            raise unauthenticated(TokenProblem.EXPIRED)
        return self.actor

    def start_event(
        self, entry: Any, shared: "SharedRows | None" = None, results: dict[Any, Any] | None = None
    ) -> None:
        """Before a live event's ``entry`` is executed: loaders that remember this event's reads
        only, starting with what the event's subscribers share and this viewer may see
        (``shared``, resolvers/live.py); ``results``, the event's results shared by its
        subscribers (see ``shared_result``). The loaders are made when first used: most
        subscribers of an event take a result another one computed and read nothing."""
        self._loaders = None
        self._primed_with = (shared, entry)
        self._personal = False
        view = shared.view_of(self.actor, entry) if shared is not None else ()
        self._event = None if results is None else (entry, results, view)

    def shared_result(self, root: Any, operation: Any) -> Any:
        """The result of ``operation`` (a hashable key of document and variables) over the live
        event's entry ``root``, if a subscriber with the same view of the event computed one
        that is not personal; else None."""
        if self._event is None or self._event[0] is not root:
            return None
        return self._event[1].get((operation, self._event[2]))

    def share_result(self, root: Any, operation: Any, result: Any) -> None:
        """Offer the result of ``operation`` over the live event's entry ``root`` to the event's
        other subscribers. Taken only if computing it asked nothing of this viewer (``viewer``)
        nor of the database (``session``) since ``start_event``: then it depends only on the
        entry, the operation and the rows the viewer was primed with, which ``_view`` tells
        apart. The caller offers only what it computed without yielding to other tasks."""
        if self._event is not None and self._event[0] is root and not self._personal:
            self._event[1].setdefault((operation, self._event[2]), result)

    def event_memo(self) -> dict[Any, Any] | None:
        """What the subscribers of the live event being executed share whatever each may see
        (None outside a live event): computed once by the first, read by the others (the facts
        of an entry's sentence, resolvers/sentences.py). Keys are the caller's own tuples."""
        return None if self._event is None else self._event[1]

    async def refresh(self) -> None:
        """Forget everything read so far (called after a mutation commits)."""
        await self.close()
        self._loaders = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
