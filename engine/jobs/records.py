"""The job record's state machine and its persistence.

    PENDING ──claim──▶ RUNNING ──▶ COMPLETED
       ▲                  │  ├──▶ STALLED ──due / resumeJob──▶ RUNNING …
       │                  │  └──▶ FAILED  (Permanent, or attempts exhausted)
       └──── retryJob ────┴─────── FAILED

Write-ahead: a claim marks the job RUNNING and counts the attempt, and the caller commits that
*before* the handler runs. A RUNNING job's ``next_attempt_at`` is its lease; a job still RUNNING
past it was left by a runner that died (or lost its database) and is claimed again to be
reconciled. Outcomes are fenced by the attempt number, so a runner that comes back late cannot
overwrite what another one recorded since. ``progress`` only gains keys; ``input`` never changes.

Jobs that share a serialization key run one at a time in creation order: a job is claimable
only while no older job of its key is unfinished (PENDING, RUNNING or STALLED). A FAILED job
does not hold its key (it waits for a person; the jobs behind it go on), so a job retried by
``retryJob`` may arrive after later ones.

These functions work in the caller's transaction and never commit.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, exists, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from engine import activity, notifications, permissions
from engine.actors import SYSTEM, Actor
from engine.context import load_case
from engine.errors import DomainError, ErrorCode, not_found
from engine.jobs.kinds import JobError, Permanent, Reconciled, Transient, job_kinds, policy_for
from engine.jobs.outbox import jobs_were_written
from models import Activity, Job

PENDING, RUNNING, STALLED, COMPLETED, FAILED = "PENDING", "RUNNING", "STALLED", "COMPLETED", "FAILED"
UNFINISHED = (PENDING, RUNNING, STALLED)
MOVES: dict[str, frozenset[str]] = {
    PENDING: frozenset({RUNNING}),
    RUNNING: frozenset({COMPLETED, STALLED, FAILED}),
    STALLED: frozenset({RUNNING, STALLED}),
    FAILED: frozenset({PENDING}),
    COMPLETED: frozenset(),
}
INTERNAL_MESSAGE = "The job failed because of an internal error; the server log has the details."

_older = aliased(Job, name="older")
_BLOCKED = exists().where(
    _older.serialization_key == Job.serialization_key, _older.id < Job.id, _older.state.in_(UNFINISHED)
)


def move(job: Job, to: str, *, now: datetime) -> None:
    """Change a job's state along an edge of the machine (anything else is a programming error)."""
    if to not in MOVES[job.state]:
        raise ValueError(f"a job cannot go from {job.state} to {to}")
    job.state, job.updated_at = to, now


def merged(progress: Mapping[str, Any], more: Mapping[str, Any] | None) -> dict[str, Any]:
    """Append-only progress: new keys are added; a key already set keeps its value."""
    result = dict(progress)
    for key, value in (more or {}).items():
        result.setdefault(key, value)
    return result


@dataclass
class Claim:
    """A job claimed by this runner: a snapshot of it as committed, the attempt it runs (the
    fence of its outcome), and whether it is to be reconciled (found RUNNING past its lease)."""

    id: str
    kind: str
    case_id: str
    workflow_item_id: str
    activity_id: str
    input: dict[str, Any]
    progress: dict[str, Any]
    step: str
    attempt: int
    idempotency_key: str
    reconcile: bool
    entry: dict[str, Any] = field(default_factory=dict)


async def claim_due(
    session: AsyncSession, *, now: datetime, limit: int, lease: Callable[[Job], float] | None = None
) -> list[Claim]:
    """Claim up to ``limit`` jobs due at ``now``, oldest due first, at most one per serialization
    key: PENDING and STALLED ones become RUNNING with one attempt more; RUNNING ones past their
    lease are claimed to be reconciled. PostgreSQL: ``FOR UPDATE SKIP LOCKED``, so runners in
    several processes each take different jobs."""
    query = (
        select(Job)
        .where(Job.state.in_(UNFINISHED), Job.next_attempt_at <= now, ~_BLOCKED)
        .order_by(Job.next_attempt_at, Job.id)
        .limit(limit)
        .with_for_update(of=Job, skip_locked=True)
    )
    kinds = job_kinds()
    claims = []
    for job in (await session.scalars(query)).all():
        kind = kinds.get(job.kind)
        reconcile = job.state == RUNNING
        if not reconcile:
            move(job, RUNNING, now=now)
            job.attempts += 1
            job.step = job.step or (kind.first_step if kind is not None else "run")
        seconds = lease(job) if lease is not None else (kind.lease_seconds(job.input) if kind is not None else 60.0)
        job.next_attempt_at, job.updated_at = now + timedelta(seconds=seconds), now
        claims.append(
            Claim(
                id=job.id,
                kind=job.kind,
                case_id=job.case_id,
                workflow_item_id=job.workflow_item_id,
                activity_id=job.activity_id,
                input=dict(job.input),
                progress=dict(job.progress),
                step=job.step,
                attempt=job.attempts,
                idempotency_key=job.idempotency_key,
                reconcile=reconcile,
            )
        )
    if claims:
        entries = await session.scalars(select(Activity).where(Activity.id.in_({c.activity_id for c in claims})))
        by_id = {row.id: entry_json(row) for row in entries}
        for claim in claims:
            claim.entry = by_id.get(claim.activity_id, {})
    return claims


