"""suspendCase, resumeCase, cancelCase over HTTP: Case.status and suspendedUntil, the refusals,
the new log kinds in history filters, and who may."""

from datetime import UTC, datetime, timedelta

import pytest

from tests.fixtures.builders import bug_item, inbox, mutate
from tests.fixtures.documents import (
    CANCEL,
    CLOSE_SUBPROJECT,
    EXECUTE,
    GRANT,
    RESUME,
    SUBSCRIBE,
    SUSPEND,
)

# Every query here is also answered without compiled reads, the same (tests/fixtures/api.py).
pytestmark = pytest.mark.usefixtures("differential_reads")
ITEM = """query($id: ID!, $kind: String) { node(id: $id) { ... on WorkflowItem { status
  case { status suspendedUntil version }
  history(filter: {kind: $kind}) { totalCount edges { node { kind comment data actor { login } } } } } } }"""
SUBPROJECT_HISTORY = """query($id: ID!, $kind: String) { node(id: $id) { ... on Subproject {
  history(filter: {kind: $kind}) { totalCount edges { node { kind workflowItem { id } } } } } } }"""


async def item_view(gql, token, item_id, kind=None):
    return (await gql(ITEM, {"id": item_id, "kind": kind}, token=token))["node"]


async def test_suspend_until_then_resume(gql, make_user):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    item = await bug_item(gql, sam, dev_id)
    until = (datetime.now(UTC) + timedelta(days=3)).replace(microsecond=0)
    suspended = await mutate(
        gql, SUSPEND, sam, workflowItemId=item["id"], until=until.isoformat(), comment="on hold", expectedVersion=0
    )
    assert suspended["userErrors"] == []
    assert suspended["case"]["status"] == "SUSPENDED" and suspended["case"]["version"] == 1
    assert datetime.fromisoformat(suspended["case"]["suspendedUntil"]) == until
    assert suspended["case"]["myActions"] == []  # nothing may run now
    assert suspended["activity"] == {
        "kind": "case_suspended",
        "comment": "on hold",
        "data": {"from": "ACTIVE", "to": "SUSPENDED", "until": until.isoformat()},
        "actor": {"login": "sam"},
    }

    refused = await mutate(gql, EXECUTE, dev, workflowItemId=item["id"], action="resolve", resolution="fixed")
    assert refused["userErrors"] == [
        {"code": "CASE_NOT_ACTIVE", "message": "The case is suspended; no action can run.", "field": None}
    ]
    view = await item_view(gql, sam, item["id"])
    assert view["status"] == "OPEN" and view["case"]["status"] == "SUSPENDED"  # a suspended item is still open
    again = await mutate(gql, SUSPEND, sam, caseId=suspended["case"]["id"])
    assert [e["code"] for e in again["userErrors"]] == ["CASE_NOT_ACTIVE"] and again["case"] is None

    resumed = await mutate(gql, RESUME, sam, caseId=suspended["case"]["id"], comment="back", expectedVersion=1)
    assert resumed["userErrors"] == []
    assert (resumed["case"]["status"], resumed["case"]["suspendedUntil"], resumed["case"]["version"]) == (
        "ACTIVE",
        None,
        2,
    )
    assert sorted(a["action"]["shortName"] for a in resumed["case"]["myActions"]) == ["comment", "edit"]  # sam's
    assert resumed["activity"]["kind"] == "case_resumed" and resumed["activity"]["comment"] == "back"
    done = await mutate(gql, EXECUTE, dev, workflowItemId=item["id"], action="resolve", resolution="fixed")
    assert done["userErrors"] == [] and done["case"]["version"] == 3

    # The new kinds are history filters like any other.
    history = (await item_view(gql, sam, item["id"], kind="case_resumed"))["history"]
    assert history["totalCount"] == 1
    assert history["edges"][0]["node"]["data"] == {"from": "SUSPENDED", "to": "ACTIVE", "until": until.isoformat()}
    assert (await item_view(gql, sam, item["id"], kind="case_suspended"))["history"]["totalCount"] == 1
    # dev plays a role: the assignee hears that its work is back.
    latest = (await inbox(gql, dev))["edges"][0]["node"]
    assert (latest["level"], latest["activity"]["kind"]) == ("ASSIGNED", "case_resumed")


