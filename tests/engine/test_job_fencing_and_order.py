"""Jobs' guarantees under races: one job of a key in flight even after ``retryJob``; a key's jobs
in commit order when their transactions interleave (PostgreSQL); a runner that outlived its
lease changes nothing once another one has claimed the job (the fencing token)."""

import asyncio
import time
from collections.abc import Callable
from typing import ClassVar

import pytest
from sqlalchemy import select

import engine
from engine.jobs import JobKind, Permanent, Transient, levers, records, register_job_kind
from engine.jobs import kinds as job_kinds_module
from models import Job
from server.job_runs import Completions
from tests.fixtures.database import BACKEND
from tests.fixtures.jobs import Shop, configure_billing, workflow_with_job
from tests.fixtures.receiver import Receiver


async def until(condition: Callable[[], bool], *, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def test_a_retried_job_waits_while_a_later_job_of_its_key_runs(shop: Shop, billing: Receiver):
    case_id = await shop.new_case()
    billing.script = [400]
    await shop.act(case_id)
    (first,) = await shop.jobs(case_id)
    await shop.until(first.id, lambda j: j.state == "FAILED")  # a FAILED job does not hold its key...
    billing.per_request = lambda d: "hang" if d.key != first.id else None
    await shop.act(case_id)
    (second,) = [j for j in await shop.jobs(case_id) if j.id != first.id]
    await until(lambda: billing.in_flight[case_id] == 1)  # ...so the next one runs, held open

    async with shop.db.transaction() as s:
        await levers.retry(s, actor=shop.owner, job_id=first.id, now=shop.clock.now())
    shop.runner.wake()
    async with shop.db.transaction() as s:  # what any runner would find now: nothing, the key is busy
        assert await records.claim_due(s, now=shop.clock.now(), limit=10) == []
    assert (await shop.job(first.id)).state == "PENDING"

    billing.released.set()
    await shop.until(first.id, lambda j: j.state == "COMPLETED")
    assert (await shop.job(second.id)).state == "COMPLETED"
    assert [(d.key, d.status) for d in billing.deliveries] == [(first.id, 400), (second.id, "hang"), (first.id, 200)]
    assert billing.most_in_flight[case_id] == 1  # never both at once


@pytest.mark.postgres
@pytest.mark.skipif(BACKEND != "postgres", reason="SQLite's single writer cannot interleave two transactions")
async def test_a_keys_jobs_run_in_commit_order_when_their_transactions_interleave(shop: Shop, billing: Receiver):
    configure_billing(billing.url, serialize_by="endpoint")  # one key for every case's jobs
    early, late = await shop.new_case("Early"), await shop.new_case("Late")
    held: list[str] = []

    def hold_the_first(delivery):  # type: ignore[no-untyped-def]
        if not held:
            held.append(delivery.key)
            return "hang"
        return None

    billing.per_request = hold_the_first
    async with shop.db.transaction() as slow:  # begun first: its job has the oldest id...
        await engine.execute(slow, actor=shop.owner, case_id=early, action="note", now=shop.clock.now())
        slow_job = await slow.scalar(select(Job.id).where(Job.case_id == early))
        await shop.act(late)  # ...while two of the other case commit before it
        await shop.act(late)
        await until(lambda: bool(held))
    shop.runner.wake()  # the slow one has committed, last
    late_jobs = [j.id for j in await shop.jobs(late)]
    assert slow_job < min(late_jobs)  # id order would put it first
    async with shop.db.transaction() as s:  # nothing is claimable while the first late job runs
        assert await records.claim_due(s, now=shop.clock.now(), limit=10) == []

    billing.released.set()
    await shop.until(slow_job, lambda j: j.state == "COMPLETED")
    assert [d.key for d in billing.deliveries] == [*late_jobs, slow_job]  # commit order
    seqs = [d.entry["seq"] for d in billing.deliveries]
    assert seqs == sorted(seqs)  # the receiver sees the entries' seq rise
    assert billing.most_in_flight["*"] == 1


async def test_a_runner_that_outlived_its_lease_changes_nothing_once_the_job_is_claimed_again(
    shop: Shop, billing: Receiver
):
    await shop.runner.stop()  # the test plays both runners
    case_id = await shop.new_case()
    await shop.act(case_id, wake=False)
    async with shop.db.transaction() as s:
        (stale,) = await records.claim_due(s, now=shop.clock.now(), limit=10)
    lease_end = (await shop.job(stale.id)).next_attempt_at
    async with shop.db.transaction() as s:  # its lease ended: another runner reconciles the job
        (fresh,) = await records.claim_due(s, now=lease_end, limit=10)
    assert fresh.reconcile and (stale.token, fresh.token) == (1, 2)
    assert stale.attempt == fresh.attempt == 1  # the attempt alone could not tell them apart
    before = await shop.job(stale.id)

    async with shop.db.transaction() as s:  # the first runner comes back
        assert not await records.checkpoint(s, stale, step="late", progress={"late": True}, now=lease_end)
        assert not await records.complete(s, stale, progress={"late": True}, now=lease_end)
        failed = await records.failed_attempt(s, stale, error=Transient("X", "late"), detail=None, now=lease_end)
        assert failed is None
    assert await Completions(shop.db, lambda: lease_end).record(stale, {"late": True}) is False  # batched too
    after = await shop.job(stale.id)
    assert (after.state, after.claims, after.step, after.progress, after.error, after.updated_at) == (
        "RUNNING",
        2,
        before.step,
        {},
        None,
        before.updated_at,
    )
    assert await shop.log_kinds(case_id) == []

    async with shop.db.transaction() as s:  # the runner that holds the job records its outcome
        assert await records.complete(s, fresh, progress={"delivered": True}, now=lease_end)
    assert (await shop.job(stale.id)).state == "COMPLETED"
    assert await shop.log_kinds(case_id) == ["job_completed"]  # after a reconciliation: logged


async def test_a_claim_from_before_retry_job_is_fenced_out(shop: Shop, billing: Receiver):
    await shop.runner.stop()
    case_id = await shop.new_case()
    await shop.act(case_id, wake=False)
    async with shop.db.transaction() as s:
        (stale,) = await records.claim_due(s, now=shop.clock.now(), limit=10)
    async with shop.db.transaction() as s:
        await records.failed_attempt(s, stale, error=Permanent("X", "x"), detail=None, now=shop.clock.now())
    async with shop.db.transaction() as s:
        await levers.retry(s, actor=shop.owner, job_id=stale.id, now=shop.clock.now())
    async with shop.db.transaction() as s:
        (fresh,) = await records.claim_due(s, now=shop.clock.now(), limit=10)
    assert (stale.attempt, fresh.attempt, stale.token, fresh.token) == (1, 1, 1, 2)  # attempts were reset
    async with shop.db.transaction() as s:
        assert not await records.complete(s, stale, progress={"late": True}, now=shop.clock.now())
    assert await Completions(shop.db, shop.clock.now).record(stale, {"late": True}) is False
    assert (await shop.job(stale.id)).state == "RUNNING"


class Gate(JobKind):
    """A kind whose run waits until the test opens the gate."""

    name = "gate"
    opened: ClassVar[asyncio.Event]
    started: ClassVar[asyncio.Event]

    async def run(self, call):  # type: ignore[no-untyped-def]
        Gate.started.set()
        await Gate.opened.wait()
        return {"gate": "passed"}


@pytest.fixture
def gate():  # type: ignore[no-untyped-def]
    Gate.opened, Gate.started = asyncio.Event(), asyncio.Event()
    kind = register_job_kind(Gate())
    yield kind
    Gate.opened.set()
    job_kinds_module._kinds.pop("gate", None)


async def test_a_fenced_out_completion_is_not_counted_by_the_runner(shop: Shop, gate: Gate):
    case_id = await workflow_with_job(shop, "gate")
    shop.runner.wake()
    (job,) = await shop.jobs(case_id)
    await asyncio.wait_for(Gate.started.wait(), 10)  # the runner runs it (its first claim)...
    lease_end = (await shop.job(job.id)).next_attempt_at
    async with shop.db.transaction() as s:  # ...past its lease, as another process would see it
        (other,) = await records.claim_due(s, now=lease_end, limit=10)
    Gate.opened.set()  # the first runner finishes: its batched completion is fenced out
    await until(lambda: shop.runner.lost == 1)
    assert shop.runner.finished == {}
    job = await shop.job(job.id)
    assert (job.state, job.claims, job.progress) == ("RUNNING", 2, {})
    assert other.token == 2
