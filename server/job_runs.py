"""Running jobs: each claim and each outcome in its own transaction, the handler in between,
outside any transaction (write-ahead). Shared by the job runner of every server
process and ``caseway run-jobs`` (server/job_runner.py)."""

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

import httpx

from engine.jobs import records
from engine.jobs.kinds import JobCall, JobError, Permanent, Reconciled, Transient, job_kinds
from models import Database

log = logging.getLogger("caseway.jobs")


async def claim_due(db: Database, *, now: datetime, limit: int) -> list[records.Claim]:
    """Claim up to ``limit`` due jobs and commit them RUNNING before anything runs."""
    async with db.transaction() as session:
        return await records.claim_due(session, now=now, limit=limit)


async def next_due(db: Database) -> datetime | None:
    async with db.read_session() as session:
        return await records.next_due(session)


class Completions:
    """Successes of first claims, the bulk of all outcomes, recorded many per transaction: one
    connection and one commit for a burst of deliveries, not one each (bench J1). Each caller
    waits for the commit of its own, so what follows it (the next job of its key) is due once
    it returns, and learns whether it was recorded (a claim fenced out is not)."""

    def __init__(self, db: Database, clock: Callable[[], datetime]) -> None:
        self.db = db
        self.clock = clock
        self._pending: list[tuple[records.Claim, dict[str, Any] | None, asyncio.Future[bool]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def record(self, claim: records.Claim, progress: dict[str, Any] | None) -> bool:
        """Record the success; False if the claim was lost (the job is another runner's now)."""
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._pending.append((claim, progress, done))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write(), name="caseway-job-completions")
        return await done

    async def _write(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                async with self.db.transaction() as session:
                    completed = await records.complete_first_claims(
                        session, [(c, p) for c, p, _ in batch], now=self.clock()
                    )
            except Exception as error:
                for _, _, done in batch:
                    if not done.done():
                        done.set_exception(error)
                continue
            for claim, _, done in batch:
                if not done.done():
                    done.set_result(claim.id in completed)

    async def stop(self) -> None:
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer


async def run_claimed(
    db: Database,
    claim: records.Claim,
    *,
    clock: Callable[[], datetime],
    http: httpx.AsyncClient,
    completions: Completions | None = None,
) -> str | None:
    """Run (or reconcile) one claimed job and record what came of it; the job's new state, or
    None if the outcome could not be recorded (the claim was lost, or the database failed:
    the job is then reconciled once its lease ends)."""
    kind = job_kinds().get(claim.kind)

    async def checkpoint(step: str, progress: dict[str, Any]) -> None:
        async with db.transaction() as session:
            if not await records.checkpoint(session, claim, step=step, progress=progress, now=clock()):
                # another runner owns the job now: stop; the outcome is fenced out too
                raise Transient("CLAIM_LOST", "The job was taken over by another runner.")

    call = JobCall(
        id=claim.id,
        kind=claim.kind,
        input=claim.input,
        progress=dict(claim.progress),
        step=claim.step,
        attempt=claim.attempt,
        idempotency_key=claim.idempotency_key,
        case_id=claim.case_id,
        entry=claim.entry,
        http=http,
        checkpoint=checkpoint,
    )
    progress: dict[str, Any] | None = None
    verdict: Reconciled | None = None
    error: JobError | None = None
    detail: str | None = None
    try:
        if kind is None:
            raise Permanent("UNKNOWN_KIND", f"No job kind {claim.kind!r} is installed on this server.")
        async with asyncio.timeout(kind.timeout_seconds(claim.input)):  # within the lease, by its margin
            if claim.reconcile:
                verdict = await kind.reconcile(call)
            else:
                progress = await kind.run(call)
    except JobError as failure:
        error = failure
    except TimeoutError:
        error = Transient("TIMEOUT", f"The {claim.kind} job did not finish within its time limit.")
    except Exception as unexpected:  # a handler's bug: retried, its message for operators only
        log.exception("job %s (%s) failed unexpectedly", claim.id, claim.kind)
        error, detail = Transient("INTERNAL", records.INTERNAL_MESSAGE), f"{type(unexpected).__name__}: {unexpected}"
    try:
        if completions is not None and error is None and verdict is None and claim.first:
            return records.COMPLETED if await completions.record(claim, progress) else None
        async with db.transaction() as session:
            now = clock()
            if error is not None:
                state = await records.failed_attempt(session, claim, error=error, detail=detail, now=now)
            elif verdict is not None:
                state = await records.reconciled(session, claim, verdict=verdict, now=now)
            else:
                state = (
                    records.COMPLETED if await records.complete(session, claim, progress=progress, now=now) else None
                )
    except Exception:
        log.exception("recording the outcome of job %s failed; it is reconciled when its lease ends", claim.id)
        return None
    return state  # this process's runner claims the next job of its key: no NOTIFY needed
