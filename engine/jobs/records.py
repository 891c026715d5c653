"""The job record's state machine and its persistence.

    PENDING ──claim──▶ RUNNING ──▶ COMPLETED
       ▲                  │  ├──▶ STALLED ──due / resumeJob──▶ RUNNING …
       │                  │  └──▶ FAILED  (Permanent, or attempts exhausted)
       └──── retryJob ────┴─────── FAILED

Write-ahead: a claim marks the job RUNNING and counts the attempt, and the caller commits that
*before* the handler runs. A RUNNING job's ``next_attempt_at`` is its lease: the kind's timeout
plus ``LEASE_MARGIN``, counted from the claim. The runner cancels a handler at the timeout,
counted from after the claim's commit, so a live runner records its outcome within the lease; a
job still RUNNING past it was left by a runner that died (or lost its database) and is claimed
again to be reconciled.

Fencing: every claim (reconciliations included, and after ``retryJob``) adds one to ``claims``,
which nothing resets; a runner records an outcome or a checkpoint only while the job is still
RUNNING under the token it claimed (``Claim.token``). A runner that outlived its lease and comes
back after someone else claimed the job changes nothing. (``attempts`` cannot fence: a
reconciliation reuses it and ``retryJob`` resets it.)

Order: jobs that share a serialization key run one at a time in the order of the log entries
they came from (``Activity.seq``, then id for the jobs of one entry). ``seq`` is handed out
under the log's lock held until commit (engine/history/activity.py), so it is commit order: a job whose
transaction commits late comes after the jobs that committed before it, never before them, as
an id order (taken when the job is built, in any process) would have it. A job is claimable only
while no job of its key is RUNNING (itself aside: a reconciliation) and no job of its key with
an earlier entry is PENDING or STALLED. A FAILED job does not hold its key (it waits for a
person; the jobs behind it go on); ``retryJob`` puts it back in its place: after the job of its
key now running, before those not yet started.

The levers a person pulls (``retryJob``, ``resumeJob``) are engine/jobs/levers.py's. These
functions work in the caller's transaction and never commit.
"""

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import JSON, Text, bindparam, cast, exists, func, literal, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from engine.jobs.kinds import JobError, JobKind, Permanent, Reconciled, Transient, job_kinds, policy_for
from engine.people.actors import SYSTEM
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

# The seconds a lease outlasts the kind's timeout: time for the claim's commit (the lease is
# counted from before it, the timeout from after it) and for recording the outcome.
LEASE_MARGIN = 5.0

_entry = aliased(Activity, name="entry")  # the log entry a job came from: its seq is its place
_running = aliased(Job, name="running")
_waiting = aliased(Job, name="waiting")
_waiting_entry = aliased(Activity, name="waiting_entry")
# Another job of the key is running (a reconciliation claims a RUNNING job: not itself).
_KEY_BUSY = exists().where(
    _running.serialization_key == Job.serialization_key, _running.state == RUNNING, _running.id != Job.id
)
# A job of the key from an earlier log entry (or of the same entry, made before) waits to run.
_EARLIER_WAITING = exists().where(
    _waiting.serialization_key == Job.serialization_key,
    _waiting.state.in_((PENDING, STALLED)),
    _waiting_entry.id == _waiting.activity_id,
    tuple_(_waiting_entry.seq, _waiting.id) < tuple_(_entry.seq, Job.id),
)
_CLAIMABLE = (Job.state.in_(UNFINISHED), ~_KEY_BUSY, ~_EARLIER_WAITING)
# A job's log entry, outer-joined: a job of no case (an email) came from none.
_WITH_ENTRY = (_entry, _entry.id == Job.activity_id)


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
    """A job claimed by this runner: a snapshot of it as committed, the attempt it runs, its
    fencing token (``claims`` after this claim), and whether it is to be reconciled (found
    RUNNING past its lease)."""

    id: str
    kind: str
    case_id: str | None
    workflow_item_id: str | None
    activity_id: str | None
    input: dict[str, Any]
    progress: dict[str, Any]
    step: str
    attempt: int
    token: int
    idempotency_key: str
    reconcile: bool
    entry: dict[str, Any] = field(default_factory=dict)

    @property
    def first(self) -> bool:
        """The job's first claim ever: nothing was logged about it, nor is its success."""
        return self.token == 1 and not self.reconcile


