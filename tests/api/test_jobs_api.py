"""Jobs over GraphQL: the ``jobs`` query, ``Job`` nodes and ``Case.jobs`` (visible to who may read
the item's log, admins all), the levers ``retryJob``/``resumeJob``, and job log entries in
history and notifications."""

from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy import update

from engine.jobs import RetryPolicy, set_policy
from models import Database, Job, utcnow
from server.app import create_app
from server.settings import Settings
from tests.fixtures.api import GraphQLClient
from tests.fixtures.documents import GRANT
from tests.fixtures.jobs import Shop, token_of
from tests.fixtures.receiver import SECRET, Receiver

JOBS = """query($state: JobState, $caseId: ID) { jobs(state: $state, caseId: $caseId, first: 50) {
  totalCount edges { cursor node { id kind state step attempts maxAttempts nextAttemptAt input progress
  idempotencyKey error { step code message recoverable detail } case { id } activity { kind action } } } } }"""
JOB_STATE = """query($id: ID!) { node(id: $id) { ... on Job { id state } } }"""
CASE_JOBS = """query($id: ID!) { node(id: $id) { ... on Case { jobs { id state kind } } } }"""
SUB_CASE_JOBS = """query($id: ID!) { node(id: $id) { ... on Subproject { workflowItems(first: 50) {
  edges { node { case { jobs { id state } } } } } } } }"""
RETRY = """mutation($id: ID!) { retryJob(input: {id: $id}) { job { id state attempts error { code } }
  userErrors { code message field } } }"""
RESUME = """mutation($id: ID!) { resumeJob(input: {id: $id}) { job { id state nextAttemptAt }
  userErrors { code message field } } }"""
CASE_LOG = """query($id: ID!) { node(id: $id) { ... on Case { log(first: 50) { edges { node {
  kind comment data } } } } } }"""
SUBSCRIBE_CASE = (
    """mutation($target: ID) { subscribeToNotifications(input: {level: CASE, targetId: $target}) { ok } }"""
)
NOTIFICATION_COMMENTS = """{ notifications(first: 20) { edges { node { activity { kind comment } } } } }"""


@pytest.fixture
async def api(db: Database, billing: Receiver) -> AsyncIterator[GraphQLClient]:
    settings = Settings(database_url=db.url, webhooks={"billing": {"url": billing.url, "secret": SECRET, "timeout": 1}})
    app = create_app(settings, db=db)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test") as http:
        yield GraphQLClient(http)


async def item_of(shop: Shop, case_id: str) -> str:
    async with shop.db.read_session() as s:
        from models import Case

        return (await s.get(Case, case_id)).object_id


async def test_jobs_are_listed_to_who_may_read_their_items_log_and_to_admins(api, shop: Shop, billing, make_user):
    billing.script = [400]
    failing, fine = await shop.new_case("A"), await shop.new_case("B")
    await shop.act(failing, "approve")
    (failed,) = await shop.jobs(failing)
    await shop.until(failed.id, lambda j: j.state == "FAILED")
    await shop.act(fine, "approve")
    (done,) = await shop.jobs(fine)
    await shop.until(done.id, lambda j: j.state == "COMPLETED")
    owner = await token_of(shop.db, shop.owner.user_id)

    data = await api(JOBS, {"state": "FAILED"}, token=owner)
    assert data["jobs"]["totalCount"] == 1
    node = data["jobs"]["edges"][0]["node"]
    assert node["id"] == failed.id and node["kind"] == "webhook" and node["state"] == "FAILED"
    assert (node["step"], node["attempts"], node["maxAttempts"], node["nextAttemptAt"]) == ("deliver", 1, 5, None)
    assert node["input"] == {"endpoint": "billing"} and node["idempotencyKey"] == failed.id
    assert node["error"] == {
        "step": "deliver",
        "code": "HTTP_400",
        "message": "Endpoint 'billing' answered HTTP 400.",
        "recoverable": False,
        "detail": None,
    }
    assert node["case"] == {"id": failing} and node["activity"] == {"kind": "action_executed", "action": "approve"}
    data = await api(JOBS, {"caseId": fine}, token=owner)
    assert [(e["node"]["id"], e["node"]["state"]) for e in data["jobs"]["edges"]] == [(done.id, "COMPLETED")]
    assert data["jobs"]["edges"][0]["node"]["progress"] == {"delivered": {"status": 200, "attempt": 1}}
    assert (await api(CASE_JOBS, {"id": failing}, token=owner))["node"]["jobs"] == [
        {"id": failed.id, "state": "FAILED", "kind": "webhook"}
    ]

    _, stranger = await make_user("stranger")  # hidden is missing, on every path
    assert (await api(JOBS, {}, token=stranger))["jobs"] == {"totalCount": 0, "edges": []}
    assert (await api(JOB_STATE, {"id": failed.id}, token=stranger))["node"] is None
    assert (await api(JOB_STATE, {"id": failed.id}, token=owner))["node"] == {"id": failed.id, "state": "FAILED"}
    _, admin = await make_user("root", admin=True)
    assert (await api(JOBS, {}, token=admin))["jobs"]["totalCount"] == 2


