"""W0, the floor of Caseway's stack for W1: W2's transaction behind the thinnest GraphQL server
this stack makes (uvicorn, Starlette, strawberry), answering W1's exact request.

No engine, no ORM, no authentication (the bearer token is ignored; W2's actor is taken from
``CASEWAY_FLOOR_ACTOR``), parsed and validated documents cached as Caseway caches them. What
it costs on top of W2 is what any executeAction served by this stack costs whatever its engine
does: HTTP, GraphQL and the event loop. So W1 / W2 can never exceed W0 / W2 here, and W1 / W0
is the share of that floor Caseway keeps (its engine, ORM and request context cost the rest).

    CASEWAY_DATABASE_URL=postgresql://… CASEWAY_FLOOR_ACTOR=usr_… uvicorn bench.floor:app
"""

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
import strawberry
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from strawberry.asgi import GraphQL
from strawberry.extensions import ParserCache, ValidationCache

from bench import raw_sql


@strawberry.input
class ExecuteActionInput:
    workflow_item_id: strawberry.ID
    action: str
    comment: str | None = None


@strawberry.type
class Case:
    version: int


@strawberry.type
class UserError:
    code: str


@strawberry.type
class ExecuteActionPayload:
    case: Case | None
    user_errors: list[UserError]


@strawberry.type
class Query:
    ok: bool = True


@strawberry.type
class Mutation:
    @strawberry.mutation
    async def execute_action(self, info: strawberry.Info, input: ExecuteActionInput) -> ExecuteActionPayload:
        pool: asyncpg.Pool = info.context["request"].app.state.pool
        async with pool.acquire() as connection, connection.transaction():
            _, version = await raw_sql.transaction_body(
                connection, input.workflow_item_id, os.environ["CASEWAY_FLOOR_ACTOR"]
            )
        return ExecuteActionPayload(case=Case(version=version), user_errors=[])


schema = strawberry.Schema(
    query=Query,
    mutation=Mutation,
    extensions=[lambda: ParserCache(maxsize=512), lambda: ValidationCache(maxsize=512)],
)


@asynccontextmanager
async def _pool(app: Starlette) -> AsyncIterator[None]:
    # As many connections as Caseway's pool may open (models/db.py: 10, and 20 more on demand).
    app.state.pool = await asyncpg.create_pool(os.environ["CASEWAY_DATABASE_URL"], min_size=10, max_size=30)
    yield
    await app.state.pool.close()


app = Starlette(
    routes=[
        Route("/health", lambda request: PlainTextResponse("ok")),
        Route("/graphql", GraphQL(schema), methods=["GET", "POST"]),
    ],
    lifespan=_pool,
)
