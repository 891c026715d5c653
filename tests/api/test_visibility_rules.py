"""One visibility rule per kind of row, on every read path (issue 19, findings 4 and 8).

An activity entry (its comment and data) is read with viewHistory on its item, subproject or
project, or by a player of the item's case; workflowItem.view alone shows the item, not its
log (engine/people/visibility.py). And an id the viewer may not see gets exactly the answer of an id
that does not exist.
"""

import pytest

from tests.fixtures.builders import build_tree
from tests.fixtures.documents import CREATE_ITEM, EXECUTE, GRANT, NODE_ID, REASSIGN, REORDER, REVOKE, SUBSCRIBE
from tests.fixtures.live import WsClient

# Every query here is also answered without compiled reads, the same (tests/fixtures/api.py).
pytestmark = pytest.mark.usefixtures("differential_reads")

SECRET = "the budget is 42"

READ_PATHS = """query($item: ID!, $act: ID!) {
  item: node(id: $item) { ... on WorkflowItem { displayName
    history { totalCount edges { node { comment data } } }
    case { log { totalCount edges { node { comment data } } } } } }
  entry: node(id: $act) { ... on Activity { comment data } }
  notifications { totalCount unreadCount edges { node { level activity { comment data } } } } }"""


ENTRIES = """query($item: ID!) { node(id: $item) { ... on WorkflowItem { case { id
  log(first: 100) { edges { node { id comment } } } } } } }"""

PICK_LIST = """query($item: ID!) { node(id: $item) { ... on WorkflowItem { case { roles {
  role { shortName } pickList { ... on User { login } } } } } } }"""

RENAME_ITEM = """mutation($id: ID!) { updateWorkflowItem(input: {id: $id, displayName: "x"}) {
  workflowItem { id } userErrors { code message field } } }"""

ORDERING = """query($s: ID!) { node(id: $s) { ... on Subproject { workflowItemOrdering } } }"""


async def _grant(gql, token, resource, intent, party):
    errors = (await gql(GRANT, {"r": resource, "i": intent, "p": party}, token=token))["grantPermission"]["userErrors"]
    assert errors == []


async def _scene(gql, make_user):
    """sam's bug item, assigned to dev (a role player without grants); viewer may only view
    it, historian may also read its history, both subscribed to it; then sam's secret comment."""
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    viewer_id, viewer = await make_user("viewer")
    historian_id, historian = await make_user("historian")
    _, stranger = await make_user("stranger")
    project, sub, _ = await build_tree(gql, sam, items=0, workflow="bug")
    item = (
        await gql(
            CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": "Crash", "assigneeId": dev_id}}, token=sam
        )
    )["createWorkflowItem"]["workflowItem"]
    await _grant(gql, sam, item["id"], "workflowItem.view", viewer_id)
    await _grant(gql, sam, item["id"], "workflowItem.view", historian_id)
    await _grant(gql, sam, item["id"], "workflowItem.viewHistory", historian_id)
    for token in (viewer, historian):
        answer = await gql(SUBSCRIBE, {"level": "CASE", "target": item["id"]}, token=token)
        assert answer["subscribeToNotifications"]["userErrors"] == []
    comment = {"workflowItemId": item["id"], "action": "comment", "comment": SECRET, "data": {"budget": "42"}}
    executed = (await gql(EXECUTE, {"input": comment}, token=sam))["executeAction"]
    assert executed["userErrors"] == []
    entries = (await gql(ENTRIES, {"item": item["id"]}, token=sam))["node"]["case"]
    act = next(e["node"]["id"] for e in entries["log"]["edges"] if e["node"]["comment"] == SECRET)
    return {
        "sam": sam,
        "dev": dev,
        "viewer": viewer,
        "historian": historian,
        "historian_id": historian_id,
        "stranger": stranger,
        "project": project,
        "sub": sub,
        "item": item,
        "case_id": entries["id"],
        "act": act,
    }


