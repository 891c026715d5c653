"""Grants that reach down (issue 45, point 1): ``grantPermission(input: {…, inherit: true})`` on a
project or subproject holds, with the same suffix, on everything below it, now and later;
``revokePermission(input: {…, inherit: true})`` takes it back and leaves the grants made below.
What such a grant no longer covers is hidden as a missing row is, on every read path."""

import pytest

from tests.fixtures.builders import build_tree
from tests.fixtures.documents import CREATE_ITEM, CREATE_SUBPROJECT, EXECUTE, NODE_ID, SET_DISABLED, SUBSCRIBE
from tests.fixtures.live import WsClient

# Every query here is also answered without compiled reads, the same (tests/fixtures/api.py).
pytestmark = pytest.mark.usefixtures("differential_reads")

GRANT_WITH_REACH = """mutation($r: ID!, $i: String!, $p: ID!, $inherit: Boolean!) {
  grantPermission(input: {resourceId: $r, intent: $i, partyId: $p, inherit: $inherit}) {
    permissions { intent holders { inherited reachesDown inheritedFrom party { ... on User { login } } } }
    userErrors { code message field } } }"""
REVOKE_WITH_REACH = """mutation($r: ID!, $i: String!, $p: ID!, $inherit: Boolean!) {
  revokePermission(input: {resourceId: $r, intent: $i, partyId: $p, inherit: $inherit}) {
    permissions { intent } userErrors { code message field } } }"""
BOARD_AND_INTENTS = """query($s: ID!) { node(id: $s) { ... on Subproject { displayName allowedIntents
  workflowItems(first: 20) { totalCount edges { node { displayName allowedIntents } } } } } }"""
GRANTS = """query($id: ID!) { node(id: $id) { ... on Project { permissions { ...G } } ... on Subproject {
  permissions { ...G } } ... on WorkflowItem { permissions { ...G } } } }
fragment G on PermissionGrant { intent parties { ... on User { login } }
  holders { inherited reachesDown inheritedFrom party { ... on User { login } } } }"""
SEARCH_BELOW = """query($q: String!) { search(query: $q, first: 20) { totalCount edges { node {
  ... on Subproject { displayName } ... on WorkflowItem { displayName } } } } }"""
NOTES = """{ notifications { totalCount unreadCount edges { node { activity { id comment } } } } }"""
ENTRY = """query($id: ID!) { node(id: $id) { ... on Activity { comment } } }"""


async def _ok(gql, document, variables, token, inherit=False):
    body = await gql(document, {**variables, "inherit": inherit}, token=token)
    payload = next(iter(body.values()))
    assert payload["userErrors"] == [], payload
    return payload


async def _grant(gql, token, resource, intent, party, *, inherit=False):
    return await _ok(gql, GRANT_WITH_REACH, {"r": resource, "i": intent, "p": party}, token, inherit)


async def _revoke(gql, token, resource, intent, party, *, inherit=False):
    return await _ok(gql, REVOKE_WITH_REACH, {"r": resource, "i": intent, "p": party}, token, inherit)


async def _item(gql, token, sub_id, name):
    created = await gql(CREATE_ITEM, {"input": {"subprojectId": sub_id, "displayName": name}}, token=token)
    return created["createWorkflowItem"]["workflowItem"]["id"]


def _names(board):
    return [e["node"]["displayName"] for e in board["node"]["workflowItems"]["edges"]]