def lease_seconds(kind: JobKind | None, input: dict[str, Any]) -> float:
    """How long a claim holds a job: the kind's timeout and the margin."""
    return (kind.timeout_seconds(input) if kind is not None else 60.0) + LEASE_MARGIN


async def claim_due(session: AsyncSession, *, now: datetime, limit: int) -> list[Claim]:
    """Claim up to ``limit`` jobs due at ``now``, oldest due first, at most one per serialization
    key: PENDING and STALLED ones become RUNNING with one attempt more; RUNNING ones past their
    lease are claimed to be reconciled. Every claim takes the next fencing token. PostgreSQL:
    ``FOR UPDATE SKIP LOCKED``, so runners in several processes each take different jobs.
    One statement: the log entries the jobs came from are read with them."""
    query = (
        select(Job, _entry)
        .outerjoin(*_WITH_ENTRY)
        .where(*_CLAIMABLE, Job.next_attempt_at <= now)
        .order_by(Job.next_attempt_at)
        .limit(limit)
        .with_for_update(of=Job, skip_locked=True)
    )
    kinds = job_kinds()
    claims = []
    for job, entry in (await session.execute(query)).all():
        kind = kinds.get(job.kind)
        reconcile = job.state == RUNNING
        if not reconcile:
            move(job, RUNNING, now=now)
            job.attempts += 1
            job.step = job.step or (kind.first_step if kind is not None else "run")
        job.claims += 1
        job.next_attempt_at = now + timedelta(seconds=lease_seconds(kind, job.input))
        job.updated_at = now
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
                token=job.claims,
                idempotency_key=job.idempotency_key,
                reconcile=reconcile,
                entry=entry_json(entry, hidden=job.input.get("hiddenFields")) if entry is not None else {},
            )
        )
    return claims


def entry_json(row: Activity, *, hidden: list[str] | None = None) -> dict[str, Any]:
    """The log entry a job came from, as handlers (and webhook receivers) see it: the changes of
    the case fields its state hid when the job was written (``hidden``) left out, as for a reader
    who plays no role (hidden ≡ missing)."""
    data = row.data
    changes = data.get("fields") if isinstance(data, dict) else None
    if hidden and isinstance(changes, dict):
        data = {**data, "fields": {name: change for name, change in changes.items() if name not in hidden}}
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
        "data": data,
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
    """The handler succeeded; False if the claim was lost (fenced out: nothing changes). A first
    claim's success is one fenced UPDATE (the common case, which logs nothing); a success after
    a failed attempt, a ``retryJob`` or a reconciliation is logged (``job_completed``)."""
    if claim.first:
        return bool(await complete_first_claims(session, [(claim, progress)], now=now))
    job = await _fenced(session, claim)
    if job is None:
        return False
    move(job, COMPLETED, now=now)
    job.progress = merged(job.progress, progress)
    job.next_attempt_at, job.error = None, None
    attempts = f"{job.attempts} attempt" + ("s" if job.attempts != 1 else "")
    await log_about(session, job, "job_completed", now, comment=f"The {job.kind} job completed after {attempts}.")
    return True


async def complete_first_claims(
    session: AsyncSession, done: list[tuple[Claim, Mapping[str, Any] | None]], *, now: datetime
) -> set[str]:
    """Successes of first claims (``complete``'s common case: nothing to log), many in one
    UPDATE, each fenced by its token: the runner records a burst of deliveries with one commit.
    The ids of the jobs completed: a claim fenced out is not among them."""
    assert all(claim.first for claim, _ in done), "a success after a retry is logged: complete() it"
    if not done:
        return set()
    dialect = session.bind.dialect.name
    if dialect not in _COMPLETE_FIRST:
        _COMPLETE_FIRST[dialect] = _complete_first(dialect)
    progress = {claim.id: merged(claim.progress, more) for claim, more in done}
    completed = await session.execute(
        _COMPLETE_FIRST[dialect],
        {"fenced": [(claim.id, claim.token) for claim, _ in done], "done": json.dumps(progress), "now": now},
    )
    return set(completed.scalars())