async def test_an_internal_errors_detail_is_shown_to_admins_only(api, shop: Shop, make_user):
    case_id = await shop.new_case()
    await shop.runner.stop()  # the job stays as this test writes it
    await shop.act(case_id, "approve", wake=False)
    (job,) = await shop.jobs(case_id)
    async with shop.db.transaction() as s:
        error = {
            "step": "deliver",
            "code": "INTERNAL",
            "message": "internal",
            "recoverable": True,
            "detail": "KeyError: x",
        }
        await s.execute(update(Job).where(Job.id == job.id).values(state="STALLED", error=error))
    owner = await token_of(shop.db, shop.owner.user_id)
    _, admin = await make_user("root", admin=True)
    assert (await api(JOBS, {}, token=owner))["jobs"]["edges"][0]["node"]["error"]["detail"] is None
    assert (await api(JOBS, {}, token=admin))["jobs"]["edges"][0]["node"]["error"]["detail"] == "KeyError: x"


async def test_retry_job_needs_update_on_the_item_and_a_failed_job(api, shop: Shop, billing, make_user):
    billing.script = [400]
    case_id = await shop.new_case()
    await shop.act(case_id, "approve")
    (job,) = await shop.jobs(case_id)
    await shop.until(job.id, lambda j: j.state == "FAILED")
    owner = await token_of(shop.db, shop.owner.user_id)
    _, stranger = await make_user("stranger")
    viewer_id, viewer = await make_user("viewer")
    await api(GRANT, {"r": await item_of(shop, case_id), "i": "workflowItem.view", "p": viewer_id}, token=owner)

    hidden = (await api(RETRY, {"id": job.id}, token=stranger))["retryJob"]
    assert hidden["job"] is None and hidden["userErrors"][0]["code"] == "NOT_FOUND"
    refused = (await api(RETRY, {"id": job.id}, token=viewer))["retryJob"]
    assert refused["userErrors"][0]["code"] == "NOT_ALLOWED"
    assert (await shop.job(job.id)).state == "FAILED"  # nothing changed

    retried = (await api(RETRY, {"id": job.id}, token=owner))["retryJob"]
    assert retried == {"job": {"id": job.id, "state": "PENDING", "attempts": 0, "error": None}, "userErrors": []}
    shop.clock.set(utcnow())  # retryJob made it due at the server's time
    shop.runner.wake()
    await shop.until(job.id, lambda j: j.state == "COMPLETED")
    log = [e["node"] for e in (await api(CASE_LOG, {"id": case_id}, token=owner))["node"]["log"]["edges"]]
    assert [e["kind"] for e in log if e["kind"].startswith("job_")] == ["job_failed", "job_retried", "job_completed"]
    assert log[-1]["comment"] == "The webhook job completed after 1 attempt."  # its first since the retry
    assert log[-1]["data"]["job"] == {"id": job.id, "kind": "webhook", "state": "COMPLETED", "attempts": 1}
    again = (await api(RETRY, {"id": job.id}, token=owner))["retryJob"]
    assert again["userErrors"][0]["code"] == "JOB_NOT_FAILED" and "COMPLETED" in again["userErrors"][0]["message"]
    unknown = (await api(RETRY, {"id": "job_01ABC"}, token=owner))["retryJob"]
    assert unknown["userErrors"][0]["code"] == "NOT_FOUND"
    # A hidden job is told exactly as an unknown one: the message names the id given, not its item.
    hidden_message = hidden["userErrors"][0]["message"].replace(job.id, "ID")
    assert hidden_message == unknown["userErrors"][0]["message"].replace("job_01ABC", "ID")


async def test_resume_job_makes_a_stalled_job_due_now(api, shop: Shop, billing):
    set_policy("webhook", RetryPolicy(initial_delay=60, jitter=False))  # a minute's backoff
    billing.script = [503]
    case_id = await shop.new_case()
    await shop.act(case_id, "approve")
    (job,) = await shop.jobs(case_id)
    stalled = await shop.until(job.id, lambda j: j.state == "STALLED")
    owner = await token_of(shop.db, shop.owner.user_id)
    resumed = (await api(RESUME, {"id": job.id}, token=owner))["resumeJob"]
    assert resumed["userErrors"] == [] and resumed["job"]["state"] == "STALLED"
    now = utcnow()
    assert (await shop.job(job.id)).next_attempt_at <= now < stalled.next_attempt_at
    shop.clock.set(now)
    shop.runner.wake()
    await shop.until(job.id, lambda j: j.state == "COMPLETED")
    refused = (await api(RESUME, {"id": job.id}, token=owner))["resumeJob"]
    assert refused["userErrors"][0]["code"] == "JOB_NOT_STALLED"


