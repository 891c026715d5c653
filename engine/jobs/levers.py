"""The levers people pull on a job: ``retryJob`` (a FAILED job starts over) and ``resumeJob``
(a STALLED job is due now). Each finds a job its caller may see and change, checks the state it
works on, moves it (engine/jobs/records.py's state machine) and logs it on the job's item.

These functions work in the caller's transaction and never commit.
"""

from collections.abc import Collection
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.errors import DomainError, ErrorCode, not_found
from engine.jobs.outbox import jobs_were_written
from engine.jobs.records import FAILED, PENDING, STALLED, UNFINISHED, log_about, move
from engine.people import permissions
from engine.people.actors import Actor
from models import Job

__all__ = ["LEVER_INTENT", "LEVER_STATE", "may_pull", "resume", "retry"]

# What a lever needs besides seeing the job: this intent on the job's item (or admin), and the
# job in the lever's state. ``may_pull`` is the rule as the page asks it (``Job.canRetry``).
LEVER_INTENT = "workflowItem.update"
LEVER_STATE = {"retry": FAILED, "resume": STALLED}


def may_pull(lever: str, *, state: str, item_id: str | None, is_admin: bool, held: Collection[str]) -> bool:
    """Whether a viewer who sees the job may pull ``lever`` on it now, ``held`` being their
    intents on its item: the rule ``_lever`` and ``_require_state`` enforce, for a page that
    shows the button only to whom it would work for."""
    if state != LEVER_STATE[lever]:
        return False
    return is_admin or (item_id is not None and LEVER_INTENT in held)


async def _lever(session: AsyncSession, *, actor: Actor, job_id: str) -> Job:
    """A job a person pulls a lever on: visible to them (else NOT_FOUND), and theirs to change
    (``LEVER_INTENT`` on its item, or admin)."""
    job = await session.get(Job, job_id, with_for_update=True) if job_id.startswith("job_") else None
    if job is None or (job.workflow_item_id is None and not actor.is_admin):  # a job of no case: admins'
        raise not_found("job", job_id)
    if job.workflow_item_id is None:
        return job
    try:
        await permissions.require(
            session, actor=actor, resource_id=job.workflow_item_id, intent=LEVER_INTENT, what="job"
        )
    except DomainError as refused:
        if refused.code == ErrorCode.NOT_FOUND:  # hidden ≡ missing: name the job, never its item
            raise not_found("job", job_id) from None
        raise
    return job


def _require_state(job: Job, state: str, code: ErrorCode, done: str) -> None:
    """A lever works on jobs in one state; any other is told which state it is in."""
    if job.state != state:
        raise DomainError(code, f"Only a {state} job can be {done}; this one is {job.state}.", ["id"])


async def retry(session: AsyncSession, *, actor: Actor, job_id: str, now: datetime) -> Job:
    """``retryJob``: a FAILED job starts over (PENDING, due now, attempts reset); progress and
    the fencing token stay. It takes its place among its key's jobs again, so the key's other
    unfinished jobs are locked first (PostgreSQL): a claim of one of them that is committing
    finishes before this commits, and any claim that sees this job PENDING also sees that one
    RUNNING. Otherwise a claim with an older snapshot could start this job while a later one of
    its key runs."""
    job = await _lever(session, actor=actor, job_id=job_id)
    _require_state(job, LEVER_STATE["retry"], ErrorCode.JOB_NOT_FAILED, "retried")
    await session.execute(
        select(Job.id)
        .where(Job.serialization_key == job.serialization_key, Job.state.in_(UNFINISHED))
        .with_for_update()
    )
    move(job, PENDING, now=now)
    job.attempts, job.next_attempt_at, job.error = 0, now, None
    await log_about(
        session, job, "job_retried", now, comment="The job was put back to run again.", actor_id=actor.user_id
    )
    jobs_were_written(session)
    return job


async def resume(session: AsyncSession, *, actor: Actor, job_id: str, now: datetime) -> Job:
    """``resumeJob``: a STALLED job is due now instead of at the end of its backoff."""
    job = await _lever(session, actor=actor, job_id=job_id)
    _require_state(job, LEVER_STATE["resume"], ErrorCode.JOB_NOT_STALLED, "resumed")
    move(job, STALLED, now=now)
    job.next_attempt_at = now
    await log_about(session, job, "job_resumed", now, comment="The job was resumed.", actor_id=actor.user_id)
    jobs_were_written(session)
    return job