def _complete_first(dialect: str) -> Any:
    """The batched completion, one statement whatever the batch (compiled once, unlike a VALUES
    list): the jobs by (id, token), each job's new progress read from one JSON object by id."""
    done = bindparam("done", type_=Text)
    if dialect == "postgresql":
        progress: Any = func.json_extract_path(cast(done, JSON), Job.id)
    else:
        progress = func.json(func.json_extract(done, literal('$."') + Job.id + literal('"')))
    return (
        update(Job)
        .where(tuple_(Job.id, Job.claims).in_(bindparam("fenced", expanding=True)), Job.state == RUNNING)
        .values(state=COMPLETED, progress=progress, next_attempt_at=None, updated_at=bindparam("now"))
        .returning(Job.id)
        .execution_options(synchronize_session=False)
    )


_COMPLETE_FIRST: dict[str, Any] = {}


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
    or None if the claim was lost.

    Repeated stalls fold into one line of the item's history: only a job's first stall since it
    was made (or retried) is logged, and its outcome (``job_failed``, ``job_completed``) says
    how many attempts it took. The log is append-only (hash-chained), so a stall's entry is never
    updated with a count; ``error`` is set exactly while the previous attempt failed."""
    job = await _fenced(session, claim)
    if job is None:
        return None
    policy, stalled_before = policy_for(job.kind), bool(job.error)
    job.error = {"step": job.step, "code": error.code, "message": error.message, "recoverable": error.recoverable}
    if detail:
        job.error["detail"] = detail
    if not error.recoverable or policy.exhausted(job.attempts):
        move(job, FAILED, now=now)
        job.next_attempt_at = None
        tries = f"After {job.attempts} attempts: " if job.attempts > 1 else ""
        await log_about(session, job, "job_failed", now, comment=tries + error.message)
    else:
        move(job, STALLED, now=now)
        wait = policy.delay(job.attempts) if delay is None else delay
        job.next_attempt_at = now + timedelta(seconds=wait)
        if not stalled_before:
            await log_about(session, job, "job_stalled", now, comment=error.message)
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
    """The job, locked, if it is still RUNNING under this claim; else None (another runner
    claimed it since, or it was finished)."""
    job = await session.get(Job, claim.id, with_for_update=True, populate_existing=True)
    if job is None or job.state != RUNNING or job.claims != claim.token:
        return None
    return job


# Writes a job's log entry about its case and notifies it: the case machinery sits above the
# jobs wing (it writes jobs), so it hands this down when the engine package is imported
# (engine/cases/job_entries.py registers it), as the built-in callbacks register (engine/registry.py).
CaseEntry = Callable[..., Awaitable[None]]
_case_entry: list[CaseEntry] = []


def log_case_entries_with(write: CaseEntry) -> CaseEntry:
    """Register the writer of jobs' log entries about their cases (one per process)."""
    _case_entry[:] = [write]
    return write


async def log_about(
    session: AsyncSession, job: Job, kind: str, now: datetime, *, comment: str, actor_id: str | None = None
) -> None:
    """A log entry about the job's item, seen by subscribers and notified like any other. A job
    of no case (an email) has no history to write to: its record says it all."""
    if job.case_id is None:
        return
    data: dict[str, Any] = {"job": {"id": job.id, "kind": job.kind, "state": job.state, "attempts": job.attempts}}
    if job.error and job.state != COMPLETED:
        data["error"] = {key: job.error[key] for key in ("step", "code", "message", "recoverable") if key in job.error}
    if job.state == STALLED and job.next_attempt_at is not None:
        data["retryAt"] = job.next_attempt_at.isoformat()
    (write,) = _case_entry
    await write(session, job.case_id, kind, now, comment=comment, data=data, actor_id=actor_id or SYSTEM.user_id)


async def next_due(session: AsyncSession) -> datetime | None:
    """When the next claimable job falls due (or a lease ends), possibly already past; jobs
    waiting behind another one of their key do not count (its end wakes the runner)."""
    return await session.scalar(
        select(func.min(Job.next_attempt_at)).select_from(Job).outerjoin(*_WITH_ENTRY).where(*_CLAIMABLE)
    )


__all__ = [
    "COMPLETED",
    "FAILED",
    "LEASE_MARGIN",
    "PENDING",
    "RUNNING",
    "STALLED",
    "UNFINISHED",
    "Claim",
    "checkpoint",
    "claim_due",
    "complete",
    "complete_first_claims",
    "entry_json",
    "failed_attempt",
    "lease_seconds",
    "log_about",
    "log_case_entries_with",
    "merged",
    "move",
    "next_due",
    "reconciled",
]
