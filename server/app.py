"""The ASGI application: Starlette around Strawberry's GraphQL endpoint."""

import gc
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import orjson
from cross_web import HTTPException
from starlette.applications import Starlette
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL, GRAPHQL_WS_PROTOCOL
from strawberry.types.execution import ExecutionResult

from engine.people import identity
from engine.people.actors import Actor
from engine.people.oidc_identities import SignInRefused
from models import Database
from resolvers.context import Context
from resolvers.errors import RETRY_AFTER_SECONDS, UNAVAILABLE_MESSAGE, auth_message, database_unavailable
from schema import introspection, schema
from server import metrics
from server.access_log import request_logged
from server.actor_cache import ActorCache
from server.background import Background
from server.credentials import Credentials
from server.documents import DocumentService, download_endpoint
from server.job_runner import configure_jobs
from server.mail import configure_mail
from server.media_types import GRAPHQL_RESPONSE, negotiate, request_error_status, without_data
from server.oidc_sign_in import OidcSignIn, oidc_routes
from server.operations import health, metrics_endpoint, ready_endpoint
from server.read_positions import ReadPositions
from server.request_limits import BodyLimit, decode_json, error_response, unreadable_form
from server.settings import Settings
from server.shutdown import stop_within
from server.unsubscribe import unsubscribe_endpoint
from server.web import WebAssets
from server.websockets import REFUSAL, CasewayWebSocket, LiveConnections, TokenChecks, TransportWS
from server.wiring import Wired, Wiring

log = logging.getLogger("caseway.server")


def bearer_token(header: str) -> str:
    """The token of an ``Authorization: Bearer <token>`` header; a header of another shape gives
    a value that is not a token's (so it is refused as malformed), an empty one ``""``."""
    scheme, _, token = header.strip().partition(" ")
    if not header.strip():
        return ""
    return token.strip() if scheme.lower() == "bearer" and token.strip() else "<malformed>"


# The scope key of what an HTTP request ran: (operation name, outcome, user id), for ``run``.
OBSERVED = "caseway.observed"


# The scope key that marks an answer as a request error's (server/media_types.py).
REQUEST_ERROR = "caseway.request_error"


