"""Reading jobs and pulling their levers (``retryJob``, ``resumeJob``) for GraphQL and the CLI.

A job is seen by whoever may read its workflow item's log (viewHistory on the item, its
subproject or project, or a role in its case: engine/people/visibility.py), admins all: it was made by
an entry of that log, and its input, progress and idempotency key tell what the log tells.
workflowItem.view alone shows the item, not its jobs; a hidden job reads as missing. Its error's
``detail`` (an unexpected exception's message) is for admins only.
"""

from typing import Any

from sqlalchemy import func, select

from engine.clock import SYSTEM_CLOCK
from engine.jobs import levers
from engine.people.actors import Actor
from models import Job, kind_of
from resolvers.context import Context
from resolvers.job_loads import visible_jobs
from resolvers.mutations import run
from resolvers.pagination import Page, check_first, check_id_cursor, invalid_argument, keyset_page, past_id
from resolvers.records import records as rows_of


async def jobs_page(
    ctx: Context,
    *,
    state: str | None,
    case_id: str | None,
    first: int | None,
    after: str | None,
    counted: bool = True,
) -> Page[Any]:
    """``jobs(state, caseId, first, after)``: oldest first, keyset by id; counted only when
    ``totalCount`` is selected (a count reads every visible job)."""
    limit = check_first(first)
    query = visible_jobs(ctx.viewer)
    if state is not None:
        query = query.where(Job.state == state)
    if case_id is not None:
        if kind_of(case_id) != "Case":
            raise invalid_argument("caseId is not the id of a case.", "caseId")
        query = query.where(Job.case_id == case_id)
    total = (await ctx.session.scalar(select(func.count()).select_from(query.subquery())) or 0) if counted else None
    if check_id_cursor(after):
        query = query.where(past_id(Job.id, after))
    found = rows_of(await ctx.session.execute(query.order_by(Job.id).limit(limit + 1)))
    return keyset_page(found, limit=limit, total=total, cursor=lambda r: r.id)


async def retry_job(ctx: Context, job_id: str) -> tuple[Job | None, list[Any]]:
    async def op(session: Any, actor: Actor) -> Job:
        return await levers.retry(session, actor=actor, job_id=job_id, now=SYSTEM_CLOCK.now())

    return await run(ctx, op)


async def resume_job(ctx: Context, job_id: str) -> tuple[Job | None, list[Any]]:
    async def op(session: Any, actor: Actor) -> Job:
        return await levers.resume(session, actor=actor, job_id=job_id, now=SYSTEM_CLOCK.now())

    return await run(ctx, op)