def entry_json(row: Activity) -> dict[str, Any]:
    """The log entry a job came from, as handlers (and webhook receivers) see it."""
    return {
        "id": row.id,
        "seq": row.seq,
        "kind": row.kind,
        "at": row.at.isoformat(),
        "actorId": row.actor_id,
        "projectId": row.project_id,
        "subprojectId": row.subproject_id,
        "workflowItemId": row.workflow_item_id,
        "caseId": row.case_id,
        "action": row.action,
        "comment": row.comment,
        "data": row.data,
        "hash": row.hash,
    }


async def checkpoint(
    session: AsyncSession, claim: Claim, *, step: str, progress: Mapping[str, Any], now: datetime
) -> bool:
    """Record a step's progress mid-run (and the step now running); False if the claim was lost."""
    job = await _fenced(session, claim)
    if job is None:
        return False
    job.progress = merged(job.progress, progress)
    job.step, job.updated_at = step, now
    claim.progress, claim.step = dict(job.progress), step
    return True


async def complete(session: AsyncSession, claim: Claim, *, progress: Mapping[str, Any] | None, now: datetime) -> bool:
    """The handler succeeded. A first attempt's success is one fenced UPDATE (the common case,
    which logs nothing); a success after a retry or a reconciliation is logged (``job_completed``)."""
    if claim.attempt == 1 and not claim.reconcile:
        done = await session.execute(
            update(Job)
            .where(Job.id == claim.id, Job.state == RUNNING, Job.attempts == claim.attempt)
            .values(state=COMPLETED, progress=merged(claim.progress, progress), next_attempt_at=None, updated_at=now)
        )
        return bool(done.rowcount)
    job = await _fenced(session, claim)
    if job is None:
        return False
    move(job, COMPLETED, now=now)
    job.progress = merged(job.progress, progress)
    job.next_attempt_at, job.error = None, None
    await _log(
        session, job, "job_completed", now, comment=f"The {job.kind} job completed after {job.attempts} attempts."
    )
    return True


async def complete_first_attempts(
    session: AsyncSession, done: list[tuple[Claim, Mapping[str, Any] | None]], *, now: datetime
) -> None:
    """Many first-attempt successes (``complete``'s common case) in one executemany UPDATE,
    each fenced by its attempt: the runner records a burst of deliveries with one commit."""
    rows = [{"job_id": c.id, "fence": c.attempt, "done": merged(c.progress, p)} for c, p in done]
    connection = await session.connection()
    await connection.execute(_COMPLETE_FIRST, [{**row, "now": now} for row in rows])


_COMPLETE_FIRST = (
    Job.__table__.update()
    .where(Job.id == bindparam("job_id"), Job.state == RUNNING, Job.attempts == bindparam("fence"))
    .values(state=COMPLETED, progress=bindparam("done"), next_attempt_at=None, updated_at=bindparam("now"))
)


async def failed_attempt(
    session: AsyncSession,
    claim: Claim,
    *,
    error: JobError,
    detail: str | None,
    now: datetime,
    delay: float | None = None,
) -> str | None:
    """The handler failed: STALLED (retried after the policy's delay) or FAILED (Permanent, or the
    last attempt). ``detail`` is for operators only (an unexpected exception). The new state,
    or None if the claim was lost."""
    job = await _fenced(session, claim)
    if job is None:
        return None
    policy = policy_for(job.kind)
    job.error = {"step": job.step, "code": error.code, "message": error.message, "recoverable": error.recoverable}
    if detail:
        job.error["detail"] = detail
    if not error.recoverable or policy.exhausted(job.attempts):
        move(job, FAILED, now=now)
        job.next_attempt_at = None
        await _log(session, job, "job_failed", now, comment=error.message)
    else:
        move(job, STALLED, now=now)
        wait = policy.delay(job.attempts) if delay is None else delay
        job.next_attempt_at = now + timedelta(seconds=wait)
        await _log(session, job, "job_stalled", now, comment=error.message)
    return job.state


