"""The ASGI application: Starlette around Strawberry's GraphQL endpoint."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse
from starlette.routing import Route
from strawberry.asgi import GraphQL

from engine import identity
from models import Database
from resolvers.context import Context
from schema import schema
from server.settings import Settings


class CasewayGraphQL(GraphQL):
    """Builds the per-request context: reads the bearer token and resolves the viewer."""

    def __init__(self, db: Database, settings: Settings) -> None:
        super().__init__(schema, graphql_ide="graphiql" if settings.graphiql else None)
        self.db = db
        self.settings = settings

    async def get_context(self, request: Any, response: Any) -> Context:  # type: ignore[override]
        ctx = Context(db=self.db, settings=self.settings, request=request, response=response)
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer "):
            ctx.actor = await identity.authenticate(ctx.session, header[7:].strip())
        return ctx

    async def execute_operation(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        context = kwargs.get("context")
        try:
            return await super().execute_operation(*args, **kwargs)
        finally:  # the request's read session goes back to the pool
            if isinstance(context, Context):
                await context.close()


def create_app(settings: Settings | None = None, *, db: Database | None = None) -> Starlette:
    settings = settings or Settings()
    db = db or Database(settings.database_url, pool_size=settings.db_pool_size)
    graphql = CasewayGraphQL(db, settings)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await db.dispose()

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def root(request: Request) -> RedirectResponse:
        return RedirectResponse("/graphql")

    app = Starlette(
        routes=[Route("/", root), Route("/health", health), Route("/graphql", graphql, methods=["GET", "POST"])],
        lifespan=lifespan,
    )
    app.state.db = db
    app.state.settings = settings
    return app
