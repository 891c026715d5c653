"""A job's log entries about its case (``job_completed``, ``job_failed``, ``job_stalled``,
``job_retried``, ``job_resumed``), written and notified like any other entry of the case.

The jobs wing sits below the case machinery (a case's actions write jobs), so it cannot load a
case itself: this writer is handed down to ``engine.jobs.records`` when the engine package is
imported (engine/__init__.py imports this module)."""

from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from engine.cases.context import load_case
from engine.history import activity
from engine.jobs import records
from engine.notify import notifications


@records.log_case_entries_with
async def write_job_entry(
    session: AsyncSession,
    case_id: str,
    kind: str,
    now: datetime,
    *,
    comment: str,
    data: dict[str, Any],
    actor_id: str,
) -> None:
    ctx = await load_case(session, case_id=case_id)
    entry = await activity.record(
        session, kind=kind, actor_id=actor_id, about=ctx.item, case_id=case_id, comment=comment, data=data, at=now
    )
    await notifications.notify(ctx, entry, assigned_parties=())


__all__ = ["write_job_entry"]
