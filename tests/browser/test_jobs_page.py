"""Jobs a person can fix from the page (issue 50), in Chromium against a server whose "billing"
webhook receiver fails: the item page lists the item's job with its state, attempts and last
error in words, its stalls fold into one history line, and Retry (shown only to whom it would
work for) brings it through once the receiver is back; the admin's "Failed jobs" view lists a
failed job of another project's item with a link to it, and retries it."""

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from bench.server import Serve
from tests.browser.conftest import SERVE_ENV
from tests.fixtures.browser import demo_ids
from tests.fixtures.database import BACKEND, POSTGRES_URL, admin_sql
from tests.fixtures.documents import CREATE_ITEM, CREATE_PROJECT, CREATE_SUBPROJECT, DEFINE, GRANT
from tests.fixtures.receiver import SECRET, Receiver

# Its own server (with the receiver as its webhook endpoint) starts besides the package's two.
pytestmark = pytest.mark.timeout(360)

SPEC = {
    "short_name": "delivery",
    "states": {"open": {}, "approved": {}, "paid": {"terminal": True}},
    "actions": {
        "open": {"trigger": "init", "new_state": "open"},
        "approve": {
            "pretty_name": "Approve the order",
            "privileges": ["workflowItem.update"],
            "enabled_states": ["open"],
            "new_state": "approved",
            "side_effects": [{"webhook": {"endpoint": "billing"}}],
        },
        "pay": {"privileges": ["workflowItem.update"], "enabled_states": ["approved"], "new_state": "paid"},
    },
}
APPROVE = """mutation($item: ID!) { executeAction(input: {workflowItemId: $item, action: "approve"}) {
  userErrors { code message } } }"""
JOBS_OF = """query($state: JobState) { jobs(state: $state, first: 10) { edges { node { id state attempts
  case { workflowItem { displayName } } } } } }"""
# Four attempts a fraction of a second apart: three stalls, then FAILED.
# The page's first answers and a delivery after Retry, on a loaded machine: longer than expect's 5 s.
SLOW = 20_000
RETRY_POLICY = {"webhook": {"max_attempts": 4, "initial_delay": 0.2, "multiplier": 1, "jitter": False}}


@pytest.fixture
async def hooked(receiver: Receiver, tmp_path: Path) -> AsyncIterator[Serve]:
    """`caseway serve --demo` on a fresh database, its "billing" endpoint the test's receiver."""
    env = {
        **SERVE_ENV,
        "CASEWAY_WEBHOOKS": json.dumps({"billing": {"url": receiver.url, "secret": SECRET, "timeout": 2}}),
        "CASEWAY_JOB_RETRY": json.dumps(RETRY_POLICY),
    }
    name = f"caseway_browser_jobs_{uuid.uuid4().hex[:8]}" if BACKEND == "postgres" else None
    if name:
        await admin_sql(f'CREATE DATABASE "{name}"')
        url = POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"
    else:
        url = f"sqlite:///{tmp_path / 'caseway.db'}"
    server = None
    try:
        server = await asyncio.to_thread(Serve, url, env=env)
        yield server
    finally:
        if server is not None:
            await asyncio.to_thread(server.stop)
        if name:
            await admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def ask(server: Serve, document: str, variables: dict[str, Any], token: str) -> dict[str, Any]:
    """A GraphQL call off the event loop, which the receiver answers deliveries on meanwhile."""
    return await asyncio.to_thread(server.gql, document, variables, token=token)


async def failed_item(server: Serve, token: str, subproject: str, name: str) -> str:
    """An item of the delivery workflow, approved: its webhook job runs and fails."""
    made = await ask(server, CREATE_ITEM, {"input": {"subprojectId": subproject, "displayName": name}}, token)
    item = made["createWorkflowItem"]["workflowItem"]["id"]
    assert (await ask(server, APPROVE, {"item": item}, token))["executeAction"]["userErrors"] == []
    return item


async def until_failed(server: Serve, token: str, names: set[str]) -> None:
    """Wait (a condition) until the jobs of the items named are FAILED, as the runner leaves them."""
    for _ in range(300):
        edges = (await ask(server, JOBS_OF, {"state": "FAILED"}, token))["jobs"]["edges"]
        if {e["node"]["case"]["workflowItem"]["displayName"] for e in edges} >= names:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the jobs of {names} did not fail")