async def test_a_grant_on_the_project_reaches_its_items_now_and_later(gql, make_user):
    _, sam = await make_user("sam")
    ann_id, ann = await make_user("ann")
    project, sub, items = await build_tree(gql, sam, items=2)
    assert (await gql(BOARD_AND_INTENTS, {"s": sub["id"]}, token=ann))["node"] is None

    await _grant(gql, sam, project["id"], "project.view", ann_id, inherit=True)
    board = await gql(BOARD_AND_INTENTS, {"s": sub["id"]}, token=ann)
    assert board["node"]["allowedIntents"] == ["subproject.view"]
    assert board["node"]["workflowItems"]["totalCount"] == 2
    assert _names(board) == ["Item 0", "Item 1"]
    assert [e["node"]["allowedIntents"] for e in board["node"]["workflowItems"]["edges"]] == [["workflowItem.view"]] * 2

    # Later: a new item, and a new subproject with an item of its own, without another grant.
    await _item(gql, sam, sub["id"], "Item 2")
    new_sub = (
        await gql(
            CREATE_SUBPROJECT,
            {"input": {"projectId": project["id"], "displayName": "Walls", "currency": "EUR"}},
            token=sam,
        )
    )["createSubproject"]["subproject"]
    await _item(gql, sam, new_sub["id"], "Brick")
    assert _names(await gql(BOARD_AND_INTENTS, {"s": sub["id"]}, token=ann)) == ["Item 0", "Item 1", "Item 2"]
    assert _names(await gql(BOARD_AND_INTENTS, {"s": new_sub["id"]}, token=ann)) == ["Brick"]
    # what ann holds stays one grant, on the project: nothing was copied onto the new rows
    listed = (await gql(GRANTS, {"id": items[0]}, token=sam))["node"]["permissions"]
    view = next(g for g in listed if g["intent"] == "workflowItem.view")
    assert {p["login"] for p in view["parties"]} == {"ann", "sam"}
    ann_holds = [h for h in view["holders"] if h["party"]["login"] == "ann"]
    assert ann_holds == [
        {"inherited": True, "reachesDown": False, "inheritedFrom": project["id"], "party": {"login": "ann"}}
    ]
    on_project = (await gql(GRANTS, {"id": project["id"]}, token=sam))["node"]["permissions"]
    project_view = next(g for g in on_project if g["intent"] == "project.view")
    assert {"inherited": False, "reachesDown": True, "inheritedFrom": None, "party": {"login": "ann"}} in project_view[
        "holders"
    ]


async def test_each_intent_reaches_its_counterpart_and_no_other(gql, make_user):
    _, sam = await make_user("sam")
    ann_id, ann = await make_user("ann")
    project, sub, _items = await build_tree(gql, sam, items=1)
    for intent in ("project.view", "project.viewHistory", "project.close", "project.createSubproject"):
        await _grant(gql, sam, project["id"], intent, ann_id, inherit=True)
    await _grant(gql, sam, sub["id"], "subproject.createWorkflowItem", ann_id, inherit=True)
    board = await gql(BOARD_AND_INTENTS, {"s": sub["id"]}, token=ann)
    # close reaches the subproject (items have no close); createSubproject and
    # createWorkflowItem have no counterpart below and reach nothing there
    assert board["node"]["allowedIntents"] == [
        "subproject.close",
        "subproject.createWorkflowItem",
        "subproject.view",
        "subproject.viewHistory",
    ]
    assert board["node"]["workflowItems"]["edges"][0]["node"]["allowedIntents"] == [
        "workflowItem.view",
        "workflowItem.viewHistory",
    ]


async def test_revoking_takes_the_reach_back_and_grants_made_below_stay(gql, make_user):
    _, sam = await make_user("sam")
    ann_id, ann = await make_user("ann")
    project, sub, (kept, gone) = await build_tree(gql, sam, items=2)
    await _grant(gql, sam, project["id"], "project.view", ann_id, inherit=True)
    await _grant(gql, sam, sub["id"], "subproject.view", ann_id)
    await _grant(gql, sam, kept, "workflowItem.view", ann_id)
    assert (await gql(BOARD_AND_INTENTS, {"s": sub["id"]}, token=ann))["node"]["workflowItems"]["totalCount"] == 2

    # Revoked as if it were one grant, it is refused: it would take everything below too.
    refused = await gql(
        REVOKE_WITH_REACH, {"r": project["id"], "i": "project.view", "p": ann_id, "inherit": False}, token=sam
    )
    assert [(e["code"], e["field"]) for e in refused["revokePermission"]["userErrors"]] == [
        ("INVALID_INPUT", ["inherit"])
    ]
    assert "inherit: true" in refused["revokePermission"]["userErrors"][0]["message"]
    assert (await gql(BOARD_AND_INTENTS, {"s": sub["id"]}, token=ann))["node"]["workflowItems"]["totalCount"] == 2

    await _revoke(gql, sam, project["id"], "project.view", ann_id, inherit=True)
    board = await gql(BOARD_AND_INTENTS, {"s": sub["id"]}, token=ann)
    assert board["node"]["workflowItems"]["totalCount"] == 1 and _names(board) == ["Item 0"]
    assert (await gql(NODE_ID, {"id": project["id"]}, token=ann))["node"] is None
    # hidden is missing: the item it no longer covers answers as a made-up id does
    assert (await gql(NODE_ID, {"id": gone}, token=ann))["node"] is None
    assert (await gql(NODE_ID, {"id": gone[:-4] + "0000"}, token=ann))["node"] is None
    found = (await gql(SEARCH_BELOW, {"q": "Item"}, token=ann))["search"]
    assert found["totalCount"] == 1 and [e["node"]["displayName"] for e in found["edges"]] == ["Item 0"]


