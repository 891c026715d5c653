"""Durable jobs end to end below HTTP: an action's webhook job is written with it,
run by the job runner against a real receiver on loopback, retried on a clock the test moves."""

import random
from datetime import timedelta
from typing import ClassVar

import pytest
from sqlalchemy import func, select

import engine
from engine.errors import DomainError, DomainErrors
from engine.jobs import JobKind, Reconciled, RetryPolicy, Transient, levers, records, register_job_kind, set_policy
from engine.jobs import kinds as job_kinds_module
from models import Activity, Job, Subproject, utcnow
from tests.fixtures.jobs import BILLED, Shop, configure_billing, workflow_with_job
from tests.fixtures.receiver import Receiver


def test_backoff_is_exponential_capped_and_fully_jittered():
    policy = RetryPolicy(max_attempts=9, initial_delay=1, multiplier=2, max_delay=60)
    assert [policy.bound(n) for n in range(1, 9)] == [1, 2, 4, 8, 16, 32, 60, 60]
    rng = random.Random(7)
    delays = [policy.delay(3, rng) for _ in range(200)]
    assert all(0 <= d <= 4 for d in delays) and max(delays) > 3 and min(delays) < 1  # spread over [0, 4]
    assert RetryPolicy(jitter=False).delay(3) == 4
    assert not policy.exhausted(8) and policy.exhausted(9)


async def test_503_503_200_completes_after_three_attempts_with_the_policys_delays(shop: Shop, billing: Receiver):
    set_policy("webhook", RetryPolicy(jitter=False))  # delays exactly at the bound: 1 s, then 2 s
    billing.script = [503, 503]
    case_id = await shop.new_case()
    t0 = shop.clock.now()
    await shop.act(case_id, "approve")
    (job,) = await shop.jobs(case_id)

    job = await shop.until(job.id, lambda j: j.state == "STALLED")
    assert (job.attempts, job.error["code"], job.error["recoverable"]) == (1, "HTTP_503", True)
    assert job.next_attempt_at == t0 + timedelta(seconds=1)
    shop.clock.set(job.next_attempt_at - timedelta(milliseconds=1))  # not yet due: a pass claims nothing
    assert await shop.runner.drain() == 0
    assert len(billing.deliveries) == 1

    shop.clock.set(job.next_attempt_at)
    shop.runner.wake()
    job = await shop.until(job.id, lambda j: j.attempts == 2 and j.state == "STALLED")
    assert job.next_attempt_at == t0 + timedelta(seconds=1 + 2)
    shop.clock.set(job.next_attempt_at)
    shop.runner.wake()
    job = await shop.until(job.id, lambda j: j.state == "COMPLETED")

    assert job.attempts == 3 and job.error is None and job.progress["delivered"] == {"status": 200, "attempt": 3}
    assert [d.status for d in billing.deliveries] == [503, 503, 200]
    assert {d.key for d in billing.deliveries} == {job.idempotency_key}  # one key across retries
    assert all(d.signed for d in billing.deliveries) and len({d.body for d in billing.deliveries}) == 1
    entry = billing.deliveries[0].entry
    assert (entry["kind"], entry["action"]["shortName"], entry["caseId"], entry["to"]["shortName"]) == (
        "action_executed",
        "approve",
        case_id,
        "approved",
    )
    assert await shop.log_kinds(case_id) == ["job_stalled", "job_completed"]  # the second stall folds into the first


async def test_jittered_retries_fall_within_the_policys_bounds(shop: Shop, billing: Receiver):
    billing.script = [503, 503]
    case_id = await shop.new_case()
    await shop.act(case_id)
    (job,) = await shop.jobs(case_id)
    for attempt, bound in ((1, 1.0), (2, 2.0)):
        job = await shop.until(job.id, lambda j, n=attempt: j.attempts == n and j.state == "STALLED")
        failed_at = shop.clock.now()
        assert timedelta(0) <= job.next_attempt_at - failed_at <= timedelta(seconds=bound)
        shop.clock.set(job.next_attempt_at)
        shop.runner.wake()
    await shop.until(job.id, lambda j: j.state == "COMPLETED")


async def test_a_4xx_fails_at_once_and_retry_job_runs_it_again(shop: Shop, billing: Receiver):
    billing.script = [400]
    case_id = await shop.new_case()
    await shop.act(case_id, "approve")
    (job,) = await shop.jobs(case_id)
    job = await shop.until(job.id, lambda j: j.state == "FAILED")
    assert (job.attempts, job.error["code"], job.error["recoverable"]) == (1, "HTTP_400", False)
    assert job.next_attempt_at is None and len(billing.deliveries) == 1
    assert await shop.log_kinds(case_id) == ["job_failed"]

    async with shop.db.transaction() as s:
        await levers.retry(s, actor=shop.owner, job_id=job.id, now=shop.clock.now())
    shop.runner.wake()
    job = await shop.until(job.id, lambda j: j.state == "COMPLETED")
    assert job.attempts == 1  # reset by the retry
    assert [d.status for d in billing.deliveries] == [400, 200]
    assert await shop.log_kinds(case_id) == ["job_failed", "job_retried", "job_completed"]  # after a retry: logged