def _comments(read):
    """Every comment a READ_PATHS answer shows, path by path."""
    item = read["item"] or {}
    return {
        "history": [e["node"]["comment"] for e in item.get("history", {}).get("edges", [])],
        "log": [e["node"]["comment"] for e in (item.get("case") or {}).get("log", {}).get("edges", [])],
        "node": [read["entry"]["comment"]] if read["entry"] else [],
        "notifications": [(e["node"]["activity"] or {}).get("comment") for e in read["notifications"]["edges"]],
    }


async def test_view_only_user_reads_no_comment_by_any_path(gql, make_user):
    s = await _scene(gql, make_user)
    variables = {"item": s["item"]["id"], "act": s["act"]}

    viewer = await gql(READ_PATHS, variables, token=s["viewer"])
    assert viewer["item"]["displayName"] == "Crash"  # the item itself is visible
    assert viewer["item"]["history"]["totalCount"] == 0 and viewer["item"]["case"]["log"]["totalCount"] == 0
    assert viewer["entry"] is None
    assert viewer["notifications"] == {"totalCount": 0, "unreadCount": 0, "edges": []}
    assert SECRET not in str(viewer)

    historian = await gql(READ_PATHS, variables, token=s["historian"])
    found = _comments(historian)
    assert all(SECRET in comments for comments in found.values()), found
    assert historian["entry"]["data"]["values"] == {"budget": "42"}
    assert historian["notifications"]["unreadCount"] == historian["notifications"]["totalCount"] == 1

    # A player of the case reads its log without a grant, and history agrees with the log.
    dev = await gql(READ_PATHS, variables, token=s["dev"])
    assert SECRET in _comments(dev)["log"] and dev["entry"]["comment"] == SECRET
    assert dev["item"]["history"] == dev["item"]["case"]["log"]

    stranger = await gql(READ_PATHS, variables, token=s["stranger"])
    assert stranger["item"] is None and stranger["entry"] is None


async def test_a_grant_on_the_project_reads_the_entries_of_its_items(gql, make_user):
    s = await _scene(gql, make_user)
    auditor_id, auditor = await make_user("auditor")
    await _grant(gql, s["sam"], s["project"]["id"], "project.viewHistory", auditor_id)
    read = await gql(READ_PATHS, {"item": s["item"]["id"], "act": s["act"]}, token=auditor)
    assert read["entry"]["comment"] == SECRET and read["entry"]["data"]["values"] == {"budget": "42"}
    assert read["item"] is None  # the entry, not the item: it still takes workflowItem.view


async def test_a_revoked_user_loses_notification_contents_at_once(gql, make_user):
    s = await _scene(gql, make_user)
    variables = {"item": s["item"]["id"], "act": s["act"]}
    assert SECRET in _comments(await gql(READ_PATHS, variables, token=s["historian"]))["notifications"]

    revoked = await gql(
        REVOKE,
        {"r": s["item"]["id"], "i": "workflowItem.viewHistory", "p": s["historian_id"]},
        token=s["sam"],
    )
    assert revoked["revokePermission"]["userErrors"] == []
    after = await gql(READ_PATHS, variables, token=s["historian"])
    assert after["notifications"] == {"totalCount": 0, "unreadCount": 0, "edges": []}
    assert after["entry"] is None and after["item"]["case"]["log"]["totalCount"] == 0
    mark = """mutation { markNotificationsRead(input: {all: true}) { unreadCount userErrors { code } } }"""
    assert (await gql(mark, token=s["historian"]))["markNotificationsRead"]["unreadCount"] == 0

    # Granted again, the same notification reads again: it was hidden, not lost.
    await _grant(gql, s["sam"], s["item"]["id"], "workflowItem.viewHistory", s["historian_id"])
    again = await gql(READ_PATHS, variables, token=s["historian"])
    assert again["notifications"]["totalCount"] == 1 and SECRET in _comments(again)["notifications"]


# Finding 8: hidden = missing. A made-up id of the same kind and shape as the hidden one.


def _made_up(real_id: str) -> str:
    prefix, _, rest = real_id.partition("_")
    return f"{prefix}_{'0' * len(rest)}"