async def test_job_entries_are_in_the_log_and_notified_like_any_other(api, shop: Shop, billing, make_user):
    billing.script = [400]
    case_id = await shop.new_case()
    owner = await token_of(shop.db, shop.owner.user_id)
    fan_id, fan = await make_user("fan")
    item_id = await item_of(shop, case_id)
    await api(GRANT, {"r": item_id, "i": "workflowItem.view", "p": fan_id}, token=owner)
    await api(GRANT, {"r": item_id, "i": "workflowItem.viewHistory", "p": fan_id}, token=owner)
    assert (await api(SUBSCRIBE_CASE, {"target": item_id}, token=fan))["subscribeToNotifications"]["ok"]
    await shop.act(case_id, "approve")
    (job,) = await shop.jobs(case_id)
    await shop.until(job.id, lambda j: j.state == "FAILED")

    log = [e["node"] for e in (await api(CASE_LOG, {"id": case_id}, token=owner))["node"]["log"]["edges"]]
    assert log[-1]["kind"] == "job_failed" and log[-1]["comment"] == "Endpoint 'billing' answered HTTP 400."
    assert log[-1]["data"]["job"] == {"id": job.id, "kind": "webhook", "state": "FAILED", "attempts": 1}
    notified = [e["node"]["activity"] for e in (await api(NOTIFICATION_COMMENTS, token=fan))["notifications"]["edges"]]
    assert {"kind": "job_failed", "comment": "Endpoint 'billing' answered HTTP 400."} in notified


async def test_case_jobs_of_a_page_of_items_cost_one_query(api, shop: Shop, count_statements):
    await shop.runner.stop()  # only the reads are counted
    owner = await token_of(shop.db, shop.owner.user_id)
    first = await shop.new_case()
    await shop.act(first, wake=False)
    await api(SUB_CASE_JOBS, {"id": shop.subproject_id}, token=owner)  # the token, read once
    with count_statements() as few:
        data = await api(SUB_CASE_JOBS, {"id": shop.subproject_id}, token=owner)
    assert [len(e["node"]["case"]["jobs"]) for e in data["node"]["workflowItems"]["edges"]] == [1]
    for _ in range(4):
        case_id = await shop.new_case()
        await shop.act(case_id, wake=False)
        await shop.act(case_id, wake=False)
    with count_statements() as many:
        data = await api(SUB_CASE_JOBS, {"id": shop.subproject_id}, token=owner)
    assert [len(e["node"]["case"]["jobs"]) for e in data["node"]["workflowItems"]["edges"]] == [1, 2, 2, 2, 2]
    assert many.count == few.count, many.statements


async def test_a_view_only_user_sees_the_item_but_not_its_jobs(api, shop: Shop, billing, make_user):
    """Issue 40, finding 8: workflowItem.view alone read the jobs' input, progress and
    idempotency key; a job is shown with the item's log (viewHistory, or a role in the case)."""
    case_id = await shop.new_case("Watched")
    await shop.act(case_id, "approve")
    (job,) = await shop.jobs(case_id)
    item_id = await item_of(shop, case_id)
    owner = await token_of(shop.db, shop.owner.user_id)
    viewer_id, viewer = await make_user("viewer")
    historian_id, historian = await make_user("historian")
    await api(GRANT, {"r": item_id, "i": "workflowItem.view", "p": viewer_id}, token=owner)
    for intent in ("workflowItem.view", "workflowItem.viewHistory"):
        await api(GRANT, {"r": item_id, "i": intent, "p": historian_id}, token=owner)
    item_case = """query($id: ID!) { node(id: $id) { ... on WorkflowItem { displayName case { id jobs { id } } } } }"""

    seen = await api(item_case, {"id": item_id}, token=viewer)
    assert seen["node"] == {"displayName": "Watched", "case": {"id": case_id, "jobs": []}}
    assert (await api(JOBS, {"caseId": case_id}, token=viewer))["jobs"] == {"totalCount": 0, "edges": []}
    assert (await api(JOB_STATE, {"id": job.id}, token=viewer))["node"] is None

    read = await api(JOBS, {"caseId": case_id}, token=historian)
    assert [e["node"]["idempotencyKey"] for e in read["jobs"]["edges"]] == [job.id]
    assert read["jobs"]["edges"][0]["node"]["input"] == {"endpoint": "billing"}
    assert (await api(item_case, {"id": item_id}, token=historian))["node"]["case"]["jobs"] == [{"id": job.id}]


