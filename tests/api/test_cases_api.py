"""Cases through GraphQL: execution, dry runs, idempotency, races, reassignment, task lists, definitions."""

import asyncio

import pytest

from tests.fixtures.builders import bug_item, build_tree
from tests.fixtures.documents import CASE, DEFINE, EXECUTE, MY_TASKS, REASSIGN

# Every query here is also answered without compiled reads, the same (tests/fixtures/api.py).
pytestmark = pytest.mark.usefixtures("differential_reads")


async def test_execute_dry_run_and_case_fields(gql, make_user):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    item = await bug_item(gql, sam, dev_id)
    case = (await gql(CASE, {"id": item["id"]}, token=sam))["node"]["case"]
    assert case["state"]["shortName"] == "open" and case["version"] == 0
    assert {r["role"]["shortName"]: r["assignees"] for r in case["roles"]} == {
        "submitter": [{"login": "sam"}],
        "assignee": [{"login": "dev"}],
    }
    resolve = next(e for e in case["enabledActions"] if e["action"]["shortName"] == "resolve")
    assert resolve["assignees"] == [{"login": "dev"}]
    assert sorted(a["action"]["shortName"] for a in case["myActions"]) == ["comment", "edit"]  # not resolve

    dry = (
        await gql(
            EXECUTE,
            {"input": {"workflowItemId": item["id"], "action": "resolve", "resolution": "fixed", "dryRun": True}},
            token=dev,
        )
    )["executeAction"]
    assert dry["userErrors"] == [] and dry["activity"] is None
    assert dry["preview"]["state"]["shortName"] == "resolved" and dry["preview"]["version"] == 1
    assert sorted(a["shortName"] for a in dry["preview"]["enabledActions"]) == [
        "close",
        "comment",
        "edit",
        "reopen",
        "resolve",
    ]
    assert dry["case"]["version"] == 0 and dry["case"]["state"]["shortName"] == "open"  # nothing changed

    done = await gql(
        EXECUTE,
        {
            "input": {
                "workflowItemId": item["id"],
                "action": "resolve",
                "comment": "ok",
                "resolution": "fixed",
                "expectedVersion": 0,
            }
        },
        token=dev,
    )
    result = done["executeAction"]
    assert result["case"]["state"]["shortName"] == "resolved" and result["case"]["version"] == 1
    assert result["activity"]["actor"] == {"login": "dev"} and result["activity"]["data"]["resolution"] == "fixed"
    assert isinstance(result["activity"]["seq"], int)  # assigned at commit, returned in the payload
    stale = (
        await gql(
            EXECUTE, {"input": {"workflowItemId": item["id"], "action": "comment", "expectedVersion": 0}}, token=dev
        )
    )["executeAction"]
    assert stale["userErrors"][0]["code"] == "VERSION_CONFLICT" and stale["case"] is None
    assert [t["node"]["action"]["shortName"] for t in (await gql(MY_TASKS, token=sam))["myTasks"]["edges"]] == ["close"]
    closed = (await gql(EXECUTE, {"input": {"workflowItemId": item["id"], "action": "close"}}, token=sam))[
        "executeAction"
    ]
    assert closed["case"]["status"] == "COMPLETED"
    view = (await gql(CASE, {"id": item["id"]}, token=sam))["node"]
    assert view["status"] == "CLOSED"
    assert [e["node"]["action"] for e in view["case"]["log"]["edges"] if e["node"]["kind"] == "action_executed"] == [
        "open",
        "resolve",
        "close",
    ]


@pytest.mark.postgres
async def test_idempotent_replays_execute_once(gql, make_user):
    """Ten requests with one idempotency key run at once: one executes, nine replay it. Only
    PostgreSQL runs them concurrently; SQLite's one writer serializes them, so there this checks
    plain replays."""
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    item = await bug_item(gql, sam, dev_id)
    request = {"input": {"workflowItemId": item["id"], "action": "comment", "comment": "hi", "idempotencyKey": "k-1"}}
    results = await asyncio.gather(*[gql(EXECUTE, request, token=dev) for _ in range(10)])
    payloads = [r["executeAction"] for r in results]
    assert all(p["userErrors"] == [] for p in payloads)
    assert sum(not p["replayed"] for p in payloads) == 1
    assert {p["case"]["version"] for p in payloads} == {1}
    log = (await gql(CASE, {"id": item["id"]}, token=dev))["node"]["case"]["log"]["edges"]
    assert [e["node"]["comment"] for e in log if e["node"]["action"] == "comment"] == ["hi"]
    reused = {"input": {**request["input"], "comment": "different"}}
    assert (await gql(EXECUTE, reused, token=dev))["executeAction"]["userErrors"][0]["code"] == "IDEMPOTENCY_KEY_REUSED"


