"""Which jobs a viewer may read, and the batch loads of ``job_by_id`` and ``jobs_by_case``.

Apart from resolvers/jobs.py (pages and levers, which build on the request context) so that the
loaders, which the context builds on, import these at the top.
"""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select

from engine.people.actors import Actor
from models import Job, WorkflowItem
from resolvers import visibility
from resolvers.records import records as rows_of

CASE_JOBS = 100  # jobs Case.jobs lists, newest first


def visible_jobs(actor: Actor) -> Any:
    """``select(Job columns)`` limited to the jobs whose item's log the actor may read."""
    query = select(Job.__table__)
    if actor.is_admin:
        return query
    return query.join(WorkflowItem, WorkflowItem.id == Job.workflow_item_id).where(
        visibility.item_visible(actor), visibility.item_log_readable(actor)
    )


async def jobs_by_id(session: Any, viewer: Actor, ids: Sequence[str], in_: Any) -> list[Any]:
    """The loader ``job_by_id``: visible jobs, None for the others."""
    found = {r.id: r for r in rows_of(await session.execute(visible_jobs(viewer).where(in_(Job.id, ids))))}
    return [found.get(i) for i in ids]


async def jobs_by_case(session: Any, viewer: Actor, case_ids: Sequence[str], in_: Any) -> list[list[Any]]:
    """The loader ``jobs_by_case``: each case's newest ``CASE_JOBS`` jobs that the viewer may
    see, one query for all cases (a case is visible with its item; its jobs need its log)."""
    visible = visible_jobs(viewer).where(in_(Job.case_id, case_ids)).subquery()
    rank = func.row_number().over(partition_by=visible.c.case_id, order_by=visible.c.id.desc()).label("rank")
    ranked = select(visible, rank).subquery()
    query = select(*[c for c in ranked.c if c.name != "rank"]).where(ranked.c.rank <= CASE_JOBS)
    grouped: dict[str, list[Any]] = {}
    for row in sorted(rows_of(await session.execute(query)), key=lambda r: r.id, reverse=True):
        grouped.setdefault(row.case_id, []).append(row)
    return [grouped.get(i, []) for i in case_ids]
