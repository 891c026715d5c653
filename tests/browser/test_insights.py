"""A subproject's Insights view in Chromium at 390 and 1400 px (issue 49): the diagram shaded with
its legend in words, the two charts with their numbers in words, the table of states, no
sideways scroll, and a CSV that holds the API's figures."""

import asyncio
import csv
import io
from pathlib import Path

import pytest
from playwright.async_api import expect

from bench.server import Serve
from tests.fixtures.browser import CREATE_PLAIN, demo_ids, execute
from tests.fixtures.documents import DEFINE

SPEC = {
    "short_name": "insight_review",
    "pretty_name": "Reviewed request",
    "roles": {"author": {"callbacks": ["creation_user"]}, "reviewer": {"callbacks": ["creation_user"]}},
    "states": {
        "draft": {"pretty_name": "Draft"},
        "review": {"pretty_name": "In review"},
        "approved": {"pretty_name": "Approved", "terminal": True},
    },
    "actions": {
        "start": {"trigger": "init", "new_state": "draft"},
        "submit": {"allowed_roles": ["author"], "enabled_states": ["draft"], "new_state": "review"},
        "send_back": {"allowed_roles": ["reviewer"], "enabled_states": ["review"], "new_state": "draft"},
        "approve": {"allowed_roles": ["reviewer"], "enabled_states": ["review"], "new_state": "approved"},
    },
}
CREATE_PERMITS = """mutation($p: ID!) { createSubproject(input: {projectId: $p, displayName: "Permits", currency: "EUR",
  workflow: "insight_review"}) { subproject { id } userErrors { code message } } }"""
INSIGHT_STATES = """query($input: InsightsInput!) { insights(input: $input) {
  states { state { shortName } scope { shortName } entered inStateNow oldestSince
    timeInState { count p50 p90 mean max } } userErrors { code } } }"""


@pytest.fixture(scope="module")
def permits(servers: tuple[Serve, Serve]) -> str:
    """A subproject whose cases moved: one approved after a return to draft, one in review, one
    in draft."""
    first, _ = servers
    assert first.gql(DEFINE, {"spec": SPEC}, token=first.login("admin"))["defineWorkflow"]["userErrors"] == []
    token = first.login("alice")
    made = first.gql(CREATE_PERMITS, {"p": demo_ids(first, token)["School renovation"]}, token=token)[
        "createSubproject"
    ]
    assert made["userErrors"] == []
    board = made["subproject"]["id"]
    items = {}
    for name in ("Hoist", "Crane", "Skip"):
        created = first.gql(CREATE_PLAIN, {"s": board, "name": name}, token=token)["createWorkflowItem"]
        assert created["userErrors"] == []
        items[name] = created["workflowItem"]["id"]
    for name, action in (
        ("Hoist", "submit"),
        ("Hoist", "send_back"),
        ("Hoist", "submit"),
        ("Hoist", "approve"),
        ("Crane", "submit"),
    ):
        execute(first, token, items[name], action, f"{action} {name}")
    return board


@pytest.mark.parametrize("width", [390, 1400])
async def test_the_insights_view_shows_the_figures_and_its_csv_is_the_apis(
    servers: tuple[Serve, Serve], open_page, permits: str, width: int
):
    first, _ = servers
    alice = await open_page(first, width=width)
    await alice.sign_in("alice")
    await alice.page.goto(f"{first.url}/#/subproject/{permits}")
    await alice.page.get_by_role("link", name="Insights").click()
    view = alice.page.get_by_test_id("insights")
    await expect(view.get_by_role("heading", level=1)).to_have_text("Insights: Permits")
    rows = alice.page.get_by_test_id("states-table").locator("tbody tr")
    await expect(rows.locator("th")).to_have_text(["Draft", "In review", "Approved"])
    await expect(rows.nth(0).locator("td").nth(0)).to_have_text("4")  # entered: 3 cases, one sent back
    await expect(view.get_by_test_id("diagram").locator("svg")).to_have_count(1)
    await expect(view.get_by_test_id("legend")).to_contain_text("Longest: up to the longest median")
    await expect(view.get_by_test_id("cycle-chart").locator("canvas")).to_have_count(1)
    await expect(view.get_by_test_id("throughput-chart").locator("canvas")).to_have_count(1)
    await expect(view.get_by_test_id("cycle-words")).to_contain_text("under 1 hour: 1 case")
    await expect(view.get_by_test_id("throughput-words")).to_contain_text("3 started, 1 completed")
    await expect(view.get_by_test_id("rework")).to_contain_text("draft: 1 return in 1 case")
    await alice.screenshot(f"insights-{width}")
    await alice.axe(f"insights at {width} px")  # no serious violation, and no sideways scroll
    chart = await view.get_by_test_id("throughput-chart").bounding_box()
    assert chart is not None and chart["x"] + chart["width"] <= width

    async with alice.page.expect_download() as downloading:
        await view.get_by_test_id("csv").click()
    download = await downloading.value
    assert download.suggested_filename == "Permits states.csv"
    text = await asyncio.to_thread(Path(await download.path()).read_text)
    table = list(csv.reader(io.StringIO(text)))
    window = {"from": await view.get_attribute("data-from"), "to": await view.get_attribute("data-to")}
    answer = first.gql(
        INSIGHT_STATES,
        {"input": {"workflow": "insight_review", "subprojectId": permits, **window}},
        token=first.login("alice"),
    )["insights"]
    assert answer["userErrors"] == []
    assert table[0][:3] == ["scope", "state", "entered"]
    assert len(table) == 1 + len(answer["states"])
    for row, state in zip(table[1:], answer["states"], strict=True):
        timed = state["timeInState"] or {}
        expected = [
            (state["scope"] or {}).get("shortName", ""),
            state["state"]["shortName"],
            state["entered"],
            state["inStateNow"],
            state["oldestSince"] or "",
            timed.get("count", 0),
            *(timed.get(key) for key in ("p50", "p90", "mean", "max")),
        ]
        assert [_value(cell) for cell in row] == [_value(value) for value in expected], row


def _value(cell):
    """A cell as a number when it is one (JavaScript writes 3 where Python writes 3.0)."""
    if cell is None or cell == "":
        return ""
    try:
        return float(cell)
    except (TypeError, ValueError):
        return cell