def _same_answer(hidden: list[dict], hidden_id: str, missing: list[dict], missing_id: str) -> None:
    """Equal userErrors, once each id is replaced by a placeholder (each message names the id
    the client sent, and nothing else)."""
    assert hidden, "the hidden id was accepted"
    assert [{**e, "message": e["message"].replace(hidden_id, "<id>")} for e in hidden] == [
        {**e, "message": e["message"].replace(missing_id, "<id>")} for e in missing
    ]


async def test_hidden_and_missing_ids_get_the_same_errors(gql, make_user):
    s = await _scene(gql, make_user)
    stranger, item_id, case_id = s["stranger"], s["item"]["id"], s["case_id"]

    async def errors(document, field, variables):
        return (await gql(document, variables, token=stranger))[field]["userErrors"]

    for key, hidden in (("caseId", case_id), ("workflowItemId", item_id)):
        missing = _made_up(hidden)
        reassign = {"role": "assignee", "partyIds": [], "mode": "REPLACE"}
        _same_answer(
            await errors(REASSIGN, "reassignRole", {"input": {**reassign, key: hidden}}),
            hidden,
            await errors(REASSIGN, "reassignRole", {"input": {**reassign, key: missing}}),
            missing,
        )
        answer = await errors(REASSIGN, "reassignRole", {"input": {**reassign, key: hidden}})
        assert answer[0]["field"] == [key] and (key == "workflowItemId" or item_id not in answer[0]["message"])
        execute = {"action": "comment", "comment": "hello"}
        _same_answer(
            await errors(EXECUTE, "executeAction", {"input": {**execute, key: hidden}}),
            hidden,
            await errors(EXECUTE, "executeAction", {"input": {**execute, key: missing}}),
            missing,
        )
    _same_answer(
        await errors(RENAME_ITEM, "updateWorkflowItem", {"id": item_id}),
        item_id,
        await errors(RENAME_ITEM, "updateWorkflowItem", {"id": _made_up(item_id)}),
        _made_up(item_id),
    )
    for resource in (s["project"]["id"], s["sub"]["id"], item_id):
        intent = {"prj": "project.view", "sub": "subproject.view", "wfi": "workflowItem.view"}[resource[:3]]
        variables = {"i": intent, "p": s["historian_id"]}
        _same_answer(
            await errors(GRANT, "grantPermission", {**variables, "r": resource}),
            resource,
            await errors(GRANT, "grantPermission", {**variables, "r": _made_up(resource)}),
            _made_up(resource),
        )
    # Subscribing to news of an item tells nothing either: accepted alike (nothing is delivered
    # until the subscriber may read the item's entries).
    for target in (item_id, _made_up(item_id)):
        answer = (await gql(SUBSCRIBE, {"level": "CASE", "target": target}, token=stranger))["subscribeToNotifications"]
        assert answer == {"ok": True, "userErrors": []}
    for hidden in (s["project"]["id"], s["sub"]["id"], item_id, case_id, s["act"]):
        for id_ in (hidden, _made_up(hidden)):
            assert (await gql(NODE_ID, {"id": id_}, token=stranger))["node"] is None


async def test_a_role_player_without_grants_is_not_allowed_rather_than_told_the_item_is_missing(gql, make_user):
    """dev sees the item through the role (node answers), so a refusal must not pretend it does
    not exist; the viewer holds workflowItem.view; the stranger sees nothing."""
    s = await _scene(gql, make_user)
    item_id = s["item"]["id"]
    assert (await gql(NODE_ID, {"id": item_id}, token=s["dev"]))["node"] == {"id": item_id}
    for who, code in (("dev", "NOT_ALLOWED"), ("viewer", "NOT_ALLOWED"), ("stranger", "NOT_FOUND")):
        answer = (await gql(RENAME_ITEM, {"id": item_id}, token=s[who]))["updateWorkflowItem"]
        assert answer["workflowItem"] is None and [e["code"] for e in answer["userErrors"]] == [code], (who, answer)