async def test_a_hung_receiver_times_out_stalls_and_is_retried(shop: Shop, billing: Receiver):
    billing.script = ["hang"]
    case_id = await shop.new_case()
    await shop.act(case_id)
    (job,) = await shop.jobs(case_id)
    job = await shop.until(job.id, lambda j: j.state == "STALLED")  # after the endpoint's 1 s timeout
    assert job.error["code"] == "TIMEOUT" and "did not answer within 1 s" in job.error["message"]
    shop.clock.set(job.next_attempt_at)
    shop.runner.wake()
    job = await shop.until(job.id, lambda j: j.state == "COMPLETED")
    assert [d.status for d in billing.deliveries] == ["hang", 200]
    assert billing.deliveries[0].key == billing.deliveries[1].key == job.idempotency_key


async def test_exhausted_attempts_fail_with_the_last_error(shop: Shop, billing: Receiver):
    set_policy("webhook", RetryPolicy(max_attempts=3, jitter=False))
    billing.script = [503, 429, 502]
    case_id = await shop.new_case()
    await shop.act(case_id)
    (job,) = await shop.jobs(case_id)
    for attempt in (1, 2):
        job = await shop.until(job.id, lambda j, n=attempt: j.attempts == n and j.state == "STALLED")
        shop.clock.set(job.next_attempt_at)
        shop.runner.wake()
    job = await shop.until(job.id, lambda j: j.state == "FAILED")
    assert job.attempts == 3 and job.error["code"] == "HTTP_502" and job.error["recoverable"] is True
    assert await shop.log_kinds(case_id) == ["job_stalled", "job_failed"]
    async with shop.db.read_session() as s:
        failed = await s.scalar(select(Activity).where(Activity.kind == "job_failed", Activity.case_id == case_id))
    assert failed.comment == "After 3 attempts: Endpoint 'billing' answered HTTP 502."
    assert failed.data["job"]["attempts"] == 3 and failed.data["error"]["code"] == "HTTP_502"


async def test_a_refused_connection_stalls(shop: Shop, billing: Receiver):
    configure_billing("http://127.0.0.1:9/hook")  # nothing listens on the discard port
    case_id = await shop.new_case()
    await shop.act(case_id)
    (job,) = await shop.jobs(case_id)
    job = await shop.until(job.id, lambda j: j.state == "STALLED")
    assert job.error["code"] == "CONNECTION" and "127.0.0.1" not in job.error["message"]  # no address shown


async def test_an_action_that_rolls_back_leaves_no_job(shop: Shop, billing: Receiver):
    case_id = await shop.new_case()
    with pytest.raises(RuntimeError):
        async with shop.db.transaction() as s:
            await engine.execute(s, actor=shop.owner, case_id=case_id, action="approve", now=shop.clock.now())
            assert await s.scalar(select(func.count()).select_from(Job)) == 1  # written with the action...
            raise RuntimeError("the request failed after the action")
    shop.runner.wake()
    assert await shop.jobs() == []  # ...and gone with it
    await shop.act(case_id, "approve")  # the action, committed this time, has its job
    (job,) = await shop.jobs(case_id)
    await shop.until(job.id, lambda j: j.state == "COMPLETED")
    assert len(billing.deliveries) == 1


async def test_one_cases_jobs_run_one_at_a_time_in_order_while_other_cases_run_in_parallel(
    shop: Shop, billing: Receiver
):
    billing.delay = 0.03
    first, second = await shop.new_case("A"), await shop.new_case("B")
    async with shop.db.transaction() as s:  # twenty jobs due together, ten per case
        for _ in range(10):
            for case_id in (first, second):
                await engine.execute(s, actor=shop.owner, case_id=case_id, action="note", now=shop.clock.now())
    shop.runner.wake()
    jobs = await shop.jobs()
    for job in jobs:
        await shop.until(job.id, lambda j: j.state == "COMPLETED")
    for case_id in (first, second):
        delivered = [d.entry["seq"] for d in billing.deliveries if d.entry["caseId"] == case_id]
        assert len(delivered) == 10 and delivered == sorted(delivered)  # creation order
        assert billing.most_in_flight[case_id] == 1  # one at a time
    assert billing.most_in_flight["*"] == 2  # the two cases in parallel


