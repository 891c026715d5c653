"""Who a bearer token stands for, remembered for a few seconds.

Authenticating an HTTP request was a round trip to the database and, through the driver and
the pool, about two thirds of the CPU of a request that reads nothing else (bench R3). A
remembered actor is dropped when its time in the cache is up, when its token expires, and as
soon as who a token stands for may have changed: the process that commits such a change clears
its cache at once (``resolvers.mutations``), and on PostgreSQL triggers on ``api_token``,
``user`` and ``group_member`` NOTIFY every process, so even a change made with plain SQL
reaches all of them (migration 0006, ``server.hub``). Without PostgreSQL's notifications, a
change made by another process takes effect within ``ttl`` seconds.

Each clear also wakes whoever waits in ``changed`` (the server's re-check of its live
WebSocket connections), so a logout, a revoked token or a disabled user ends live access at
once rather than at the next periodic re-check.
"""

import asyncio
import time
from collections.abc import Callable

from engine.people.actors import Actor
from models import utcnow
from server.shutdown import until_set


class ActorCache:
    def __init__(self, ttl: float, *, max_size: int = 10_000, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.max_size = max_size
        self.clock = clock  # seconds, monotonic: a test moves it on instead of waiting out the ttl
        self._actors: dict[str, tuple[float, Actor]] = {}  # token -> (monotonic deadline, actor)
        # Counts the clears, so an actor read before a change is not remembered after it.
        self.generation = 0
        self._changed = asyncio.Event()

    def get(self, token: str) -> Actor | None:
        found = self._actors.get(token)
        if found is None:
            return None
        deadline, actor = found
        if deadline <= self.clock() or (actor.expires_at is not None and actor.expires_at <= utcnow()):
            del self._actors[token]
            return None
        return actor

    def put(self, token: str, actor: Actor, *, read_in: int) -> None:
        """Remember a valid token's actor, read from the database in generation ``read_in``
        (taken before the read). Unknown tokens are not remembered: guessing costs a round
        trip each time, and the cache cannot be filled with them."""
        if self.ttl <= 0 or read_in != self.generation:  # cleared meanwhile: it may be stale
            return
        if len(self._actors) >= self.max_size:
            del self._actors[next(iter(self._actors))]  # the oldest entry
        self._actors[token] = (self.clock() + self.ttl, actor)

    def clear(self) -> None:
        self._actors.clear()
        self.generation += 1
        self._changed.set()

    async def changed(self, *, within: float) -> None:
        """Return at the next clear (or one since the last return), or after ``within`` seconds."""
        await until_set(self._changed, within)
        self._changed.clear()
