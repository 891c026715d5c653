"""W1e, the ceiling of any engine on Caseway's stack: W1's request through the whole Caseway
server (HTTP, authentication, request context, the mutation's transaction and payload) with an
engine that costs nothing, because ``engine.cases.execute`` (which ``engine.execute_action``
calls) is replaced by W2's hand-written statements on the session's own driver connection.

W0 (bench/floor.py) is the floor of the libraries; W1e adds what Caseway does around every
mutation. W1 / W2 can never exceed W1e / W2 here, so W1e tells how much of W1's gap an engine
redesign could close, and how much no engine could.

    CASEWAY_DATABASE_URL=postgresql://… uvicorn --factory bench.engineless:create
"""

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession
from starlette.applications import Starlette

from bench import raw_sql
from engine import cases
from engine.cases import ExecutionResult
from engine.people.actors import Actor
from models import Database
from resolvers.records import record_type
from server.app import create_app
from server.settings import Settings

# What W1's payload reads of its case, as the read path's plain rows carry it, and the workflow
# the mutation's metrics label it with (unknown here: W2's transaction does not read it).
CaseRow = record_type(("id", "version", "workflow_id"))


async def execute(
    session: AsyncSession, *, actor: Actor, workflow_item_id: str | None = None, **_: Any
) -> ExecutionResult:
    """W2's transaction body in the mutation's transaction; answers with the case's new version."""
    connection = await session.connection()
    raw = await connection.get_raw_connection()
    # SQLAlchemy's asyncpg adapter sends BEGIN lazily, with its first statement; W2's statements
    # bypass it, so without this each ran in a transaction of its own: the case's FOR UPDATE lock
    # ended at once, and concurrent requests on one case (frequent on the `small` data) completed
    # one comment instance twice, or found none. Begin as the adapter would, in its name.
    if raw.dbapi_connection._transaction is None:
        await raw.dbapi_connection._start_transaction()
    driver = raw.driver_connection
    case_id, version = await raw_sql.transaction_body(driver, workflow_item_id or "", actor.user_id)
    return ExecutionResult(case=CaseRow(case_id, version, ""), activity=None)


def create(settings: Settings | None = None, *, db: Database | None = None) -> Starlette:
    """Caseway's app in a process whose ``engine.cases.execute`` is the one above (the mutation's
    engine call looks it up at request time); for a process of its own: the patch is not undone."""
    cases.execute = execute
    return create_app(settings, db=db)