async def test_an_endpoint_serialized_by_nothing_delivers_a_cases_jobs_in_parallel(shop: Shop, billing: Receiver):
    configure_billing(billing.url, serialize_by="none")
    billing.delay = 0.05
    case_id = await shop.new_case()
    async with shop.db.transaction() as s:  # due together: a runner polling meanwhile cannot take them one by one
        for _ in range(4):
            await engine.execute(s, actor=shop.owner, case_id=case_id, action="note", now=shop.clock.now())
    shop.runner.wake()
    for job in await shop.jobs(case_id):
        await shop.until(job.id, lambda j: j.state == "COMPLETED")
    assert billing.most_in_flight[case_id] > 1


async def test_a_job_left_running_by_a_crash_is_reconciled_and_delivered_again_with_its_key(
    shop: Shop, billing: Receiver
):
    await shop.runner.stop()  # this test plays the crashed runner itself
    case_id = await shop.new_case()
    await shop.act(case_id, wake=False)
    async with shop.db.transaction() as s:  # claimed, committed RUNNING, then the process died
        (claim,) = await records.claim_due(s, now=shop.clock.now(), limit=10)
    job = await shop.job(claim.id)
    assert (job.state, job.attempts) == ("RUNNING", 1)

    assert await shop.runner.drain() == 0  # a new process: within the lease a pass claims nothing
    assert (await shop.job(claim.id)).state == "RUNNING" and billing.deliveries == []
    shop.clock.set(job.next_attempt_at)  # the lease ended: reconciled, then run again
    shop.runner.start()
    job = await shop.until(claim.id, lambda j: j.state == "COMPLETED")
    assert job.attempts == 2 and billing.keys_ok() == {job.idempotency_key: 1}
    assert await shop.log_kinds(case_id) == ["job_stalled", "job_completed"]


class Ledger(JobKind):
    """A plugin kind whose external system knows what happened: reconcile asks it."""

    name = "ledger"
    booked: ClassVar[set[str]] = set()
    runs = 0

    def check_args(self, args, *, defining):  # type: ignore[no-untyped-def]
        return [] if set(args) <= {"account"} else ["ledger takes only account."]

    async def run(self, call):  # type: ignore[no-untyped-def]
        Ledger.runs += 1
        if call.input.get("account") == "broken":
            raise KeyError("account table missing")
        Ledger.booked.add(call.idempotency_key)
        return {"booking": call.idempotency_key}

    async def reconcile(self, call):  # type: ignore[no-untyped-def]
        return Reconciled.COMPLETED if call.idempotency_key in Ledger.booked else Reconciled.RETRY


@pytest.fixture
def ledger():  # type: ignore[no-untyped-def]
    kind = register_job_kind(Ledger())
    Ledger.booked, Ledger.runs = set(), 0
    yield kind
    job_kinds_module._kinds.pop("ledger", None)


async def _ledger_case(shop: Shop, account: str) -> str:
    spec = {
        "short_name": f"booked_{account}",
        "states": {"open": {}, "closed": {"terminal": True}},
        "actions": {
            "open": {"trigger": "init", "new_state": "open"},
            "book": {"privileges": ["workflowItem.update"], "always_enabled": True},
            "close": {"privileges": ["workflowItem.update"], "enabled_states": ["open"], "new_state": "closed"},
        },
        "side_effects": [{"ledger": {"account": account}}],  # every action of the workflow
    }
    async with shop.db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=spec)
        sub = await engine.create_subproject(
            s,
            actor=shop.owner,
            project_id=(await _project(s, shop)),
            display_name="L",
            currency="EUR",
            workflow=spec["short_name"],
        )
        _, case = await engine.create_workflow_item(s, actor=shop.owner, subproject_id=sub.id, display_name="Book")
    shop.clock.set(utcnow())  # the item's creation (and its job) took the real time
    return case.id


async def _project(s, shop: Shop) -> str:  # type: ignore[no-untyped-def]
    return (await s.get(Subproject, shop.subproject_id)).project_id


async def test_reconcile_completes_a_job_whose_step_already_happened(shop: Shop, ledger: Ledger):
    await shop.runner.stop()
    case_id = await _ledger_case(shop, "cash")
    async with shop.db.transaction() as s:
        (claim,) = await records.claim_due(s, now=shop.clock.now(), limit=10)
    Ledger.booked.add(claim.idempotency_key)  # the step happened, the outcome was never recorded
    shop.clock.set((await shop.job(claim.id)).next_attempt_at)
    shop.runner.start()
    job = await shop.until(claim.id, lambda j: j.state == "COMPLETED")
    assert Ledger.runs == 0 and job.progress == {"reconciled": True}  # not run a second time
    assert job.case_id == case_id


