"""The jobs' settings, each observed through a running server: ``CASEWAY_JOB_CONCURRENCY``
bounds the deliveries one process has in flight, ``CASEWAY_RUN_JOBS=false`` leaves jobs to the
other processes, ``CASEWAY_JOB_RETRY`` replaces a kind's retry policy."""

from datetime import datetime, timedelta
from typing import Any

import pytest

from models import Database
from server.settings import Settings
from tests.fixtures.api import GraphQLClient
from tests.fixtures.jobs import Shop, configure_billing, serving, token_of, until_answer
from tests.fixtures.receiver import SECRET, Receiver

EXECUTE_NOTE = """mutation($c: ID!) { executeAction(input: {caseId: $c, action: "note"}) { userErrors { code } } }"""
COUNT = """query($state: JobState) { jobs(state: $state, first: 1) { totalCount } }"""
JOB = """query($c: ID) { jobs(caseId: $c, first: 1) { edges { node { id state attempts maxAttempts
  error { code } } } } }"""
RESUME_JOB_BRIEF = """mutation($id: ID!) { resumeJob(input: {id: $id}) { userErrors { code } } }"""
CASE_LOG_AT = (
    """query($id: ID!) { node(id: $id) { ... on Case { log(first: 50) { edges { node { kind at data } } } } } }"""
)


def settings_for(db: Database, billing: Receiver, **jobs: Any) -> Settings:
    endpoint = {"url": billing.url, "secret": SECRET, "timeout": 5, "serialize_by": "none"}
    return Settings(database_url=db.url, webhooks={"billing": endpoint}, **jobs)


async def count(gql: GraphQLClient, token: str, state: str) -> int:
    return (await gql(COUNT, {"state": state}, token=token))["jobs"]["totalCount"]


async def job_in(gql: GraphQLClient, token: str, case_id: str, state: str) -> dict[str, Any]:
    """The case's one job, once it is in ``state``."""

    async def ask() -> dict[str, Any]:
        return (await gql(JOB, {"c": case_id}, token=token))["jobs"]["edges"][0]["node"]

    return await until_answer(ask, lambda job: job["state"] == state)


@pytest.mark.parametrize("concurrency", [1, 3])
async def test_job_concurrency_bounds_the_deliveries_a_process_has_in_flight(
    db: Database, shop: Shop, billing: Receiver, concurrency: int
):
    await shop.runner.stop()  # the server's runner is the only one
    configure_billing(billing.url, serialize_by="none")  # one case's jobs may run in parallel
    case_id = await shop.new_case()
    for _ in range(6):  # due together before the server starts
        await shop.act(case_id, wake=False)
    billing.script = ["hang"] * 6  # each held open until released
    owner = await token_of(db, shop.owner.user_id)
    async with serving(db, settings_for(db, billing, job_concurrency=concurrency)) as (_, gql):
        await until_answer(lambda: billing.in_flight["*"] == concurrency)
        # Claims commit before their deliveries start: with the slots full, no more are claimed.
        assert await count(gql, owner, "RUNNING") == concurrency
        billing.released.set()
        await until_answer(lambda: count(gql, owner, "COMPLETED"), lambda n: n == 6)
    assert billing.most_in_flight["*"] == concurrency and len(billing.deliveries) == 6


async def test_a_server_told_not_to_run_jobs_leaves_them_to_the_others(db: Database, shop: Shop, billing: Receiver):
    await shop.runner.stop()
    case_id = await shop.new_case()
    owner = await token_of(db, shop.owner.user_id)
    async with serving(db, settings_for(db, billing, run_jobs=False)) as (quiet, gql):
        assert quiet.state.job_runner is None
        # The job is written through this server: its commit would wake this server's runner.
        assert (await gql(EXECUTE_NOTE, {"c": case_id}, token=owner))["executeAction"]["userErrors"] == []
        assert await count(gql, owner, "PENDING") == 1
        async with serving(db, settings_for(db, billing)) as (busy, _):  # a process that runs jobs
            await until_answer(lambda: count(gql, owner, "COMPLETED"), lambda n: n == 1)
            assert busy.state.job_runner.finished == {"COMPLETED": 1}  # delivered by that one
    assert len(billing.deliveries) == 1


async def test_job_retry_replaces_a_kinds_retry_policy(db: Database, shop: Shop, billing: Receiver):
    await shop.runner.stop()
    billing.script = [503, 503, 503]
    case_id = await shop.new_case()
    owner = await token_of(db, shop.owner.user_id)
    policy = {"webhook": {"max_attempts": 2, "initial_delay": 30, "multiplier": 3, "jitter": False}}
    async with serving(db, settings_for(db, billing, job_retry=policy)) as (_, gql):
        await gql(EXECUTE_NOTE, {"c": case_id}, token=owner)

        job = await job_in(gql, owner, case_id, "STALLED")
        assert (job["attempts"], job["maxAttempts"]) == (1, 2)  # the default policy: 5
        log = [e["node"] for e in (await gql(CASE_LOG_AT, {"id": case_id}, token=owner))["node"]["log"]["edges"]]
        (stalled,) = [e for e in log if e["kind"] == "job_stalled"]
        wait = datetime.fromisoformat(stalled["data"]["retryAt"]) - datetime.fromisoformat(stalled["at"])
        assert wait == timedelta(seconds=30)  # the default: at most 1 s, jittered

        assert (await gql(RESUME_JOB_BRIEF, {"id": job["id"]}, token=owner))["resumeJob"]["userErrors"] == []
        job = await job_in(gql, owner, case_id, "FAILED")
        assert (job["attempts"], job["error"]) == (2, {"code": "HTTP_503"})  # out of attempts after two
    assert [d.status for d in billing.deliveries] == [503, 503]
