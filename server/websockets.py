"""The WebSocket side of the GraphQL endpoint: its two protocol handlers' refusals said in
words, and the live connections whose token is checked again while they stay open.

A connection authenticates once, in its connection_init payload (``CasewayGraphQL.on_ws_connect``
in server/app.py); ``LiveConnections`` then re-reads the tokens and groups of all of them in two
queries, periodically and at once when who a token stands for changed, and closes with 4403 a
connection whose token no longer works.
"""

import asyncio
import contextlib
import logging
import weakref
from collections.abc import AsyncGenerator
from typing import Any

from cross_web import HTTPException
from graphql import GraphQLError
from strawberry.asgi import ASGIWebSocketAdapter
from strawberry.subscriptions import GRAPHQL_WS_PROTOCOL
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import BaseGraphQLTransportWSHandler

from engine.people import identity
from engine.people.actors import Actor
from models import Database
from resolvers.context import Context
from resolvers.errors import auth_message
from server.actor_cache import ActorCache

__all__ = ["LEGACY_HINT", "REFUSAL", "CasewayWebSocket", "LiveConnections", "TokenChecks", "TransportWS"]

log = logging.getLogger("caseway.server")


class TransportWS(BaseGraphQLTransportWSHandler):
    """strawberry's graphql-transport-ws handler, its cap on the operations one connection has
    in flight answered with a code. The cap is a backstop, set above the two limits that
    normally apply first and tell which was reached (``TOO_MANY_SUBSCRIPTIONS``,
    ``TOO_MANY_OPERATIONS``): it bounds the tasks a burst of messages starts before any of
    them has been parsed."""

    async def handle_subscribe(self, message: Any) -> None:
        cap = self.max_subscriptions_per_connection
        if (
            self.connection_acknowledged
            and cap is not None
            and message.get("id") not in self.operations
            and len(self.operations) >= cap
        ):
            error = GraphQLError(
                f"At most {cap} operations may be in flight on one connection.",
                extensions={"code": "TOO_MANY_OPERATIONS"},
            )
            await self.send_message({"id": message["id"], "type": "error", "payload": [error.formatted]})
            return
        await super().handle_subscribe(message)


# The scope key of a refused connection's reason, read by ``CasewayWebSocket.close``.
REFUSAL = "caseway.refusal"
LEGACY_HINT = "The graphql-ws protocol is off on this server: use graphql-transport-ws, or set CASEWAY_LEGACY_WS=true."


def close_reason(sentence: str) -> str:
    """``sentence`` cut to the 123 bytes a close frame's reason may hold (a provider's refusal
    that quotes the token's claims may be longer)."""
    data = sentence.encode()
    return sentence if len(data) <= 123 else data[:120].decode(errors="ignore") + "..."


class CasewayWebSocket(ASGIWebSocketAdapter):
    """strawberry's WebSocket adapter, its closes saying why: the reason a connection_init was
    refused (strawberry's own says only "Forbidden"), that the old protocol exists but is off
    (strawberry's says "Subprotocol not acceptable"), and why a message could not be read."""

    async def iter_json(self, *, ignore_parsing_errors: bool = False) -> AsyncGenerator[object, None]:
        """strawberry's, a message the server refuses to read (server/app.py ``decode_json``:
        nested too deeply, a number too long) closing the connection with 4400 and the sentence,
        as malformed JSON does, rather than failing the connection's handler."""
        messages = super().iter_json(ignore_parsing_errors=ignore_parsing_errors)
        while True:
            try:
                message = await anext(messages)
            except StopAsyncIteration:
                return
            except HTTPException as refusal:
                await self.close(4400, close_reason(refusal.reason))
                return
            yield message

    async def close(self, code: int, reason: str) -> None:
        scope = self.ws.scope
        if code == 4403 and REFUSAL in scope:
            reason = close_reason(scope[REFUSAL])
        elif code == 4406 and GRAPHQL_WS_PROTOCOL in scope.get("subprotocols", ()):
            reason = LEGACY_HINT
        await super().close(code, reason)