@pytest.mark.postgres
async def test_fifty_concurrent_executions_one_wins(gql, make_user):
    """Fifty resolves of one case at version 0: exactly one wins. A race only on PostgreSQL;
    on SQLite (one writer) the fifty run one after another and this checks expectedVersion."""
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    item = await bug_item(gql, sam, dev_id)
    request = {
        "input": {"workflowItemId": item["id"], "action": "resolve", "resolution": "fixed", "expectedVersion": 0}
    }
    results = await asyncio.gather(*[gql(EXECUTE, request, token=dev) for _ in range(50)])
    codes = [r["executeAction"]["userErrors"][0]["code"] if r["executeAction"]["userErrors"] else "OK" for r in results]
    assert codes.count("OK") == 1
    assert set(codes) - {"OK"} <= {"ACTION_NOT_ENABLED", "VERSION_CONFLICT"}
    log = (await gql(CASE, {"id": item["id"]}, token=dev))["node"]["case"]["log"]["edges"]
    assert [e["node"]["action"] for e in log].count("resolve") == 1


async def test_reassign_role_over_graphql(gql, make_user):
    sam_id, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    other_id, _ = await make_user("other")
    item = await bug_item(gql, sam, dev_id)

    async def reassign(party_id, mode):
        reassigned = {"workflowItemId": item["id"], "role": "assignee", "partyIds": [party_id], "mode": mode}
        result = (await gql(REASSIGN, {"input": reassigned}, token=sam))["reassignRole"]
        assert result["userErrors"] == []
        return {r["role"]["shortName"]: [u["login"] for u in r["assignees"]] for r in result["case"]["roles"]}

    assert (await reassign(other_id, "REPLACE"))["assignee"] == ["other"]
    # A role's players in one order whatever order they were added in: the order of their ids.
    assert await reassign(dev_id, "ADD") == {"submitter": ["sam"], "assignee": ["dev", "other"]}
    refused = (
        await gql(
            REASSIGN, {"input": {"workflowItemId": item["id"], "role": "assignee", "partyIds": [sam_id]}}, token=dev
        )
    )["reassignRole"]
    assert refused["userErrors"][0]["code"] == "NOT_ALLOWED"  # dev sees the item but may not assign
    unknown = (
        await gql(REASSIGN, {"input": {"workflowItemId": item["id"], "role": "boss", "partyIds": [sam_id]}}, token=sam)
    )["reassignRole"]
    assert unknown["userErrors"][0]["code"] == "UNKNOWN_ROLE"


async def test_define_workflow_over_graphql(gql, make_user):
    _, admin = await make_user("root", admin=True)
    _, alice = await make_user("alice")
    spec = {
        "short_name": "review",
        "pretty_name": "Review",
        "roles": {"author": {"callbacks": ["creation_user"]}},
        "states": {"draft": {}, "done": {"terminal": True}},
        "actions": {
            "finish": {
                "pretty_name": "Finish",
                "assigned_role": "author",
                "assigned_states": ["draft"],
                "new_state": "done",
            }
        },
    }
    denied = (await gql(DEFINE, {"spec": spec}, token=alice))["defineWorkflow"]
    assert denied["userErrors"][0]["code"] == "NOT_ALLOWED"
    made = (await gql(DEFINE, {"spec": spec}, token=admin))["defineWorkflow"]["workflow"]
    assert made["version"] == 1 and made["spec"] == spec
    cloned = (await gql(DEFINE, {"spec": made["spec"]}, token=admin))["defineWorkflow"]["workflow"]
    assert cloned["version"] == 2 and cloned["spec"] == made["spec"]
    bad = await gql(DEFINE, {"spec": {**spec, "actions": {"x": {"new_state": "nowhere"}}}}, token=admin)
    error = bad["defineWorkflow"]["userErrors"][0]
    assert error["code"] == "INVALID_SPEC" and error["field"] == ["spec", "actions", "x", "new_state"]