async def test_cancel_is_final_and_closes_the_item(gql, make_user):
    _, sam = await make_user("sam")
    dev_id, _ = await make_user("dev")
    fan_id, fan = await make_user("fan")
    item = await bug_item(gql, sam, dev_id)
    for intent in ("workflowItem.view", "workflowItem.viewHistory"):
        await gql(GRANT, {"r": item["id"], "i": intent, "p": fan_id}, token=sam)
    await gql(SUBSCRIBE, {"level": "CASE", "target": item["id"]}, token=fan)

    canceled = await mutate(gql, CANCEL, sam, workflowItemId=item["id"], comment="duplicate")
    assert canceled["userErrors"] == [] and canceled["case"]["status"] == "CANCELED"
    assert canceled["activity"]["data"] == {
        "from": "ACTIVE",
        "to": "CANCELED",
        "canceled": ["comment", "edit", "resolve"],
    }
    view = await item_view(gql, sam, item["id"], kind="case_canceled")
    assert view["status"] == "CLOSED" and view["case"]["status"] == "CANCELED"
    assert [e["node"]["comment"] for e in view["history"]["edges"]] == ["duplicate"]
    assert [(e["node"]["level"], e["node"]["activity"]["kind"]) for e in (await inbox(gql, fan))["edges"]] == [
        ("CASE", "case_canceled")
    ]

    for document, extra, message in (
        (EXECUTE, {"action": "comment"}, "The case is canceled; no action can run."),
        (RESUME, {}, "The case is canceled, which is final; it cannot be resumed."),
        (SUSPEND, {}, "The case is canceled, which is final."),
        (CANCEL, {}, "The case is already canceled."),
    ):
        refused = await mutate(gql, document, sam, workflowItemId=item["id"], **extra)
        assert refused["userErrors"] == [{"code": "CASE_NOT_ACTIVE", "message": message, "field": None}]
    assert (await item_view(gql, sam, item["id"]))["case"]["version"] == 1  # nothing moved

    # A canceled item does not hold its subproject open.
    sub_id = (await gql(SUBPROJECT_OF, {"id": item["id"]}, token=sam))["node"]["subproject"]["id"]
    closed = await gql(CLOSE_SUBPROJECT, {"id": sub_id}, token=sam)
    assert closed["closeSubproject"]["userErrors"] == []
    history = (await gql(SUBPROJECT_HISTORY, {"id": sub_id, "kind": "case_canceled"}, token=sam))["node"]["history"]
    assert [e["node"]["workflowItem"]["id"] for e in history["edges"]] == [item["id"]]


SUBPROJECT_OF = """query($id: ID!) { node(id: $id) { ... on WorkflowItem { subproject { id } } } }"""


async def test_refusals_are_user_errors_that_change_nothing(gql, make_user):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    _, eve = await make_user("eve")
    item = await bug_item(gql, sam, dev_id)

    not_allowed = await mutate(gql, SUSPEND, dev, workflowItemId=item["id"])  # a role is not enough
    assert not_allowed["userErrors"] == [
        {
            "code": "NOT_ALLOWED",
            "message": "You may not do workflowItem.update on this workflow item.",
            "field": ["workflowItemId"],
        }
    ]
    made_up = "wfi_" + "0" * 26
    for document in (SUSPEND, RESUME, CANCEL):
        hidden = (await mutate(gql, document, eve, workflowItemId=item["id"]))["userErrors"]
        missing = (await mutate(gql, document, eve, workflowItemId=made_up))["userErrors"]
        assert hidden == [{**missing[0], "message": missing[0]["message"].replace(made_up, item["id"])}]
        assert hidden[0]["code"] == "NOT_FOUND" and hidden[0]["field"] == ["workflowItemId"]

    not_suspended = await mutate(gql, RESUME, sam, workflowItemId=item["id"])
    assert not_suspended["userErrors"] == [
        {"code": "CASE_NOT_SUSPENDED", "message": "The case is active, not suspended.", "field": None}
    ]
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    far = (datetime.now(UTC) + timedelta(days=400)).isoformat()
    for until in (past, far):
        bad = await mutate(gql, SUSPEND, sam, workflowItemId=item["id"], until=until)
        assert [(e["code"], e["field"]) for e in bad["userErrors"]] == [("INVALID_INPUT", ["until"])]
    both = await mutate(gql, SUSPEND, sam, workflowItemId=item["id"], caseId="case_x")
    assert both["userErrors"] == [
        {"code": "INVALID_INPUT", "message": "Give exactly one of caseId and workflowItemId.", "field": ["caseId"]}
    ]
    stale = await mutate(gql, CANCEL, sam, workflowItemId=item["id"], expectedVersion=5)
    assert [e["code"] for e in stale["userErrors"]] == ["VERSION_CONFLICT"]
    view = await item_view(gql, sam, item["id"])
    assert view["case"] == {"status": "ACTIVE", "suspendedUntil": None, "version": 0}
    assert [e["node"]["kind"] for e in view["history"]["edges"] if e["node"]["kind"].startswith("case_")] == []