async def test_repeated_stalls_are_one_history_line_and_the_outcome_counts_the_attempts(
    api, shop: Shop, billing, make_user
):
    """Issue 50: two failed deliveries wrote ten history lines. A job's stalls fold into its first
    (the log is append-only, so that line is not updated): the outcome says how many attempts
    it took, and a subscriber is told twice, not once per attempt. A retry starts a new run,
    whose first stall is told again."""
    set_policy("webhook", RetryPolicy(max_attempts=4, jitter=False))
    billing.script = [503, 502, 503, 503]
    case_id = await shop.new_case()
    owner = await token_of(shop.db, shop.owner.user_id)
    fan_id, fan = await make_user("fan")
    item_id = await item_of(shop, case_id)
    for intent in ("workflowItem.view", "workflowItem.viewHistory"):
        await api(GRANT, {"r": item_id, "i": intent, "p": fan_id}, token=owner)
    assert (await api(SUBSCRIBE_CASE, {"target": item_id}, token=fan))["subscribeToNotifications"]["ok"]
    await shop.act(case_id, "approve")
    (job,) = await shop.jobs(case_id)
    for attempt in (1, 2, 3):
        job = await shop.until(job.id, lambda j, n=attempt: j.attempts == n and j.state == "STALLED")
        shop.clock.set(job.next_attempt_at)
        shop.runner.wake()
    await shop.until(job.id, lambda j: j.state == "FAILED")

    async def job_lines() -> list[dict]:
        log = (await api(CASE_LOG, {"id": case_id}, token=owner))["node"]["log"]["edges"]
        return [e["node"] for e in log if e["node"]["kind"].startswith("job_")]

    lines = await job_lines()
    assert [(e["kind"], e["comment"]) for e in lines] == [
        ("job_stalled", "Endpoint 'billing' answered HTTP 503."),
        ("job_failed", "After 4 attempts: Endpoint 'billing' answered HTTP 503."),
    ]
    assert [e["data"]["job"]["attempts"] for e in lines] == [1, 4]
    assert [e["data"]["job"]["state"] for e in lines] == ["STALLED", "FAILED"]
    notified = [e["node"]["activity"] for e in (await api(NOTIFICATION_COMMENTS, token=fan))["notifications"]["edges"]]
    assert sorted(n["kind"] for n in notified if n["kind"].startswith("job_")) == ["job_failed", "job_stalled"]

    billing.script = [503]  # then 200
    assert (await api(RETRY, {"id": job.id}, token=owner))["retryJob"]["userErrors"] == []
    shop.clock.set(utcnow())
    shop.runner.wake()
    job = await shop.until(job.id, lambda j: j.state == "STALLED")
    shop.clock.set(job.next_attempt_at)
    shop.runner.wake()
    await shop.until(job.id, lambda j: j.state == "COMPLETED")
    lines = await job_lines()
    assert [e["kind"] for e in lines] == ["job_stalled", "job_failed", "job_retried", "job_stalled", "job_completed"]
    assert lines[-1]["comment"] == "The webhook job completed after 2 attempts."


LEVERS_AND_ITEMS = """query($state: JobState) { jobs(state: $state, first: 50) { edges { node { id canRetry canResume
  case { workflowItem { id displayName subproject { displayName project { displayName } } } } } } } }"""


async def test_the_levers_and_items_of_a_page_of_jobs_cost_a_fixed_number_of_statements(
    api, shop: Shop, count_statements
):
    """The admin's "Failed jobs" view and the item page read canRetry/canResume and each job's
    item for a page of jobs: the viewer's intents on the items are loaded at once."""
    await shop.runner.stop()  # only the reads are counted
    owner = await token_of(shop.db, shop.owner.user_id)

    async def failed_jobs(*names: str) -> None:
        for name in names:
            case_id = await shop.new_case(name)
            await shop.act(case_id, "approve", wake=False)
        async with shop.db.transaction() as s:
            error = {"step": "deliver", "code": "HTTP_400", "message": "no", "recoverable": False}
            await s.execute(update(Job).where(Job.state == "PENDING").values(state="FAILED", error=error))

    await failed_jobs("Desk")
    await api(LEVERS_AND_ITEMS, {"state": "FAILED"}, token=owner)  # the token, read once
    with count_statements() as few:
        data = await api(LEVERS_AND_ITEMS, {"state": "FAILED"}, token=owner)
    assert [e["node"]["canRetry"] for e in data["jobs"]["edges"]] == [True]
    await failed_jobs("Chair", "Lamp", "Shelf", "Rug")
    with count_statements() as many:
        data = await api(LEVERS_AND_ITEMS, {"state": "FAILED"}, token=owner)
    nodes = [e["node"] for e in data["jobs"]["edges"]]
    assert [(n["canRetry"], n["canResume"]) for n in nodes] == [(True, False)] * 5
    assert [n["case"]["workflowItem"]["displayName"] for n in nodes] == ["Desk", "Chair", "Lamp", "Shelf", "Rug"]
    assert many.count == few.count, many.statements