async def test_reorder_refuses_hidden_items_as_unknown_ones(gql, make_user):
    _, sam = await make_user("sam")
    clerk_id, clerk = await make_user("clerk")
    _, sub, (first, second) = await build_tree(gql, sam, items=2)
    # Granted after the items were created: the items do not copy these grants.
    await _grant(gql, sam, sub["id"], "subproject.view", clerk_id)
    await _grant(gql, sam, sub["id"], "subproject.reorderWorkflowItems", clerk_id)
    await _grant(gql, sam, first, "workflowItem.view", clerk_id)
    missing = _made_up(second)
    refused_hidden = await gql(REORDER, {"s": sub["id"], "ordering": [first, second]}, token=clerk)
    refused_missing = await gql(REORDER, {"s": sub["id"], "ordering": [first, missing]}, token=clerk)
    hidden_errors = refused_hidden["reorderWorkflowItems"]["userErrors"]
    _same_answer(hidden_errors, second, refused_missing["reorderWorkflowItems"]["userErrors"], missing)
    assert hidden_errors[0]["code"] == "UNKNOWN_ITEM" and hidden_errors[0]["field"] == ["ordering", "1"]

    # sam orders both; the clerk's view of the ordering names only the item it may see.
    assert (await gql(REORDER, {"s": sub["id"], "ordering": [second, first]}, token=sam))["reorderWorkflowItems"][
        "userErrors"
    ] == []
    assert (await gql(ORDERING, {"s": sub["id"]}, token=clerk))["node"]["workflowItemOrdering"] == [first]
    assert (await gql(ORDERING, {"s": sub["id"]}, token=sam))["node"]["workflowItemOrdering"] == [second, first]


async def test_pick_list_names_no_party_of_a_hidden_case(gql, make_user):
    _, sam = await make_user("sam")
    clerk_id, clerk = await make_user("clerk")
    open_id, _ = await make_user("openly")
    secret_id, _ = await make_user("secretly")
    _, sub, _ = await build_tree(gql, sam, items=0, workflow="bug")
    items = {}
    for name, assignee in (("shown", open_id), ("hidden", secret_id), ("mine", None)):
        input_ = {"subprojectId": sub["id"], "displayName": name, "assigneeId": assignee}
        items[name] = (await gql(CREATE_ITEM, {"input": input_}, token=sam))["createWorkflowItem"]["workflowItem"]["id"]
    for name in ("shown", "mine"):
        await _grant(gql, sam, items[name], "workflowItem.view", clerk_id)

    async def assignee_picks(token):
        roles = (await gql(PICK_LIST, {"item": items["mine"]}, token=token))["node"]["case"]["roles"]
        return [p["login"] for r in roles if r["role"]["shortName"] == "assignee" for p in r["pickList"]]

    assert set(await assignee_picks(sam)) == {"openly", "secretly"}
    assert await assignee_picks(clerk) == ["openly"]


# Bounded reads: the rule costs no statement per row.

PAGE_LOGS = """query($s: ID!, $first: Int) { node(id: $s) { ... on Subproject { workflowItems(first: $first) {
  edges { node { case { log { totalCount edges { node { comment data } } } } } } } } } }"""

INBOX_FIRST = """query($first: Int) { notifications(first: $first) { totalCount unreadCount
  edges { node { level activity { comment data workflowItem { displayName } } } } } }"""


@pytest.mark.parametrize("reader", ["owner", "player"])
async def test_case_logs_of_a_page_cost_the_same_for_2_and_6_items(gql, make_user, count_statements, reader):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    _, sub, _ = await build_tree(gql, sam, items=0, workflow="bug")
    # dev sees the subproject, and its items copy workflowItem.view from it, but not viewHistory.
    await _grant(gql, sam, sub["id"], "subproject.view", dev_id)
    for i in range(6):
        item = {"subprojectId": sub["id"], "displayName": f"Bug {i}", "assigneeId": dev_id}
        item_id = (await gql(CREATE_ITEM, {"input": item}, token=sam))["createWorkflowItem"]["workflowItem"]["id"]
        await gql(EXECUTE, {"input": {"workflowItemId": item_id, "action": "comment", "comment": f"c{i}"}}, token=sam)
    # The owner holds viewHistory (nothing checked per entry); the player reads by its role.
    token = sam if reader == "owner" else dev
    await gql(PAGE_LOGS, {"s": sub["id"], "first": 1}, token=token)  # the token is remembered from here on
    counts = {}
    for first in (2, 6):
        with count_statements() as counter:
            page = await gql(PAGE_LOGS, {"s": sub["id"], "first": first}, token=token)
        counts[first] = counter.count
        logs = [e["node"]["case"]["log"] for e in page["node"]["workflowItems"]["edges"]]
        comments = sorted(e["node"]["comment"] for log in logs for e in log["edges"] if e["node"]["comment"])
        assert comments == [f"c{i}" for i in range(first)]  # each item's log has its own comment, whoever reads
        assert {log["totalCount"] for log in logs} == {5}  # created, opened, two roles assigned, comment
    assert counts[2] == counts[6], counts