class TokenChecks:
    """The tokens of connection_init, checked in batches: a check asked while a batch is read
    waits for the next, which reads every token asked meanwhile in two queries (three when one
    is refused). A storm of 1,000 subscribers connecting within a second took one database
    connection and one query each, and the ones behind them waited their turn for the pool
    while their opening handshakes timed out (issue 47, finding 7); now they share a few reads,
    first come first served."""

    BATCH = 500  # tokens one read asks for

    def __init__(self, db: Database) -> None:
        self._db = db
        self._waiting: dict[str, list[asyncio.Future[Any]]] = {}
        self._reader: asyncio.Task[None] | None = None

    async def check(self, token: str) -> "Actor | identity.TokenProblem":
        """The actor ``token`` stands for, or why none (as ``identity.check_token`` says)."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(token, []).append(future)
        if self._reader is None:
            self._reader = asyncio.create_task(self._read(), name="caseway-token-checks")
        return await future

    async def _read(self) -> None:
        try:
            while self._waiting:
                await asyncio.sleep(0)  # the connection_init messages already received join this batch
                batch = dict(list(self._waiting.items())[: self.BATCH])
                for token in batch:
                    del self._waiting[token]
                try:
                    results = await self._checked(list(batch))
                except Exception as error:
                    for futures in batch.values():
                        for future in futures:
                            if not future.done():
                                future.set_exception(error)
                    continue
                for token, futures in batch.items():
                    for future in futures:
                        if not future.done():
                            future.set_result(results[token])
        finally:
            self._reader = None

    async def _checked(self, tokens: list[str]) -> "dict[str, Actor | identity.TokenProblem]":
        valid = [t for t in tokens if identity.token_shape_problem(t) is None]
        async with self._db.read_session() as session:
            actors: dict[str, Any] = await identity.authenticate_many(session, valid) if valid else {}
            refused = [t for t in tokens if t not in actors]
            problems = await identity.token_problems(session, refused) if refused else {}
        return {t: actors.get(t) or problems.get(t, identity.TokenProblem.UNKNOWN) for t in tokens}


class LiveConnections:
    """The live connections of one server, held weakly (a closed one simply goes), and the loop
    that checks their tokens again (``recheck``, one of the server's background tasks)."""

    def __init__(self, db: Database, actor_cache: ActorCache, *, refresh_seconds: float) -> None:
        self._db = db
        self._actor_cache = actor_cache
        self._refresh = refresh_seconds
        self._contexts: weakref.WeakSet[Context] = weakref.WeakSet()
        # Who the tokens stand for now, and why not; with an identity provider, its tokens too
        # (server/oidc_sign_in.py).
        self.authenticate_many = identity.authenticate_many
        self.token_problems: Any = identity.token_problems

    def add(self, context: Context) -> None:
        """A connection that has authenticated: from now on its token is checked again."""
        self._contexts.add(context)

    async def recheck(self) -> None:
        """Re-read the token and groups of every live connection in two queries, so a revoked
        token or a group change reaches long-lived subscriptions without delaying any event:
        periodically, and at once when who a token stands for changed (a logout, a revoked
        token, a disabled user, a group change: ``ActorCache.changed``). A connection whose
        token no longer works is closed with 4403, as one that came with a bad token."""
        while True:
            await self._actor_cache.changed(within=self._refresh)
            contexts = [c for c in self._contexts if c.token]
            if not contexts:
                continue
            try:
                async with self._db.read_session() as session:
                    actors = await self.authenticate_many(session, list({c.token for c in contexts}))
            except Exception:  # retried at the next interval
                log.exception("re-checking live connections failed")
                continue
            refused = [c for c in contexts if (c.token or "") not in actors]
            problems: dict[str, Any] = {}
            if refused:
                with contextlib.suppress(Exception):  # then the reason is the general one
                    async with self._db.read_session() as session:
                        problems = await self.token_problems(session, list({c.token or "" for c in refused}))
            for context in contexts:
                context.actor = actors.get(context.token or "")
                if context.actor is None:
                    context.auth_problem = problems.get(context.token or "", identity.TokenProblem.UNKNOWN)
                    self._contexts.discard(context)
                    with contextlib.suppress(Exception):  # already closed
                        await context.request.close(code=4403, reason=close_reason(auth_message(context.auth_problem)))