async def test_notifications_and_entries_follow_a_reaching_grant(gql, make_user):
    _, sam = await make_user("sam")
    ann_id, ann = await make_user("ann")
    project, _, (item,) = await build_tree(gql, sam, items=1)
    await _grant(gql, sam, project["id"], "project.view", ann_id, inherit=True)
    await _grant(gql, sam, project["id"], "project.viewHistory", ann_id, inherit=True)
    assert (await gql(SUBSCRIBE, {"level": "CASE", "target": item}, token=ann))["subscribeToNotifications"]["ok"]
    comment = {"workflowItemId": item, "action": "comment", "comment": "the budget is 42"}
    assert (await gql(EXECUTE, {"input": comment}, token=sam))["executeAction"]["userErrors"] == []
    notes = (await gql(NOTES, token=ann))["notifications"]
    assert notes["totalCount"] == 1 and notes["edges"][0]["node"]["activity"]["comment"] == "the budget is 42"
    entry = notes["edges"][0]["node"]["activity"]["id"]

    for intent in ("project.view", "project.viewHistory"):
        await _revoke(gql, sam, project["id"], intent, ann_id, inherit=True)
    assert (await gql(NOTES, token=ann))["notifications"] == {"totalCount": 0, "unreadCount": 0, "edges": []}
    assert (await gql(ENTRY, {"id": entry}, token=ann))["node"] is None


async def test_a_grant_with_nothing_below_cannot_reach_down(gql, make_user):
    _, sam = await make_user("sam")
    ann_id, _ = await make_user("ann")
    _, _, (item,) = await build_tree(gql, sam, items=1)
    for resource, intent in ((item, "workflowItem.view"), ("global", "global.createProject")):
        _, admin = await make_user(f"admin{intent[0]}", admin=True)
        answer = await gql(GRANT_WITH_REACH, {"r": resource, "i": intent, "p": ann_id, "inherit": True}, token=admin)
        errors = answer["grantPermission"]["userErrors"]
        assert [(e["code"], e["field"]) for e in errors] == [("INVALID_INPUT", ["inherit"])], errors
        listed = (await gql(GRANTS, {"id": item}, token=sam))["node"]["permissions"]
        assert "ann" not in str(listed)


async def test_the_last_holder_rule_counts_reaching_grants(gql, make_user):
    sam_id, sam = await make_user("sam")
    ann_id, _ = await make_user("ann")
    project, _sub, (item,) = await build_tree(gql, sam, items=1)
    intent = "workflowItem.intent.grantPermission"
    alone = await gql(REVOKE_WITH_REACH, {"r": item, "i": intent, "p": sam_id, "inherit": False}, token=sam)
    assert [e["code"] for e in alone["revokePermission"]["userErrors"]] == ["LAST_GRANT_HOLDER"]

    # ann may grant on everything in the project: sam may give up the item's grant
    await _grant(gql, sam, project["id"], "project.intent.grantPermission", ann_id, inherit=True)
    await _revoke(gql, sam, item, intent, sam_id)
    # and now ann's reaching grant is the item's last: not taken back while it is
    below = await gql(
        REVOKE_WITH_REACH,
        {"r": project["id"], "i": "project.intent.grantPermission", "p": ann_id, "inherit": True},
        token=sam,
    )
    errors = below["revokePermission"]["userErrors"]
    assert [e["code"] for e in errors] == ["LAST_GRANT_HOLDER"] and "below" in errors[0]["message"]
    listed = (await gql(GRANTS, {"id": item}, token=sam))["node"]["permissions"]
    granting = next(g for g in listed if g["intent"] == intent)
    assert [(h["party"]["login"], h["inherited"]) for h in granting["holders"]] == [("ann", True)]


