"""The ASGI application: Starlette around Strawberry's GraphQL endpoint."""

import asyncio
import contextlib
import gc
import json
import logging
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import orjson
from cross_web import HTTPException
from graphql import GraphQLError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import BaseGraphQLTransportWSHandler

from engine import identity
from models import Database
from resolvers.context import Context
from schema import schema
from server.actor_cache import ActorCache
from server.checkpoints import checkpoint_forever
from server.hub import EventHub, create_hub
from server.job_runner import JobRunner, configure_jobs
from server.request_limits import BodyLimit, error_response, graphiql_headers
from server.settings import Settings
from server.sweeper import Sweeper

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


class CasewayGraphQL(GraphQL):
    graphql_transport_ws_handler_class = TransportWS

    """Builds the per-request context: reads the bearer token and resolves the viewer. Over
    WebSocket the token comes in the connection_init payload; a bad one closes with 4403.
    Cross-origin handshakes are refused (HTTP 403) unless the origin is allowed."""

    def __init__(self, db: Database, settings: Settings, hub: EventHub, actor_cache: ActorCache) -> None:
        protocols = [GRAPHQL_TRANSPORT_WS_PROTOCOL] + ([GRAPHQL_WS_PROTOCOL] if settings.legacy_ws else [])
        super().__init__(
            schema,
            graphql_ide="graphiql" if settings.graphiql else None,
            subscription_protocols=protocols,
            connection_init_wait_timeout=timedelta(seconds=settings.ws_init_timeout),
            allowed_origins=settings.allowed_origins,
            max_subscriptions_per_connection=settings.ws_max_subscriptions + settings.ws_max_operations,
        )
        self.db = db
        self.settings = settings
        self.hub = hub
        self.actor_cache = actor_cache
        self.live_contexts: weakref.WeakSet[Context] = weakref.WeakSet()
        self.graphiql_headers = graphiql_headers(self.graphql_ide_html) if settings.graphiql else {}

    async def recheck_live_connections(self) -> None:
        """Re-read the token and groups of every live connection in two queries, so a revoked
        token or a group change reaches long-lived subscriptions without delaying any event:
        periodically, and at once when who a token stands for changed (a logout, a revoked
        token, a disabled user, a group change: ``ActorCache.changed``). A connection whose
        token no longer works is closed with 4403, as one that came with a bad token."""
        while True:
            await self.actor_cache.changed(within=self.settings.ws_auth_refresh)
            contexts = [c for c in self.live_contexts if c.token]
            if not contexts:
                continue
            try:
                async with self.db.read_session() as session:
                    actors = await identity.authenticate_many(session, list({c.token for c in contexts}))
            except Exception:  # retried at the next interval
                log.exception("re-checking live connections failed")
                continue
            for context in contexts:
                context.actor = actors.get(context.token or "")
                if context.actor is None:
                    self.live_contexts.discard(context)
                    with contextlib.suppress(Exception):  # already closed
                        await context.request.close(code=4403, reason="Forbidden")

    def encode_json(self, data: object) -> str:
        """orjson: several times faster than json on a big read. Text, because WebSocket
        clients expect text frames; json for the rare value orjson refuses (integers beyond
        64 bits in a JSON field)."""
        try:
            return orjson.dumps(data).decode()
        except TypeError:
            return super().encode_json(data)  # type: ignore[return-value]

    async def get_context(self, request: Any, response: Any) -> Context:  # type: ignore[override]
        live = isinstance(request, WebSocket)
        ctx = Context(
            db=self.db,
            settings=self.settings,
            hub=self.hub,
            actor_cache=self.actor_cache,
            request=request,
            response=response,
            live=live,
        )
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer ") and not live:
            token = ctx.token = header[7:].strip()  # ``logout`` revokes it
            ctx.actor = self.actor_cache.get(token)
            if ctx.actor is None:
                generation = self.actor_cache.generation
                # Its own short connection: the request's read session opens only once execution
                # starts, so a client that disconnects before that leaves nothing checked out.
                async with self.db.reader.connect() as connection:
                    ctx.actor = await identity.authenticate(connection, token)
                if ctx.actor is not None:
                    self.actor_cache.put(token, ctx.actor, read_in=generation)
        return ctx

    async def on_ws_connect(self, context: Context) -> None:  # type: ignore[override]
        params = context.connection_params if isinstance(context.connection_params, dict) else {}
        header = str(params.get("authorization") or params.get("Authorization") or "")
        if not header.lower().startswith("bearer "):
            raise ConnectionRejectionError()
        context.token = header[7:].strip()
        async with self.db.reader.connect() as connection:  # as an HTTP request authenticates
            context.actor = await identity.authenticate(connection, context.token)
        self.live_contexts.add(context)
        if context.actor is None:
            raise ConnectionRejectionError()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        except ClientDisconnect:  # the client went away mid-request: nothing to answer, nothing to log
            return

    async def run(self, *args: Any, **kwargs: Any) -> Any:
        """strawberry's, its refusals (bad JSON, no query, a GET mutation) answered as GraphQL
        errors with a code rather than plain text."""
        try:
            return await super().run(*args, **kwargs)
        except HTTPException as refusal:
            return error_response(refusal.status_code, refusal.reason)

    def decode_json(self, data: str | bytes) -> object:
        """json (not orjson, which reads integers beyond 64 bits as floats), its every failure a
        client's mistake: malformed, nested too deeply, or a number too long to convert."""
        try:
            return json.loads(data)
        except json.JSONDecodeError:
            raise
        except RecursionError:
            raise HTTPException(400, "The JSON is nested too deeply.") from None
        except ValueError:
            raise HTTPException(400, "The JSON has a number too long to read.") from None

    def parse_json(self, data: str | bytes) -> Any:
        """A body, or the variables or extensions of a GET, must be a JSON object (a list is a
        batch, which strawberry refuses with its own message)."""
        value = super().parse_json(data)
        if not isinstance(value, dict | list):
            raise HTTPException(
                400, f"Expected a JSON object, got {type(value).__name__ if value is not None else 'null'}."
            )
        return value

    async def render_graphql_ide(self, request: Request) -> Response:
        return HTMLResponse(self.graphql_ide_html, headers=self.graphiql_headers)

    async def execute_operation(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """strawberry's; its time limit is the schema's (schema/limits.py), so that WebSocket
        operations have it too."""
        context = kwargs.get("context")
        try:
            return await super().execute_operation(*args, **kwargs)
        finally:  # the request's read session goes back to the pool
            if isinstance(context, Context):
                await context.close()


def tune_garbage_collector() -> None:
    """A nested read allocates tens of thousands of short-lived containers; at the default
    threshold (700) the collector ran dozens of times per request, each full pass walking
    every long-lived object (schema, specs, modules): 13% of R1. Freeze what start-up made and
    collect the young generation every 50,000 allocations instead."""
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


def create_app(settings: Settings | None = None, *, db: Database | None = None) -> Starlette:
    settings = settings or Settings()
    db = db or Database(settings.database_url, pool_size=settings.db_pool_size)
    actor_cache = ActorCache(settings.auth_cache_seconds)
    hub = create_hub(db, poll_interval=settings.hub_poll_interval, on_identity_change=actor_cache.clear)
    graphql = CasewayGraphQL(db, settings, hub, actor_cache)
    sweeper = Sweeper(db, hub, poll_interval=settings.timer_poll_interval)
    configure_jobs(settings)
    runner = (
        JobRunner(db, hub, poll_interval=settings.job_poll_interval, concurrency=settings.job_concurrency)
        if settings.run_jobs
        else None
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        tune_garbage_collector()
        await hub.start()
        sweeper.start()  # catches up with overdue timers in the background
        if runner is not None:
            runner.start()  # reconciles jobs a crash left RUNNING, then runs what is due
        recheck = asyncio.create_task(graphql.recheck_live_connections())
        signer = (  # signed history checkpoints, only with a key (engine/history.py)
            asyncio.create_task(
                checkpoint_forever(db, secret_key=settings.secret_key, interval=settings.checkpoint_interval)
            )
            if settings.secret_key
            else None
        )
        try:
            yield
        finally:
            recheck.cancel()
            await sweeper.stop()
            if runner is not None:
                await runner.stop()
            if signer is not None:
                signer.cancel()
            await hub.stop()
            await db.dispose()

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def root(request: Request) -> RedirectResponse:
        return RedirectResponse("/graphql")

    app = Starlette(
        routes=[
            Route("/", root),
            Route("/health", health),
            Route("/graphql", graphql, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", graphql),
        ],
        middleware=[
            # Other origins' pages may call the HTTP endpoint as they may open a WebSocket;
            # same-origin pages and non-browser clients send no preflight and are unaffected.
            Middleware(
                CORSMiddleware,
                allow_origins=settings.allowed_origins,
                allow_methods=["GET", "POST"],
                allow_headers=["Authorization", "Content-Type"],
                max_age=600,
            ),
            Middleware(BodyLimit, max_bytes=settings.max_body_bytes),
        ],
        lifespan=lifespan,
    )
    app.state.db = db
    app.state.hub = hub
    app.state.sweeper = sweeper
    app.state.job_runner = runner
    app.state.settings = settings
    return app
