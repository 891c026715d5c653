"""Outputs, resolution codes, gating and enable conditions over GraphQL."""

from tests.api.documents import CASE, CREATE_ITEM, DEFINE, EXECUTE
from tests.api.test_cases_api import bug_item
from tests.api.test_resource_tree import build_tree
from tests.fixtures.specs import decision

ACTIONS = """query($id: ID!) { node(id: $id) { ... on WorkflowItem { case { workflow { shortName
  actions { shortName outputs { name newState } resolutions { code prettyName } } } } } } }"""

SPEC = decision(
    "vote",
    remind={"allowed_roles": ["author"], "always_enabled": True, "depends_on": {"remind": {"max": 1}}},
    pay={"allowed_roles": ["author"], "always_enabled": True, "enable_conditions": ["item_has_amount"]},
)


async def vote_item(gql, make_user, **item):
    _, admin = await make_user("root", admin=True)
    _, alice = await make_user("alice")
    assert (await gql(DEFINE, {"spec": SPEC}, token=admin))["defineWorkflow"]["userErrors"] == []
    _, sub, _ = await build_tree(gql, alice, items=0, workflow="vote")
    made = await gql(CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": "Motion", **item}}, token=alice)
    return made["createWorkflowItem"]["workflowItem"], alice


def execute(item, action, **fields):
    return {"input": {"workflowItemId": item["id"], "action": action, **fields}}


async def test_outputs_are_listed_previewed_chosen_and_logged(gql, make_user):
    item, alice = await vote_item(gql, make_user)
    workflow = (await gql(ACTIONS, {"id": item["id"]}, token=alice))["node"]["case"]["workflow"]
    decide = next(a for a in workflow["actions"] if a["shortName"] == "decide")
    assert decide["outputs"] == [
        {"name": "accept", "newState": "accepted"},
        {"name": "send_back", "newState": "returned"},
    ]
    for output, state, status in (("send_back", "returned", "ACTIVE"), ("accept", "accepted", "COMPLETED")):
        dry = (await gql(EXECUTE, execute(item, "decide", output=output, dryRun=True), token=alice))["executeAction"]
        assert dry["userErrors"] == [] and (dry["preview"]["state"]["shortName"], dry["preview"]["status"]) == (
            state,
            status,
        )
        assert dry["case"]["state"]["shortName"] == "open" and dry["case"]["version"] == 0  # nothing changed
    done = (await gql(EXECUTE, execute(item, "decide", output="send_back", comment="not yet"), token=alice))[
        "executeAction"
    ]
    assert done["case"]["state"]["shortName"] == "returned"
    assert done["activity"]["data"] == {"from": "open", "to": "returned", "output": "send_back"}


async def test_a_missing_or_undeclared_output_is_a_user_error_that_changes_nothing(gql, make_user):
    item, alice = await vote_item(gql, make_user)
    for fields, message in (
        ({}, "Decide needs an output, one of: accept, send_back."),
        ({"output": "abstain"}, "That is not an output of Decide; one of: accept, send_back."),
        ({"output": "x" * 5000, "dryRun": True}, "That is not an output of Decide; one of: accept, send_back."),
    ):
        refused = (await gql(EXECUTE, execute(item, "decide", **fields), token=alice))["executeAction"]
        assert refused["userErrors"] == [{"code": "INVALID_INPUT", "message": message, "field": ["output"]}]
        assert refused["case"] is None and refused["activity"] is None
    stray = (await gql(EXECUTE, execute(item, "remind", output="accept"), token=alice))["executeAction"]
    assert [(e["code"], e["field"]) for e in stray["userErrors"]] == [("INVALID_INPUT", ["output"])]
    case = (await gql(CASE, {"id": item["id"]}, token=alice))["node"]["case"]
    assert case["version"] == 0 and case["state"]["shortName"] == "open"
    executed = [e["node"] for e in case["log"]["edges"] if e["node"]["kind"] == "action_executed"]
    assert [(e["action"], e["data"]) for e in executed] == [(None, {"from": None, "to": "open"})]  # the start alone


async def test_resolutions_are_listed_required_checked_and_logged(gql, make_user):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    item = await bug_item(gql, sam, dev_id)
    workflow = (await gql(ACTIONS, {"id": item["id"]}, token=dev))["node"]["case"]["workflow"]
    resolve = next(a for a in workflow["actions"] if a["shortName"] == "resolve")
    assert resolve["resolutions"][:2] == [
        {"code": "fixed", "prettyName": "Fixed"},
        {"code": "wont_fix", "prettyName": "Won't fix"},
    ]
    assert len(resolve["resolutions"]) == 5 and resolve["outputs"] == []
    for fields in ({}, {"resolution": "works_for_me"}, {"data": {"resolution": "fixed"}}):
        refused = (await gql(EXECUTE, execute(item, "resolve", **fields), token=dev))["executeAction"]
        [error] = refused["userErrors"]
        assert (error["code"], error["field"]) == ("INVALID_INPUT", ["resolution"]) and "fixed, wont_fix" in error[
            "message"
        ]
    done = (await gql(EXECUTE, execute(item, "resolve", resolution="duplicate"), token=dev))["executeAction"]
    assert done["case"]["state"]["shortName"] == "resolved" and done["activity"]["data"]["resolution"] == "duplicate"
    log = (await gql(CASE, {"id": item["id"]}, token=sam))["node"]["case"]["log"]["edges"]
    assert [e["node"]["data"].get("resolution") for e in log if e["node"]["action"] == "resolve"] == ["duplicate"]


async def test_gating_and_enable_conditions_show_in_enabled_actions(gql, make_user):
    priced, alice = await vote_item(gql, make_user, amountType="ALLOCATED", amount="300", currency="EUR")
    _, sub, _ = await build_tree(gql, alice, items=0, workflow="vote")  # a second item, without an amount
    unpriced = (await gql(CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": "Draft"}}, token=alice))[
        "createWorkflowItem"
    ]["workflowItem"]

    async def enabled(item):
        case = (await gql(CASE, {"id": item["id"]}, token=alice))["node"]["case"]
        return sorted(e["action"]["shortName"] for e in case["enabledActions"])

    assert await enabled(priced) == ["decide", "pay", "remind"]
    assert await enabled(unpriced) == ["decide", "remind"]  # item_has_amount refused pay
    refused = (await gql(EXECUTE, execute(unpriced, "pay"), token=alice))["executeAction"]
    assert refused["userErrors"][0]["code"] == "ACTION_NOT_ENABLED"
    reminded = (await gql(EXECUTE, execute(priced, "remind"), token=alice))["executeAction"]
    assert reminded["userErrors"] == [] and await enabled(priced) == ["decide", "pay"]  # max 1: ran once
    again = (await gql(EXECUTE, execute(priced, "remind"), token=alice))["executeAction"]
    assert again["userErrors"][0]["code"] == "ACTION_NOT_ENABLED"