async def test_a_failed_delivery_is_retried_from_the_item_page_and_the_failed_jobs_view(
    hooked: Serve, receiver: Receiver, open_page
):
    server = hooked
    answer = {"status": 503}  # what the receiver answers every delivery, until the test changes it
    receiver.per_request = lambda delivery: answer["status"]
    admin_token, alice_token = server.login("admin"), server.login("alice")
    ids = demo_ids(server, alice_token)
    defined = await ask(server, DEFINE, {"spec": SPEC}, admin_token)
    assert defined["defineWorkflow"]["userErrors"] == []
    furniture = {"input": {"displayName": "Furniture"}}
    project = (await ask(server, CREATE_PROJECT, furniture, alice_token))["createProject"]["project"]["id"]
    sub_input = {"projectId": project, "displayName": "Office", "currency": "EUR", "workflow": "delivery"}
    sub = (await ask(server, CREATE_SUBPROJECT, {"input": sub_input}, alice_token))["createSubproject"]
    assert sub["userErrors"] == []
    chairs = await failed_item(server, alice_token, sub["subproject"]["id"], "Office chairs")
    desks = await failed_item(server, alice_token, sub["subproject"]["id"], "Standing desks")
    # Carol may read the chairs' history (so its jobs) but not change the item: no Retry for her.
    for intent in ("workflowItem.view", "workflowItem.viewHistory"):
        granted = await ask(server, GRANT, {"r": chairs, "i": intent, "p": ids["carol"]}, alice_token)
        assert granted["grantPermission"]["userErrors"] == []
    await until_failed(server, alice_token, {"Office chairs", "Standing desks"})
    assert len(receiver.deliveries) == 8  # four attempts each

    alice = await open_page(server)
    await alice.sign_in("alice")
    page = alice.page
    await page.goto(f"{server.url}/#/item/{chairs}")
    job = page.get_by_test_id("jobs").get_by_test_id("job")
    await expect(job).to_have_count(1, timeout=SLOW)
    await expect(job).to_contain_text("Webhook to billing")
    await expect(job).to_contain_text("after Approve the order")  # the action's pretty name
    await expect(job.get_by_test_id("job-state")).to_have_text("Failed, needs a person")
    await expect(job.get_by_test_id("job-attempts")).to_have_text("4 of 4")
    await expect(job.get_by_test_id("job-error")).to_have_text("Endpoint 'billing' answered HTTP 503.")
    # Three stalls and the failure are two lines of the history, the second with the count.
    about_503 = page.get_by_test_id("history-entry").filter(has_text="answered HTTP 503")
    await expect(about_503).to_have_count(2)
    await expect(about_503.nth(1)).to_contain_text("After 4 attempts")
    await expect(job.get_by_role("button", name=re.compile("^Resume"))).to_have_count(0)  # not STALLED
    await alice.axe("the item page with a failed job")

    carol = await open_page(server)
    await carol.sign_in("carol")
    await carol.page.goto(f"{server.url}/#/item/{chairs}")
    seen = carol.page.get_by_test_id("jobs").get_by_test_id("job")
    await expect(seen.get_by_test_id("job-state")).to_have_text("Failed, needs a person", timeout=SLOW)
    await expect(seen.get_by_role("button")).to_have_count(0)

    answer["status"] = 200  # the receiver is back
    await job.get_by_role("button", name="Retry webhook to billing").click()
    await expect(job.get_by_test_id("job-state")).to_have_text("Done", timeout=SLOW)  # PENDING, then delivered
    await expect(job.get_by_test_id("job-attempts")).to_have_text("1 of 4")
    await expect(job.get_by_test_id("job-error")).to_have_text("—")
    await expect(job.get_by_role("button")).to_have_count(0)
    # The retry and the delivery that followed reach the history live (its sentence, or the comment).
    completed = page.get_by_test_id("history-entry").filter(has_text=re.compile(r"job (of Office chairs )?completed"))
    await expect(completed).to_have_count(1, timeout=SLOW)
    await expect(seen.get_by_test_id("job-state")).to_have_text("Done", timeout=SLOW)  # carol's page follows, live

    admin = await open_page(server)
    await admin.sign_in("admin")
    await admin.page.get_by_role("link", name="Admin").click()
    await admin.page.get_by_role("link", name="Failed jobs").click()
    failed = admin.page.get_by_test_id("failed-jobs").get_by_test_id("job")
    await expect(failed).to_have_count(1, timeout=SLOW)  # the chairs' job went through: only the desks' is left
    link = failed.get_by_role("link", name="Standing desks")
    await expect(link).to_have_attribute("href", f"#/item/{desks}")
    await expect(failed).to_contain_text("Furniture \u203a Office")  # the project and subproject
    await expect(failed.get_by_test_id("job-error")).to_have_text("Endpoint 'billing' answered HTTP 503.")
    await admin.axe("the failed jobs view")
    await failed.get_by_role("button", name="Retry webhook to billing").click()
    await expect(admin.page.get_by_test_id("jobs-said")).to_have_text("Webhook to billing retried: waiting to run.")
    await expect(admin.page.get_by_test_id("failed-jobs")).to_have_count(0)
    await admin.page.goto(f"{server.url}/#/item/{desks}")
    await expect(admin.page.get_by_test_id("jobs").get_by_test_id("job-state")).to_have_text("Done", timeout=SLOW)
    assert receiver.keys_ok().total() == 2  # each job delivered once it could be