async def test_a_role_nobody_plays_yet_is_shown_empty(gql, make_user):
    _, admin = await make_user("root", admin=True)
    _, alice = await make_user("alice")
    spec = {
        "short_name": "unstaffed",
        "roles": {"reviewer": {}},  # no callbacks: nobody plays it until someone is assigned
        "states": {"open": {}, "done": {"terminal": True}},
        "actions": {"review": {"assigned_role": "reviewer", "assigned_states": ["open"], "new_state": "done"}},
    }
    assert (await gql(DEFINE, {"spec": spec}, token=admin))["defineWorkflow"]["userErrors"] == []
    _, _, (item_id,) = await build_tree(gql, alice, items=1, workflow="unstaffed")
    case = (await gql(CASE, {"id": item_id}, token=alice))["node"]["case"]
    assert case["roles"] == [{"role": {"shortName": "reviewer"}, "assignees": []}]
    assert [(a["action"]["shortName"], a["assignees"]) for a in case["enabledActions"]] == [("review", [])]


async def test_workflows_list_and_diagram(gql, make_user):
    _, alice = await make_user("alice")
    query = """{ workflows(first: 10) { edges { node { shortName version diagram
        dot: diagram(format: DOT) actions { shortName trigger assignedRole enabledStates } } } } }"""
    nodes = {e["node"]["shortName"]: e["node"] for e in (await gql(query, token=alice))["workflows"]["edges"]}
    assert {"simple", "bug", "approval"} <= set(nodes)
    bug = nodes["bug"]
    assert "open --> resolved: Resolve" in bug["diagram"] and "closed --> [*]" in bug["diagram"]
    assert '"resolved" -> "closed" [label="Close"]' in bug["dot"]
    resolve = next(a for a in bug["actions"] if a["shortName"] == "resolve")
    assert resolve == {
        "shortName": "resolve",
        "trigger": "USER",
        "assignedRole": "assignee",
        "enabledStates": ["resolved"],
    }


async def test_execute_by_case_id_and_unknown_ids(gql, make_user):
    _, sam = await make_user("sam")
    dev_id, _ = await make_user("dev")
    item = await bug_item(gql, sam, dev_id)
    case_id = (await gql(CASE, {"id": item["id"]}, token=sam))["node"]["case"]["id"]
    by_case = (await gql(EXECUTE, {"input": {"caseId": case_id, "action": "comment", "comment": "hi"}}, token=sam))[
        "executeAction"
    ]
    assert by_case["userErrors"] == [] and by_case["case"]["id"] == case_id and by_case["case"]["version"] == 1
    for key, missing in (("caseId", "case_01MISSING"), ("workflowItemId", "wfi_01MISSING")):
        refused = (await gql(EXECUTE, {"input": {key: missing, "action": "comment"}}, token=sam))["executeAction"]
        assert [(e["code"], e["field"]) for e in refused["userErrors"]] == [("NOT_FOUND", [key])]
        assert refused["case"] is None and refused["activity"] is None
    after = (await gql(CASE, {"id": item["id"]}, token=sam))["node"]["case"]
    comments = [e["node"] for e in after["log"]["edges"] if e["node"]["action"] == "comment"]
    assert after["version"] == 1 and [c["comment"] for c in comments] == ["hi"]  # the refusals changed nothing


ENTRY = "id seq at kind action comment data hash prevHash actor { login } workflowItem { id }"
EXECUTE_WITH_ENTRY = f"""mutation($input: ExecuteActionInput!) {{
  executeAction(input: $input) {{ activity {{ {ENTRY} }} userErrors {{ code }} }} }}"""
ITEM_HISTORY = f"""query($id: ID!) {{ node(id: $id) {{ ... on WorkflowItem {{
  history(first: 50) {{ edges {{ node {{ {ENTRY} }} }} }} }} }} }}"""


async def test_the_payloads_entry_is_the_one_the_log_stored(gql, make_user):
    """executeAction answers with the entry its transaction wrote, numbered and hashed at
    commit: the item's history holds the same entry, chained to the item's entry before it."""
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    item = await bug_item(gql, sam, dev_id)
    done = (
        await gql(
            EXECUTE_WITH_ENTRY,
            {"input": {"workflowItemId": item["id"], "action": "comment", "comment": "seen", "data": {"n": 1}}},
            token=dev,
        )
    )["executeAction"]
    assert done["userErrors"] == []
    entry = done["activity"]
    history = [e["node"] for e in (await gql(ITEM_HISTORY, {"id": item["id"]}, token=sam))["node"]["history"]["edges"]]
    assert entry in history
    assert (entry["kind"], entry["action"], entry["comment"], entry["actor"]) == (
        "action_executed",
        "comment",
        "seen",
        {"login": "dev"},
    )
    earlier = [e for e in history if e["seq"] < entry["seq"]]
    assert earlier and entry["prevHash"] == max(earlier, key=lambda e: e["seq"])["hash"]
