"""Who a bearer token stands for: the one sequence every entrance uses (HTTP requests, a WebSocket's
connection_init, document downloads), so they cannot disagree.

``Credentials.resolve`` runs, in order:

1. the actors remembered for a few seconds (server/actor_cache.py), by token;
2. the credential, by its shape (``identity.token_shape_problem``): a token of ours (``cw_…``: a
   login's session token or an API token) is looked up in ``api_token`` with its user and
   groups (``identity.check_token``, one query); an identity provider's JWT (when
   CASEWAY_OIDC_ISSUER is set), recognized by its shape before ours is judged malformed, is
   verified and mapped to its user by ``OidcSignIn`` (server/oidc_sign_in.py), and gives an
   ``Actor`` or a ``SignInRefused`` the same way;
3. a valid one is remembered (not a live connection's: it is checked again while it stays open,
   server/websockets.py);
4. an API token's use is noted (its ``lastUsedAt``), at most once a minute per token and process:
   a write per request would make every read a write. The first use after a start writes; the
   stored value moves at most once a minute whatever the number of processes (``note_use``'s
   condition). Its update makes no server forget the actors it remembers (migration 0022).
"""

import logging
from datetime import datetime

from engine.clock import SYSTEM_CLOCK, Clock
from engine.people import api_tokens, identity
from engine.people.actors import Actor
from engine.people.identity import TokenProblem
from engine.people.oidc_identities import SignInRefused
from models import Database
from server.actor_cache import ActorCache
from server.oidc_sign_in import OidcSignIn

log = logging.getLogger("caseway.server")

# Tokens whose last noted use a process keeps: beyond it the oldest is forgotten (and written again
# at its next use, which costs one write).
MAX_NOTED = 10_000


class Credentials:
    def __init__(
        self, db: Database, cache: ActorCache, *, clock: Clock = SYSTEM_CLOCK, oidc: OidcSignIn | None = None
    ) -> None:
        self.db = db
        self.cache = cache
        self.oidc = oidc  # the identity provider's tokens (server/oidc_sign_in.py), when one is configured
        self.clock = clock  # "now" for lastUsedAt: a test moves it (engine/clock.py)
        self._noted: dict[str, datetime] = {}  # token id -> the use last written

    async def resolve(self, token: str, *, remember: bool = True) -> Actor | TokenProblem | SignInRefused:
        """The actor ``token`` stands for, or why none (told in words by resolvers/errors.py)."""
        actor = self.cache.get(token) if remember else None
        if actor is None:
            generation = self.cache.generation
            checked: Actor | TokenProblem | SignInRefused
            if self.oidc is not None and self.oidc.takes(token):  # a provider's JWT, by its shape
                checked = await self.oidc.authenticate(token)
            else:
                problem = identity.token_shape_problem(token)
                if problem is not None:
                    return problem
                # Its own short connection: a request's read session opens only once execution
                # starts, so a client that disconnects before that leaves nothing checked out.
                async with self.db.reader.connect() as connection:
                    checked = await identity.check_token(connection, token)
            if not isinstance(checked, Actor):
                return checked
            actor = checked
            if remember:
                self.cache.put(token, actor, read_in=generation)
        if actor.token_id is not None:
            await self.note_use(actor.token_id)
        return actor

    async def note_use(self, token_id: str) -> None:
        """An API token was used: its lastUsedAt written at most once a minute (step 4 above)."""
        now = self.clock.now()
        last = self._noted.get(token_id)
        if last is not None and now - last < api_tokens.USE_RESOLUTION:
            return
        if len(self._noted) >= MAX_NOTED and token_id not in self._noted:
            del self._noted[next(iter(self._noted))]
        self._noted[token_id] = now
        try:
            async with self.db.transaction() as session:
                await api_tokens.note_use(session, token_id=token_id, at=now)
        except Exception:  # a bookkeeping write never refuses a request; the token's next use tries again
            log.exception("noting an API token's use failed")
            self._noted.pop(token_id, None)


__all__ = ["Credentials"]
