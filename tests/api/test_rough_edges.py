"""What a new user of the API tripped over (issue 40, findings 13 and 16): a wrong intent name
lists the right ones, a role is never left with no one, `data` is key/value data, and marking a
notification that does not exist is NOT_FOUND; each refusal one sentence, changing nothing."""

from tests.fixtures.builders import build_tree
from tests.fixtures.documents import CASE, EXECUTE, GRANT, REASSIGN

MARK_SOME_READ = """mutation($ids: [ID!]) { markNotificationsRead(input: {ids: $ids}) {
  unreadCount userErrors { code message field } } }"""
NOTIFICATION_IDS = """{ notifications(first: 20) { unreadCount edges { node { id readAt } } } }"""


def players(case: dict, role: str) -> list[str]:
    return next(sorted(p["login"] for p in r["assignees"]) for r in case["roles"] if r["role"]["shortName"] == role)


async def test_a_wrong_intent_name_lists_the_intents_of_the_resource(gql, make_user):
    _, owner = await make_user("owner")
    viewer_id, _ = await make_user("viewer")
    project, _, items = await build_tree(gql, owner, items=1)

    on_project = await gql(GRANT, {"r": project["id"], "i": "project.read", "p": viewer_id}, token=owner)
    on_item = await gql(GRANT, {"r": items[0], "i": "project.view", "p": viewer_id}, token=owner)

    (error,) = on_project["grantPermission"]["userErrors"]
    assert error == {
        "code": "INVALID_INPUT",
        "message": "'project.read' is not an intent of this resource, whose intents are project.view, "
        "project.viewHistory, project.update, project.assign, project.close, project.intent.listPermissions, "
        "project.intent.grantPermission, project.intent.revokePermission, project.createSubproject.",
    }
    (error,) = on_item["grantPermission"]["userErrors"]
    assert error["message"].startswith("'project.view' is not an intent of this resource, whose intents are ")
    assert "workflowItem.viewHistory" in error["message"] and "project." not in error["message"].split("are ")[1]


async def test_a_role_is_never_left_with_no_one(gql, make_user):
    """Finding 16: REPLACE with no party (or REMOVE of the last one) left the assignee's
    `resolve` waiting for no one."""
    _, owner = await make_user("owner")
    dev_id, _ = await make_user("dev")
    ann_id, _ = await make_user("ann")
    _, _, (item,) = await build_tree(gql, owner, items=1, workflow="bug")
    add = {"workflowItemId": item, "role": "assignee", "partyIds": [dev_id, ann_id], "mode": "REPLACE"}
    assert (await gql(REASSIGN, {"input": add}, token=owner))["reassignRole"]["userErrors"] == []

    emptied = (await gql(REASSIGN, {"input": {**add, "partyIds": []}}, token=owner))["reassignRole"]
    removed = (await gql(REASSIGN, {"input": {**add, "partyIds": [dev_id, ann_id], "mode": "REMOVE"}}, token=owner))[
        "reassignRole"
    ]
    one_left = (await gql(REASSIGN, {"input": {**add, "partyIds": [dev_id], "mode": "REMOVE"}}, token=owner))[
        "reassignRole"
    ]

    sentence = "The role 'assignee' cannot be left with no one: replace its players with the parties who take over."
    assert emptied == {
        "case": None,
        "userErrors": [{"code": "INVALID_INPUT", "message": sentence, "field": ["partyIds"]}],
    }
    assert removed["userErrors"] == emptied["userErrors"]
    assert one_left["userErrors"] == [] and players(one_left["case"], "assignee") == ["ann"]


async def test_data_is_an_object_of_keys_and_values(gql, make_user):
    _, owner = await make_user("owner")
    _, _, (item,) = await build_tree(gql, owner, items=1, workflow="bug")
    version = (await gql(CASE, {"id": item}, token=owner))["node"]["case"]["version"]

    answers = []
    for data in ([1, 2], "note", 3):
        run = {"workflowItemId": item, "action": "comment", "comment": "see data", "data": data}
        answers.append((await gql(EXECUTE, {"input": run}, token=owner))["executeAction"]["userErrors"])
    kept = {"workflowItemId": item, "action": "comment", "data": {"note": "first try"}}
    done = (await gql(EXECUTE, {"input": kept}, token=owner))["executeAction"]

    assert answers == [[{"code": "INVALID_INPUT", "message": "data must be a JSON object.", "field": ["data"]}]] * 3
    assert done["userErrors"] == [] and done["activity"]["data"]["values"] == {"note": "first try"}
    assert done["case"]["version"] == version + 1  # the refusals changed nothing


async def test_marking_a_notification_that_does_not_exist_is_not_found(gql, make_user):
    _, owner = await make_user("owner")
    dev_id, dev = await make_user("dev")
    _, _, (item,) = await build_tree(gql, owner, items=1, workflow="bug")
    await gql(REASSIGN, {"input": {"workflowItemId": item, "role": "assignee", "partyIds": [dev_id]}}, token=owner)
    inbox = (await gql(NOTIFICATION_IDS, token=dev))["notifications"]
    mine = [e["node"]["id"] for e in inbox["edges"]]
    assert mine and inbox["unreadCount"] == len(mine)
    _, _, (others,) = await build_tree(gql, owner, items=1, workflow="bug")
    await gql(REASSIGN, {"input": {"workflowItemId": others, "role": "assignee", "partyIds": [dev_id]}}, token=owner)

    unknown = await gql(MARK_SOME_READ, {"ids": [mine[0], "ntf_01JDZZZZZZZZZZZZZZZZZZZZZZ"]}, token=dev)
    someone_elses = await gql(MARK_SOME_READ, {"ids": [mine[0]]}, token=owner)

    assert unknown["markNotificationsRead"] == {
        "unreadCount": None,
        "userErrors": [
            {
                "code": "NOT_FOUND",
                "message": "No notification with id 'ntf_01JDZZZZZZZZZZZZZZZZZZZZZZ' exists.",
                "field": ["ids"],
            }
        ],
    }
    assert someone_elses["markNotificationsRead"]["userErrors"][0]["code"] == "NOT_FOUND"
    after = (await gql(NOTIFICATION_IDS, token=dev))["notifications"]
    assert after["unreadCount"] == len(mine) + 1  # nothing was marked
    marked = (await gql(MARK_SOME_READ, {"ids": mine}, token=dev))["markNotificationsRead"]
    assert marked == {"unreadCount": 1, "userErrors": []}