async def test_an_unexpected_exception_is_transient_and_its_message_is_for_operators_only(shop: Shop, ledger: Ledger):
    case_id = await _ledger_case(shop, "broken")
    shop.runner.wake()
    (job,) = await shop.jobs(case_id)
    job = await shop.until(job.id, lambda j: j.state == "STALLED")
    assert job.error["code"] == "INTERNAL" and "account table" not in job.error["message"]
    assert "KeyError" in job.error["detail"] and "account table missing" in job.error["detail"]
    async with shop.db.read_session() as s:
        logged = await s.scalar(select(Activity).where(Activity.kind == "job_stalled", Activity.case_id == case_id))
    assert "account table" not in str(logged.data) + str(logged.comment)


async def test_plugins_add_job_kinds_through_the_entry_point_group(monkeypatch):
    class EntryPoint:
        name = "archive"

        def load(self):  # type: ignore[no-untyped-def]
            class Archive(JobKind):
                name = "archive"

            return Archive

    builtin = job_kinds_module.job_kinds()["webhook"]
    monkeypatch.setattr(
        job_kinds_module, "entry_points", lambda group: [EntryPoint()] if group == "caseway.jobs" else []
    )
    monkeypatch.setattr(job_kinds_module, "_plugins_loaded", False)
    monkeypatch.setattr(job_kinds_module, "_kinds", {"webhook": builtin})
    found = job_kinds_module.job_kinds()
    assert set(found) == {"webhook", "archive"} and found["archive"].name == "archive"


@pytest.mark.parametrize(
    ("effects", "message"),
    [
        ([{"fax": {"number": "1"}}], "names unknown side effect 'fax'"),
        ([{"webhook": {"endpoint": "payroll"}}], "No webhook endpoint 'payroll' is configured"),
        ([{"webhook": {"endpoint": "billing", "url": "http://evil"}}], "webhook takes no 'url'"),
        ([{"webhook": {}}], 'webhook needs {"endpoint"'),
        (["webhook"], 'webhook needs {"endpoint"'),
        ([{"webhook": "billing"}], "arguments of 'webhook' must be an object"),
        ([{"webhook": {"endpoint": "billing"}, "x": {}}], "entries are a name or {kind: {arguments}}"),
    ],
)
async def test_a_job_that_could_not_run_is_refused_at_definition(db, billing, effects, message):  # type: ignore[no-untyped-def]
    spec = {
        **BILLED,
        "short_name": "bad",
        "actions": {**BILLED["actions"], "approve": {**BILLED["actions"]["approve"], "side_effects": effects}},
    }
    with pytest.raises(DomainError) as refused:
        async with db.transaction() as s:
            await engine.define_workflow(s, actor=None, spec=spec)
    errors = refused.value.errors if isinstance(refused.value, DomainErrors) else [refused.value]
    assert any(message in e.message for e in errors), [e.message for e in errors]
    assert all(
        e.code == "INVALID_SPEC" and e.field[:4] == ["spec", "actions", "approve", "side_effects"] for e in errors
    )


async def test_a_stored_definition_still_loads_when_its_endpoint_is_no_longer_configured(shop: Shop, billing: Receiver):
    case_id = await shop.new_case()
    from engine.jobs import webhook
    from engine.spec.workflows import _spec_cache

    webhook.configure({})
    _spec_cache.clear()  # re-read from the database, as a restarted server does
    await shop.act(case_id)
    (job,) = await shop.jobs(case_id)
    job = await shop.until(job.id, lambda j: j.state == "FAILED")
    assert job.error["code"] == "UNKNOWN_ENDPOINT" and billing.deliveries == []


class Shipment(JobKind):
    """Two steps: book a parcel (its id checkpointed before going on), then hand it over, which
    fails once. The retry must find the parcel in its progress and not book another."""

    name = "shipment"
    first_step = "book"
    booked: ClassVar[list[str]] = []

    async def run(self, call):  # type: ignore[no-untyped-def]
        if "parcel" not in call.progress:
            Shipment.booked.append(call.idempotency_key)
            await call.checkpoint("hand_over", {"parcel": f"P{len(Shipment.booked)}"})
        if call.attempt == 1:
            raise Transient("CARRIER_BUSY", "The carrier is busy.")
        return {"parcel": "overwritten?", "handed_over": True}


async def test_a_checkpointed_step_is_kept_and_not_repeated_on_retry(shop: Shop):
    register_job_kind(Shipment())
    Shipment.booked = []
    try:
        case_id = await workflow_with_job(shop, "shipment")
        shop.runner.wake()
        (job,) = await shop.jobs(case_id)
        job = await shop.until(job.id, lambda j: j.state == "STALLED")
        assert (job.step, job.progress, job.error["step"]) == ("hand_over", {"parcel": "P1"}, "hand_over")
        shop.clock.set(job.next_attempt_at)
        shop.runner.wake()
        job = await shop.until(job.id, lambda j: j.state == "COMPLETED")
        assert job.progress == {"parcel": "P1", "handed_over": True}  # append-only: P1 stays
        assert Shipment.booked == [job.idempotency_key]  # booked once
    finally:
        job_kinds_module._kinds.pop("shipment", None)