async def reconciled(session: AsyncSession, claim: Claim, *, verdict: Reconciled, now: datetime) -> str | None:
    """A job found RUNNING past its lease, after its kind's ``reconcile``: done, failed, or run
    again at once (the interruption is not the external system's fault; still one attempt)."""
    if verdict is Reconciled.COMPLETED:
        return COMPLETED if await complete(session, claim, progress={"reconciled": True}, now=now) else None
    code, message = (
        ("INTERRUPTED", "The runner stopped while the job ran; it runs again.")
        if verdict is Reconciled.RETRY
        else ("RECONCILED_FAILED", "The external system reports that the job's step failed.")
    )
    error = Transient(code, message) if verdict is Reconciled.RETRY else Permanent(code, message)
    return await failed_attempt(session, claim, error=error, detail=None, now=now, delay=0.0)


async def _fenced(session: AsyncSession, claim: Claim) -> Job | None:
    job = await session.get(Job, claim.id, with_for_update=True, populate_existing=True)
    if job is None or job.state != RUNNING or job.attempts != claim.attempt:
        return None
    return job


async def _log(
    session: AsyncSession, job: Job, kind: str, now: datetime, *, comment: str, actor_id: str | None = None
) -> None:
    """A log entry about the job's item, seen by subscribers and notified like any other."""
    ctx = await load_case(session, case_id=job.case_id)
    data: dict[str, Any] = {"job": {"id": job.id, "kind": job.kind, "state": job.state, "attempts": job.attempts}}
    if job.error and job.state != COMPLETED:
        data["error"] = {key: job.error[key] for key in ("step", "code", "message", "recoverable") if key in job.error}
    if job.state == STALLED and job.next_attempt_at is not None:
        data["retryAt"] = job.next_attempt_at.isoformat()
    entry = await activity.record(
        session,
        kind=kind,
        actor_id=actor_id or SYSTEM.user_id,
        about=ctx.item,
        case_id=job.case_id,
        comment=comment,
        data=data,
        at=now,
    )
    await notifications.notify(ctx, entry, assigned_parties=())


async def _lever(session: AsyncSession, *, actor: Actor, job_id: str) -> Job:
    """A job a person pulls a lever on: visible to them (else NOT_FOUND), and theirs to change
    (``workflowItem.update`` on its item, or admin)."""
    job = await session.get(Job, job_id, with_for_update=True) if job_id.startswith("job_") else None
    if job is None:
        raise not_found("job", job_id)
    try:
        await permissions.require(
            session, actor=actor, resource_id=job.workflow_item_id, intent="workflowItem.update", what="job"
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
    """``retryJob``: a FAILED job starts over (PENDING, due now, attempts reset); progress stays."""
    job = await _lever(session, actor=actor, job_id=job_id)
    _require_state(job, FAILED, ErrorCode.JOB_NOT_FAILED, "retried")
    move(job, PENDING, now=now)
    job.attempts, job.next_attempt_at, job.error = 0, now, None
    await _log(session, job, "job_retried", now, comment="The job was put back to run again.", actor_id=actor.user_id)
    jobs_were_written(session)
    return job


async def resume(session: AsyncSession, *, actor: Actor, job_id: str, now: datetime) -> Job:
    """``resumeJob``: a STALLED job is due now instead of at the end of its backoff."""
    job = await _lever(session, actor=actor, job_id=job_id)
    _require_state(job, STALLED, ErrorCode.JOB_NOT_STALLED, "resumed")
    move(job, STALLED, now=now)
    job.next_attempt_at = now
    await _log(session, job, "job_resumed", now, comment="The job was resumed.", actor_id=actor.user_id)
    jobs_were_written(session)
    return job


async def next_due(session: AsyncSession) -> datetime | None:
    """When the next claimable job falls due (or a lease ends), possibly already past; jobs
    waiting behind an older one of their key do not count (its end wakes the runner)."""
    return await session.scalar(select(func.min(Job.next_attempt_at)).where(Job.state.in_(UNFINISHED), ~_BLOCKED))


__all__ = [
    "COMPLETED",
    "FAILED",
    "PENDING",
    "RUNNING",
    "STALLED",
    "UNFINISHED",
    "Claim",
    "checkpoint",
    "claim_due",
    "complete",
    "complete_first_attempts",
    "entry_json",
    "failed_attempt",
    "merged",
    "move",
    "next_due",
    "reconciled",
    "resume",
    "retry",
]
