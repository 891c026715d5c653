"""Issue 20's engine rules over HTTP: reopening inside a closed subproject, unknown actions,
grants in the history and a state's hidden fields (child workflow specs: test_child_workflows_api.py)."""

from tests.api.documents import CLOSE_SUBPROJECT, CREATE_ITEM, DEFINE, EXECUTE, GRANT, HISTORY, REVOKE
from tests.api.test_resource_tree import build_tree

STATE = """query($id: ID!) { node(id: $id) { ... on WorkflowItem { case { status version
  state { shortName hiddenFields } } } } }"""


async def _bug(gql, sam, dev_id):
    project, sub, _ = await build_tree(gql, sam, items=0, workflow="bug")
    item = (
        await gql(
            CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": "Crash", "assigneeId": dev_id}}, token=sam
        )
    )["createWorkflowItem"]["workflowItem"]
    return project, sub, item


async def _execute(gql, token, item_id, action):
    extra = {"resolution": "fixed"} if action == "resolve" else {}
    request = {"input": {"workflowItemId": item_id, "action": action, **extra}}
    return (await gql(EXECUTE, request, token=token))["executeAction"]


async def test_reopening_in_a_closed_subproject_is_refused(gql, make_user):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    _, sub, item = await _bug(gql, sam, dev_id)
    assert (await _execute(gql, dev, item["id"], "resolve"))["userErrors"] == []
    assert (await _execute(gql, sam, item["id"], "close"))["userErrors"] == []
    closed = (await gql(CLOSE_SUBPROJECT, {"id": sub["id"]}, token=sam))["closeSubproject"]
    assert closed["userErrors"] == [] and closed["subproject"]["status"] == "CLOSED"
    before = (await gql(STATE, {"id": item["id"]}, token=sam))["node"]["case"]
    refused = await _execute(gql, sam, item["id"], "reopen")
    assert [(e["code"], e["field"]) for e in refused["userErrors"]] == [("RESOURCE_CLOSED", ["action"])]
    assert refused["userErrors"][0]["message"] == "The subproject is closed: its workflow items cannot be reopened."
    assert refused["case"] is None and refused["activity"] is None
    assert (await gql(STATE, {"id": item["id"]}, token=sam))["node"]["case"] == before
    assert before["status"] == "COMPLETED" and before["state"]["shortName"] == "closed"


async def test_an_unknown_action_says_so_and_names_the_actions(gql, make_user):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    _, _, item = await _bug(gql, sam, dev_id)
    unknown = await _execute(gql, dev, item["id"], "resolv")
    assert unknown["userErrors"] == [
        {
            "code": "UNKNOWN_ACTION",
            "message": "The workflow 'bug' has no action 'resolv'; its actions: open, comment, edit, resolve, close, "
            "reopen.",
            "field": ["action"],
        }
    ]
    not_now = await _execute(gql, dev, item["id"], "close")
    assert [e["code"] for e in not_now["userErrors"]] == ["ACTION_NOT_ENABLED"]


PERMISSION_KINDS = ("permission_granted", "permission_revoked")


async def _permission_entries(gql, token, project_id):
    edges = (await gql(HISTORY, {"id": project_id, "first": 100}, token=token))["node"]["history"]["edges"]
    return [
        (e["node"]["kind"], e["node"]["actor"]["login"], e["node"]["data"])
        for e in edges
        if e["node"]["kind"] in PERMISSION_KINDS
    ]


async def test_grants_and_revocations_show_in_the_history_of_those_who_may_list_them(gql, make_user):
    _, sam = await make_user("sam")
    bob_id, _ = await make_user("bob")
    reader_id, reader = await make_user("reader")
    project, _, _ = await build_tree(gql, sam, items=0)
    pid = project["id"]

    async def change(document, intent, party):
        body = await gql(document, {"r": pid, "i": intent, "p": party}, token=sam)
        assert next(iter(body.values()))["userErrors"] == []

    for intent in ("project.view", "project.viewHistory"):
        await change(GRANT, intent, reader_id)
    await change(GRANT, "project.update", bob_id)
    await change(GRANT, "project.update", bob_id)  # held already: no second entry
    await change(REVOKE, "project.update", bob_id)
    await change(REVOKE, "project.update", bob_id)  # not held: no entry
    update = {"intent": "project.update", "partyId": bob_id}
    assert await _permission_entries(gql, sam, pid) == [
        ("permission_granted", "sam", {"intent": "project.view", "partyId": reader_id}),
        ("permission_granted", "sam", {"intent": "project.viewHistory", "partyId": reader_id}),
        ("permission_granted", "sam", update),
        ("permission_revoked", "sam", update),
    ]
    filtered = await gql(HISTORY, {"id": pid, "filter": {"kind": "permission_revoked"}}, token=sam)
    assert [e["node"]["data"] for e in filtered["node"]["history"]["edges"]] == [update]
    # reader reads the project's history, but may not list its grants: the log does not tell them either
    history = (await gql(HISTORY, {"id": pid, "first": 100}, token=reader))["node"]["history"]
    assert history["totalCount"] > 0 and await _permission_entries(gql, reader, pid) == []
    await change(GRANT, "project.intent.listPermissions", reader_id)
    assert len(await _permission_entries(gql, reader, pid)) == 5


async def test_the_case_state_names_the_fields_to_hide(gql, make_user):
    """A state's hidden_fields: the fields a form hides while the case is in a state."""
    _, admin = await make_user("root", admin=True)
    spec = {
        "short_name": "quote",
        "states": {"draft": {"hidden_fields": ["amount", "billingDate"]}, "sent": {"terminal": True}},
        "actions": {"send": {"enabled_states": ["draft"], "new_state": "sent", "privileges": ["workflowItem.update"]}},
    }
    assert (await gql(DEFINE, {"spec": spec}, token=admin))["defineWorkflow"]["userErrors"] == []
    _, _, (item_id,) = await build_tree(gql, admin, items=1, workflow="quote")
    state = (await gql(STATE, {"id": item_id}, token=admin))["node"]["case"]["state"]
    assert state == {"shortName": "draft", "hiddenFields": ["amount", "billingDate"]}
    assert (await _execute(gql, admin, item_id, "send"))["userErrors"] == []
    state = (await gql(STATE, {"id": item_id}, token=admin))["node"]["case"]["state"]
    assert state == {"shortName": "sent", "hiddenFields": []}