async def test_a_notifications_page_costs_the_same_for_2_and_8(gql, make_user, count_statements):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    _, sub, _ = await build_tree(gql, sam, items=0, workflow="bug")
    for i in range(8):
        item = {"subprojectId": sub["id"], "displayName": f"Bug {i}", "assigneeId": dev_id}
        await gql(CREATE_ITEM, {"input": item}, token=sam)  # dev is assigned: one notification each
    await gql(INBOX_FIRST, {"first": 1}, token=dev)
    counts = {}
    for first in (2, 8):
        with count_statements() as counter:
            inbox = (await gql(INBOX_FIRST, {"first": first}, token=dev))["notifications"]
        counts[first] = counter.count
        assert len(inbox["edges"]) == first and inbox["totalCount"] == inbox["unreadCount"] == 8
        assert all(e["node"]["activity"]["workflowItem"] for e in inbox["edges"])
    assert counts[2] == counts[8], counts


# Live: the same rule on the WebSocket streams.

LIVE_ACTIVITY = """subscription($item: ID!, $after: String) {
  activity(workflowItemId: $item, after: $after) { comment data } }"""
SEQS = """query($item: ID!) { node(id: $item) { ... on WorkflowItem {
  case { log(first: 100) { edges { node { seq } } } } } } }"""
LIVE_NOTES = """subscription { notifications { activity { comment } } }"""


async def test_live_streams_skip_what_the_viewer_may_not_read(live_server, make_user):
    gql = live_server.gql
    _, sam = await make_user("sam")
    viewer_id, viewer = await make_user("viewer")
    _, sub, _ = await build_tree(gql, sam, items=0, workflow="bug")
    item_id = (await gql(CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": "Crash"}}, token=sam))[
        "createWorkflowItem"
    ]["workflowItem"]["id"]
    await _grant(gql, sam, item_id, "workflowItem.view", viewer_id)
    await gql(SUBSCRIBE, {"level": "CASE", "target": item_id}, token=viewer)
    log = (await gql(SEQS, {"item": item_id}, token=sam))["node"]["case"]["log"]["edges"]
    client = await WsClient.connect(live_server.ws, viewer)
    try:
        # From the last entry on: the secret comment comes by replay or live, never missed.
        await client.subscribe(LIVE_ACTIVITY, {"item": item_id, "after": str(log[-1]["node"]["seq"])})
        await client.subscribe(LIVE_NOTES)
        comment = {"workflowItemId": item_id, "action": "comment", "comment": SECRET, "data": {"budget": "42"}}
        await gql(EXECUTE, {"input": comment}, token=sam)
        # Then viewer may read history; the next comment is the first thing the streams deliver.
        await _grant(gql, sam, item_id, "workflowItem.viewHistory", viewer_id)
        await gql(EXECUTE, {"input": {**comment, "comment": "public", "data": {}}}, token=sam)
        received = await client.receive(2)
    finally:
        await client.close()
    assert SECRET not in str(received)
    expected = [
        {"activity": {"comment": "public", "data": {"from": "open", "to": "open"}}},
        {"notifications": {"activity": {"comment": "public"}}},
    ]
    assert sorted(map(str, received)) == sorted(map(str, expected))
