"""Notification levels, de-duplication, the actor never notified, read marks."""

from tests.fixtures.builders import build_tree, inbox
from tests.fixtures.documents import CREATE_ITEM, EXECUTE, SUBSCRIBE

UNSUBSCRIBE = """mutation($level: NotificationLevel!, $target: ID) {
  unsubscribeFromNotifications(input: {level: $level, targetId: $target}) { ok userErrors { code message } } }"""
MARK = """mutation($ids: [ID!], $all: Boolean) {
  markNotificationsRead(input: {ids: $ids, all: $all}) { unreadCount userErrors { code } } }"""
GRANT_INTENT = """mutation($r: ID!, $p: ID!, $intent: String!) {
  grantPermission(input: {resourceId: $r, intent: $intent,
  partyId: $p}) { userErrors { code } } }"""


async def test_levels_and_deduplication(gql, make_user):
    _, sam = await make_user("sam")  # creates the bug: submitter
    dev_id, dev = await make_user("dev")  # the bug's assignee
    watcher_id, watcher = await make_user("watcher")  # subscribed to the whole subproject
    fan_id, fan = await make_user("fan")  # subscribed to the one item, but may not view it at first
    _, sub, _ = await build_tree(gql, sam, items=0, workflow="bug")
    item = (
        await gql(
            CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": "Crash", "assigneeId": dev_id}}, token=sam
        )
    )["createWorkflowItem"]["workflowItem"]
    # Level 1: dev was assigned "resolve" when the case opened; sam (the actor) hears nothing.
    assert [(e["node"]["level"], e["node"]["activity"]["action"]) for e in (await inbox(gql, dev))["edges"]] == [
        ("ASSIGNED", "open")
    ]
    assert (await inbox(gql, sam))["totalCount"] == 0

    await gql(SUBSCRIBE, {"level": "WORKFLOW", "target": sub["id"]}, token=watcher)
    await gql(SUBSCRIBE, {"level": "CASE", "target": item["id"]}, token=fan)
    await gql(SUBSCRIBE, {"level": "ROLE"}, token=dev)
    await gql(SUBSCRIBE, {"level": "CASE", "target": item["id"]}, token=dev)  # dev would qualify three ways
    for user in (watcher_id, fan_id):  # a notification shows an activity: reading it takes viewHistory
        for intent in ("workflowItem.view", "workflowItem.viewHistory"):
            await gql(GRANT_INTENT, {"r": item["id"], "p": user, "intent": intent}, token=sam)
    await gql(
        EXECUTE, {"input": {"workflowItemId": item["id"], "action": "comment", "comment": "any news?"}}, token=sam
    )
    levels = {}
    for name, token in (("dev", dev), ("watcher", watcher), ("fan", fan), ("sam", sam)):
        edges = (await inbox(gql, token))["edges"]
        levels[name] = [e["node"]["level"] for e in edges if e["node"]["activity"]["action"] == "comment"]
    assert levels == {"dev": ["ROLE"], "watcher": ["WORKFLOW"], "fan": ["CASE"], "sam": []}

    # dev resolves: sam becomes assigned to "close" (level 1); dev, the actor, hears nothing.
    await gql(EXECUTE, {"input": {"workflowItemId": item["id"], "action": "resolve", "resolution": "fixed"}}, token=dev)
    latest = (await inbox(gql, sam))["edges"][0]["node"]
    assert (latest["level"], latest["activity"]["action"]) == ("ASSIGNED", "resolve")
    assert [e["node"]["activity"]["action"] for e in (await inbox(gql, dev))["edges"]].count("resolve") == 0


async def test_no_notification_about_invisible_items_and_read_marks(gql, make_user):
    _, sam = await make_user("sam")
    _, outsider = await make_user("outsider")
    _, sub, _ = await build_tree(gql, sam, items=0)
    await gql(SUBSCRIBE, {"level": "WORKFLOW", "target": sub["id"]}, token=outsider)
    await gql(CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": "Secret"}}, token=sam)
    assert (await inbox(gql, outsider))["totalCount"] == 0
    refused = (await gql(UNSUBSCRIBE, {"level": "ASSIGNED"}, token=outsider))["unsubscribeFromNotifications"]
    assert refused["userErrors"][0]["code"] == "INVALID_INPUT"

    dev_id, dev = await make_user("dev")
    for name in ("one", "two", "three"):
        await gql(
            CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": name, "assigneeId": dev_id}}, token=sam
        )
    box = await inbox(gql, dev)
    assert box["unreadCount"] == 3
    first_id = box["edges"][0]["node"]["id"]
    assert (await gql(MARK, {"ids": [first_id]}, token=dev))["markNotificationsRead"]["unreadCount"] == 2
    assert (await inbox(gql, dev, unread=True))["totalCount"] == 2
    assert (await gql(MARK, {"all": True}, token=dev))["markNotificationsRead"]["unreadCount"] == 0


async def test_the_unread_count_stops_at_its_cap_and_the_list_does_not(gql, make_user, monkeypatch):
    """A badge's count is bounded (engine.notify.notifications.UNREAD_COUNT_CAP); the list and its
    totalCount still show every notification."""
    from engine.notify import notifications

    monkeypatch.setattr(notifications, "UNREAD_COUNT_CAP", 2)
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    _, sub, _ = await build_tree(gql, sam, items=0)
    for name in ("one", "two", "three"):
        await gql(
            CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": name, "assigneeId": dev_id}}, token=sam
        )
    box = await inbox(gql, dev)
    assert (box["unreadCount"], box["totalCount"], len(box["edges"])) == (2, 3, 3)
    first_id = box["edges"][0]["node"]["id"]
    assert (await gql(MARK, {"ids": [first_id]}, token=dev))["markNotificationsRead"]["unreadCount"] == 2
    second_id = box["edges"][1]["node"]["id"]
    assert (await gql(MARK, {"ids": [second_id]}, token=dev))["markNotificationsRead"]["unreadCount"] == 1