async def test_disabling_the_last_holder_that_reaches_an_item_is_refused(gql, make_user):
    sam_id, sam = await make_user("sam")
    ann_id, _ = await make_user("ann")
    _, admin = await make_user("root", admin=True)
    project, _, (item,) = await build_tree(gql, sam, items=1)
    await _grant(gql, sam, project["id"], "project.intent.grantPermission", ann_id, inherit=True)
    await _revoke(gql, sam, item, "workflowItem.intent.grantPermission", sam_id)
    disabled = (await gql(SET_DISABLED, {"u": ann_id, "disabled": True}, token=admin))["disableUser"]
    assert [e["code"] for e in disabled["userErrors"]] == ["LAST_GRANT_HOLDER"]
    assert disabled["user"] is None or disabled["user"]["disabled"] is False


async def test_a_board_read_by_a_reaching_grant_is_one_statement(gql, make_user, count_statements):
    """The board of a viewer whose view reaches down from the project, with its totalCount: one
    statement (compiled), whatever the number of items."""
    _, sam = await make_user("sam")
    ann_id, ann = await make_user("ann")
    project, sub, _ = await build_tree(gql, sam, items=3)
    await _grant(gql, sam, project["id"], "project.view", ann_id, inherit=True)
    await gql(BOARD_AND_INTENTS, {"s": sub["id"]}, token=ann)  # the token is remembered now
    with count_statements() as counted:
        board = await gql(BOARD_AND_INTENTS, {"s": sub["id"]}, token=ann)
    assert board["node"]["workflowItems"]["totalCount"] == 3
    assert counted.count == 1, counted.statements


LIVE = """subscription($p: ID) { activity(projectId: $p) { comment workflowItem { displayName } } }"""


async def test_a_live_stream_shows_what_a_reaching_grant_still_covers(live_server, make_user):
    gql = live_server.gql
    _, sam = await make_user("sam")
    ann_id, ann = await make_user("ann")
    project, _, (item,) = await build_tree(gql, sam, items=1)

    async def grant(intent, inherit):
        data = await gql(
            GRANT_WITH_REACH, {"r": project["id"], "i": intent, "p": ann_id, "inherit": inherit}, token=sam
        )
        assert data["grantPermission"]["userErrors"] == []

    await grant("project.viewHistory", False)
    await grant("project.view", True)
    client = await WsClient.connect(live_server.ws, ann)
    try:
        await client.subscribe(LIVE, {"p": project["id"]})
        comment = {"workflowItemId": item, "action": "comment", "comment": "seen"}
        await gql(EXECUTE, {"input": comment}, token=sam)
        first = await client.receive(1)
        revoked = await gql(
            REVOKE_WITH_REACH, {"r": project["id"], "i": "project.view", "p": ann_id, "inherit": True}, token=sam
        )
        assert revoked["revokePermission"]["userErrors"] == []
        await gql(EXECUTE, {"input": {**comment, "comment": "unseen item"}}, token=sam)
        second = await client.receive(1)
    finally:
        await client.close()
    assert first == [{"activity": {"comment": "seen", "workflowItem": {"displayName": "Item 0"}}}]
    assert second == [{"activity": {"comment": "unseen item", "workflowItem": None}}]


GRANTORS = """query($s: ID!) { node(id: $s) { ... on Subproject {
  grantors { ... on User { login } } workflowItems { totalCount } } } }"""


async def test_a_subproject_names_who_may_grant_access_to_what_is_in_it(gql, make_user):
    """A viewer of a subproject that shows them no item can read whom to ask: its own holders of
    subproject.intent.grantPermission and those whose grant reaches it from the project."""
    _, sam = await make_user("sam")
    ann_id, ann = await make_user("ann")
    bob_id, _ = await make_user("bob")
    project, sub, _ = await build_tree(gql, sam, items=2)
    await _grant(gql, sam, sub["id"], "subproject.view", ann_id)  # after the items: none copied to them
    await _grant(gql, sam, project["id"], "project.intent.grantPermission", bob_id, inherit=True)
    read = (await gql(GRANTORS, {"s": sub["id"]}, token=ann))["node"]
    assert read["workflowItems"]["totalCount"] == 0
    assert sorted(g["login"] for g in read["grantors"]) == ["bob", "sam"]
