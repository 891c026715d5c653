"""The endpoints an operator's tools read: ``/health``, ``/ready`` and ``/metrics``.

``/health`` says the process is up and answering (a liveness probe: restart it if not).
``/ready`` says it can serve (a readiness probe: send it traffic only if so): the database
answers, its migrations are at the head revision of this code, and the background tasks
(event hub, timer sweeper, live-connection re-check, checkpoint signer) are running. Either
answers JSON; ``/ready`` answers 503 and says which check failed.
``/metrics`` is Prometheus's text format (server/metrics.py).
"""

import asyncio
from collections.abc import Callable
from typing import Any

from sqlalchemy import text
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from models import Database
from server import metrics
from server.migrate import head_revision, revisions

READY_TIMEOUT = 2.0  # seconds the database may take to answer a readiness check


async def health(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})


async def _database_check(db: Database) -> tuple[str | None, str | None]:
    """(problem with the database, problem with its migrations), None where all is well."""
    try:
        async with asyncio.timeout(READY_TIMEOUT), db.engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
            current = await revisions(connection)
    except Exception as error:  # any failure means: not ready, and why
        first_line = (str(error).splitlines() or [""])[0][:200]
        return f"The database did not answer: {type(error).__name__}: {first_line}", None
    head = head_revision()
    if head not in current:
        at = ", ".join(current) or "none"
        return None, f"The database is at migration {at}, not {head}: run `caseway migrate`."
    return None, None


def ready_endpoint(db: Database, tasks: Callable[[], dict[str, Any]]) -> Callable[[Request], Any]:
    """``/ready`` over this database and the background tasks ``tasks()`` names (a task, or
    None where it is not running by design)."""

    async def ready(request: Request) -> JSONResponse:
        database, migrations = await _database_check(db)
        stopped = sorted(name for name, task in tasks().items() if task is not None and task.done())
        checks: dict[str, Any] = {
            "database": database or "ok",
            "migrations": migrations or ("ok" if database is None else "unknown"),
            "background_tasks": f"stopped: {', '.join(stopped)}" if stopped else "ok",
        }
        if db.replicas is not None:  # reported, not required: the primary answers without them
            checks["replicas"] = db.replicas.report()
        ok = database is None and migrations is None and not stopped
        return JSONResponse(
            {"status": "ready" if ok else "not ready", "checks": checks}, status_code=200 if ok else 503
        )

    return ready


async def metrics_endpoint(request: Request) -> Response:
    body, content_type = metrics.exposition()
    return Response(body, media_type=content_type)


__all__ = ["health", "metrics_endpoint", "ready_endpoint"]