class CasewayGraphQL(GraphQL):
    """Builds the per-request context: reads the bearer token and resolves the viewer, or why
    not (told by ``Context.viewer``). Over WebSocket the token comes in the connection_init
    payload; a bad one closes with 4403 and the reason in words. Cross-origin handshakes are
    refused (HTTP 403) unless the origin is allowed. HTTP answers in the media type the
    client prefers (server/media_types.py); each HTTP request is counted (server/metrics.py)
    and logged (server/access_log.py)."""

    graphql_transport_ws_handler_class = TransportWS
    websocket_adapter_class = CasewayWebSocket

    def __init__(
        self,
        db: Database,
        settings: Settings,
        credentials: Credentials,
        web: WebAssets,
        documents: DocumentService,
    ) -> None:
        protocols = [GRAPHQL_TRANSPORT_WS_PROTOCOL] + ([GRAPHQL_WS_PROTOCOL] if settings.legacy_ws else [])
        super().__init__(
            schema,
            graphql_ide="graphiql" if settings.graphiql else None,
            subscription_protocols=protocols,
            connection_init_wait_timeout=timedelta(seconds=settings.ws_init_timeout),
            allowed_origins=settings.allowed_origins,
            max_subscriptions_per_connection=settings.ws_max_subscriptions + settings.ws_max_operations,
            # File uploads (addDocument): bearer-token auth only, never cookies, so a cross-site
            # form post carries no credentials and the CSRF risk that keeps this off by default
            # does not arise.
            multipart_uploads_enabled=True,
        )
        self.db = db
        self.settings = settings
        self.background: Background | None = None  # set by create_app: the hub, runDueTimers
        self.credentials = credentials
        self.actor_cache = credentials.cache
        self.live = LiveConnections(db, credentials.cache, refresh_seconds=settings.ws_auth_refresh)
        self.token_checks = TokenChecks(db)  # connection_init's tokens, checked in batches
        self.oidc = credentials.oidc  # the identity provider's tokens (server/oidc_sign_in.py), if one is set
        if self.oidc is not None:
            self.live.authenticate_many, self.live.token_problems = (
                self.oidc.authenticate_many,
                self.oidc.token_problems,
            )
        self.web = web
        self.documents = documents
        self.read_positions = ReadPositions()  # read-your-writes with replicas (server/read_positions.py)

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
            hub=self.background.hub if self.background is not None else None,
            background=self.background,
            actor_cache=self.actor_cache,
            request=request,
            response=response,
            live=live,
            documents=self.documents,
        )
        if not live and negotiate(request.headers.get("accept")) == GRAPHQL_RESPONSE:
            response.media_type = GRAPHQL_RESPONSE  # read by create_response and execute_operation
        header = request.headers.get("authorization", "")
        if header and not live:
            ctx.token = bearer_token(header)  # ``logout`` revokes it
            await self._authenticate(ctx, ctx.token)
            if isinstance(ctx.auth_problem, SignInRefused) and ctx.auth_problem.unavailable:
                raise HTTPException(503, ctx.auth_problem.message)  # the provider's keys cannot be read
        if not live and self.db.replicas is not None:
            self.read_positions.begin(request, ctx.token)
        return ctx

    async def _authenticate(self, ctx: Context, token: str) -> None:
        """Sets ``ctx.actor``, or ``ctx.auth_problem`` to say why not (server/credentials.py)."""
        checked = await self.credentials.resolve(token, remember=not ctx.live)
        if not isinstance(checked, Actor):
            ctx.auth_problem = checked
        else:
            ctx.actor = checked

    async def on_ws_connect(self, context: Context) -> None:  # type: ignore[override]
        """Authenticates the connection_init payload's ``authorization``; a refusal closes the
        connection with 4403 and the reason in words (``CasewayWebSocket.close``)."""
        params = context.connection_params if isinstance(context.connection_params, dict) else {}
        header = str(params.get("authorization") or params.get("Authorization") or "")
        context.token = bearer_token(header)
        if identity.token_shape_problem(context.token) is None:  # ours: batched with the others arriving (a storm)
            checked = await self.token_checks.check(context.token)
            if isinstance(checked, Actor) and checked.token_id is not None:  # an API token's use, noted
                await self.credentials.note_use(checked.token_id)
        else:  # another kind of credential, or a malformed one: the one sequence says which (server/credentials.py)
            checked = await self.credentials.resolve(context.token, remember=False)
        if isinstance(checked, Actor):
            context.actor = checked
        else:
            context.auth_problem = checked
        if context.actor is None:
            reason = context.request.scope[REFUSAL] = auth_message(context.auth_problem)
            raise ConnectionRejectionError({"message": reason})  # the payload: the legacy protocol's answer
        self.live.add(context)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        except ClientDisconnect:  # the client went away mid-request: nothing to answer, nothing to log
            return

    async def run(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        """strawberry's, its refusals (bad JSON, no query, a GET mutation) answered as GraphQL
        errors with a code rather than plain text; each HTTP request measured and logged."""
        if self.is_websocket_request(request):
            return await super().run(request, *args, **kwargs)
        started = time.perf_counter()
        try:
            response = await super().run(request, *args, **kwargs)
        except HTTPException as refusal:
            response = error_response(refusal.status_code, refusal.reason)
        except StarletteHTTPException as refusal:  # the form parser's: a multipart body it cannot read
            response = error_response(refusal.status_code, unreadable_form(refusal))
        except Exception as error:  # before any GraphQL ran (the token's check): the database, if unavailable
            if not database_unavailable(error):
                raise
            log.warning("the database is unavailable: %s", error)
            response = error_response(503, UNAVAILABLE_MESSAGE, "UNAVAILABLE")
            response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        finally:  # a multipart request's spooled files (uploads): closed, so their temporary files go now
            await request.close()
        seconds = time.perf_counter() - started
        operation, outcome, user_id = request.scope.get(OBSERVED) or (
            None,
            "refused" if response.status_code >= 400 else "page",
            None,
        )
        metrics.request_done(operation, outcome, seconds)
        request_logged(
            method=request.method,
            path=request.url.path,
            status=response.status_code,
            operation=operation,
            outcome=outcome,
            user_id=user_id,
            seconds=seconds,
        )
        return response

    def decode_json(self, data: str | bytes) -> object:
        """server/request_limits.py's ``decode_json``: every failure a client's mistake (400)."""
        return decode_json(data)

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
        return self.web.graphiql()  # from Caseway's own assets (server/web.py)

    async def execute_operation(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """strawberry's; its time limit is the schema's (schema/limits/), so that WebSocket
        operations have it too."""
        context = kwargs.get("context")
        try:
            result = await super().execute_operation(*args, **kwargs)
        finally:  # the request's read session goes back to the pool
            if isinstance(context, Context):
                await context.close()
        request, sub_response = kwargs["request"], kwargs.get("sub_response")
        if not isinstance(result, ExecutionResult):  # a batch, or a subscription's stream
            return result
        rejected = request_error_status(result) if result.errors else None
        codes = [(e.extensions or {}).get("code") for e in result.errors or ()]
        if sub_response is not None and "UNAVAILABLE" in codes:
            sub_response.status_code = 503  # the database: the client may try again (resolvers/errors.py)
            sub_response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        if rejected is not None and getattr(sub_response, "media_type", None) == GRAPHQL_RESPONSE:
            sub_response.status_code = rejected  # a request error: its status, and no data entry (process_result)
            request.scope[REQUEST_ERROR] = True
        if sub_response is not None:  # HTTP: for the metrics and the access log (``run``)
            data = kwargs.get("request_data")
            name = getattr(data, "operation_name", None) or metrics.operation_name(getattr(data, "query", None))
            outcome = "ok" if not result.errors else "rejected" if rejected is not None else "error"
            actor = getattr(context, "actor", None)
            request.scope[OBSERVED] = (name, outcome, actor.user_id if actor is not None else None)
        return result

    async def process_result(self, request: Any, result: ExecutionResult) -> Any:  # type: ignore[override]
        body = await super().process_result(request, result)
        return without_data(body) if request.scope.get(REQUEST_ERROR) else body

    def create_response(self, response_data: Any, sub_response: Response) -> Response:  # type: ignore[override]
        """strawberry's, in the media type the client asked for (server/media_types.py)."""
        response = super().create_response(response_data, sub_response)
        if self.db.replicas is not None:
            self.read_positions.finish(response)
        if sub_response.media_type == GRAPHQL_RESPONSE:
            response.headers["content-type"] = f"{GRAPHQL_RESPONSE}; charset=utf-8"
        return response


def tune_garbage_collector() -> None:
    """A nested read allocates tens of thousands of short-lived containers; at the default
    threshold (700) the collector ran dozens of times per request, each full pass walking
    every long-lived object (schema, specs, modules): 13% of R1. Freeze what start-up made and
    collect the young generation every 50,000 allocations instead.

    A request's cyclic garbage is still freed: measured in-process (issue 47), after 1,000 nested
    reads 36,000 objects of garbage were waiting, as after 200 distinct hostile documents (42,000),
    and the RSS grew 9 and 14 MB; a full collection ten times as often (50,000, 20, 10) left
    the same. The ~21 MB each hostile document had left behind were not cycles waiting for the
    collector but strawberry's parse and validation caches keeping every document's tree (0.9 MB
    parsed) and errors: schema/limits/documents.py keeps valid documents only."""
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


def create_app(
    settings: Settings | None = None, *, db: Database | None = None, documents: DocumentService | None = None
) -> Starlette:
    """The server; ``documents`` replaces the document store and clock the settings give (tests)."""
    settings = settings or Settings()
    db = db or Database(
        settings.database_url,
        pool_size=settings.db_pool_size,
        direct_url=settings.database_direct_url,
        replica_urls=settings.replica_urls,
        replica_max_lag_ms=settings.replica_max_lag_ms,
    )
    actor_cache = ActorCache(settings.auth_cache_seconds)
    oidc = OidcSignIn(settings, db) if settings.oidc_issuer else None  # the provider's tokens
    credentials = Credentials(db, actor_cache, oidc=oidc)
    web = WebAssets(settings.web_dir)
    documents = documents or DocumentService(settings)
    configure_jobs(settings)  # the process's, for what runs outside any app (server/wiring.py)
    configure_mail(settings, db)
    graphql = CasewayGraphQL(db, settings, credentials, web, documents)
    background = graphql.background = Background(
        db, settings, actor_cache=actor_cache, documents=documents, recheck=graphql.live.recheck
    )
    wiring = Wiring.of(settings, db, background.publisher)  # this app's own, set around its calls

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        tune_garbage_collector()
        introspection.warm(schema._schema)  # the first GraphiQL to open does not wait for it
        tokens = wiring.set()  # the background tasks started here inherit it
        await background.start()
        try:
            yield
        finally:
            await background.stop()
            if graphql.oidc is not None:
                await graphql.oidc.provider.close()
            await stop_within("the database pool", db.dispose)
            metrics.process_stopping()
            wiring.reset(tokens)

    async def root(request: Request) -> Response:
        return web.dashboard()

    app = Starlette(
        routes=[
            Route("/", root),
            Route("/health", health),
            Route("/ready", ready_endpoint(db, lambda: background.tasks)),
            Route("/metrics", metrics_endpoint),
            Route("/graphql", graphql, methods=["GET", "POST"]),
            Route("/documents/{id}", download_endpoint(db, documents, credentials), methods=["GET"]),
            Route("/unsubscribe", unsubscribe_endpoint(db), methods=["GET", "POST"]),
            WebSocketRoute("/graphql", graphql),
            *oidc_routes(graphql.oidc),
            *web.routes(),
        ],
        middleware=[
            Middleware(Wired, wiring=wiring),  # this app's mail, webhooks, job policies, publisher
            # Other origins' pages may call the HTTP endpoint as they may open a WebSocket;
            # same-origin pages and non-browser clients send no preflight and are unaffected.
            Middleware(
                CORSMiddleware,
                allow_origins=settings.allowed_origins,
                allow_methods=["GET", "POST"],
                allow_headers=["Authorization", "Content-Type", "Caseway-Read-After"],
                expose_headers=["Caseway-Read-After"],
                max_age=600,
            ),
            Middleware(BodyLimit, max_bytes=settings.max_body_bytes, upload_bytes=settings.max_document_bytes),
        ],
        lifespan=lifespan,
    )
    app.state.db = db
    app.state.background = background
    app.state.hub = background.hub
    app.state.actor_cache = actor_cache
    app.state.credentials = credentials
    app.state.sweeper = background.sweeper
    app.state.job_runner = background.job_runner
    app.state.settings = settings
    app.state.documents = documents
    app.state.oidc = graphql.oidc
    return app
