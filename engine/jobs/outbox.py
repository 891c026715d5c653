"""The outbox: a spec's jobs become job rows in the transaction of the action
that declares them, so a rolled-back action leaves no job and a committed one always has its
jobs. Nothing external happens here; the runner runs them after the commit.

In a spec, ``side_effects`` lists in-process side effects by name (engine/cases/side_effects.py) and
jobs as ``{kind: {args}}`` (or a bare kind name, for a kind without arguments). An entry that
names neither is refused when the workflow is defined (INVALID_SPEC), as are arguments the kind
refuses, e.g. a webhook endpoint the operator has not configured.
"""

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from engine.history.activity import LogEntry
from engine.jobs.kinds import job_kinds
from models import Case, Job, WorkflowItem, new_id, unit_of_work


class CaseContext(Protocol):
    """What ``enqueue`` reads of an engine.cases.context.CaseContext; not imported from there, since
    engine.cases.context needs the workflows, which check jobs with this module."""

    session: AsyncSession
    case: Case
    item: WorkflowItem


def check_job(kind: str, args: Any, *, defining: bool) -> list[str] | None:
    """The problems with declaring a job ``{kind: args}``: None when no such kind exists."""
    known = job_kinds().get(kind)
    if known is None:
        return None
    if not isinstance(args, Mapping):
        return [f"The arguments of {kind!r} must be an object."]
    return known.check_args(args, defining=defining)


def check_workflow_job(kind: str, args: Mapping[str, Any], *, workflow: str, fields: Collection[str]) -> list[str]:
    """The problems with a job ``{kind: args}`` that only the whole workflow shows (a webhook
    endpoint configured to send a case field the workflow does not declare)."""
    known = job_kinds().get(kind)
    return [] if known is None else known.check_workflow(args, workflow=workflow, fields=fields)


async def enqueue(
    ctx: CaseContext, entry: LogEntry, decls: Sequence[tuple[str, Mapping[str, Any]]], now: datetime
) -> list[Job]:
    """Write the jobs ``(kind, args)`` of an action just logged as ``entry``, due now, in the
    caller's transaction."""
    kinds = job_kinds()
    made = []
    for kind, args in decls:
        plan = kinds[kind].plan(args, case_id=ctx.case.id)
        job_id = new_id("job")
        job = Job(
            id=job_id,
            kind=kind,
            case_id=ctx.case.id,
            workflow_item_id=ctx.item.id,
            activity_id=entry.id,
            state="PENDING",
            step="",
            attempts=0,
            next_attempt_at=now,
            input=plan.input,
            progress={},
            idempotency_key=job_id,  # stable across retries and redeliveries
            serialization_key=plan.serialization_key or job_id,
            created_at=now,
            updated_at=now,
        )
        ctx.session.add(job)
        made.append(job)
    if made:
        jobs_were_written(ctx.session)
    return made


def jobs_were_written(session: AsyncSession) -> None:
    """Mark the transaction's unit of work: once it commits, the job runners are woken."""
    unit_of_work(session).jobs = True


__all__ = ["check_job", "check_workflow_job", "enqueue", "jobs_were_written"]
