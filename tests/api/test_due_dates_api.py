"""Due dates over GraphQL: ``myTasks(orderBy: DUE_DATE)`` (soonest first, none last, paged by
cursor) with ``dueDate`` and ``overdue`` on each task; a changed due date is logged and brings
new reminders (runDueTimers tells the assignee on the day)."""

from datetime import UTC, datetime, timedelta

from models import utcnow
from tests.fixtures.builders import build_tree
from tests.fixtures.documents import CREATE_ITEM, RUN_DUE

TASKS_BY_DUE = """query($after: String) { myTasks(first: 2, after: $after, orderBy: DUE_DATE) {
  totalCount edges { cursor node { dueDate overdue case { id } } } pageInfo { hasNextPage endCursor } } }"""
TASKS_WITH_DUE_DATES = """{ myTasks(first: 10) { edges { node { dueDate overdue } } } }"""
UPDATE_DUE = """mutation($id: ID!, $due: Date) { updateWorkflowItem(input: {id: $id, dueDate: $due}) {
  workflowItem { dueDate history(first: 5) { edges { node { kind data } } } } userErrors { code message } } }"""


async def test_tasks_by_due_date_soonest_first_overdue_marked_and_none_last(gql, make_user):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    _, sub, _ = await build_tree(gql, sam, items=0)
    today = utcnow().date()
    dues = {
        "later": today + timedelta(days=9),
        "none": None,
        "yesterday": today - timedelta(days=1),
        "today": today,
    }
    cases = {}
    for name, due in dues.items():
        item_input = {"subprojectId": sub["id"], "displayName": name, "assigneeId": dev_id}
        if due is not None:
            item_input["dueDate"] = due.isoformat()
        made = (await gql(CREATE_ITEM, {"input": item_input}, token=sam))["createWorkflowItem"]
        assert made["userErrors"] == []
        cases[made["workflowItem"]["case"]["id"]] = name

    seen, after = [], None
    for _ in range(3):
        page = (await gql(TASKS_BY_DUE, {"after": after}, token=dev))["myTasks"]
        assert page["totalCount"] == 4
        seen += [(cases[e["node"]["case"]["id"]], e["node"]["dueDate"], e["node"]["overdue"]) for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == [
        ("yesterday", dues["yesterday"].isoformat(), True),
        ("today", today.isoformat(), False),  # due today: not overdue until the day is over
        ("later", dues["later"].isoformat(), False),
        ("none", None, False),
    ]
    # The default order (oldest first) shows the same marks, read through the item.
    edges = (await gql(TASKS_WITH_DUE_DATES, token=dev))["myTasks"]["edges"]
    assert sorted((e["node"]["dueDate"] or "", e["node"]["overdue"]) for e in edges) == [
        ("", False),
        (dues["yesterday"].isoformat(), True),
        (today.isoformat(), False),
        (dues["later"].isoformat(), False),
    ]
    assert (await gql(TASKS_BY_DUE, {}, token=sam))["myTasks"]["totalCount"] == 0  # sam has no task


async def test_a_new_due_date_is_logged_and_tells_the_assignee_on_the_day(gql, make_user):
    _, sam = await make_user("sam")
    dev_id, _ = await make_user("dev")
    _, root = await make_user("root", admin=True)
    _, sub, _ = await build_tree(gql, sam, items=0)
    item = (
        await gql(
            CREATE_ITEM,
            {"input": {"subprojectId": sub["id"], "displayName": "Audit", "assigneeId": dev_id}},
            token=sam,
        )
    )["createWorkflowItem"]["workflowItem"]
    due = utcnow().date() + timedelta(days=30)
    changed = (await gql(UPDATE_DUE, {"id": item["id"], "due": due.isoformat()}, token=sam))["updateWorkflowItem"]
    assert changed["userErrors"] == [] and changed["workflowItem"]["dueDate"] == due.isoformat()
    entry = changed["workflowItem"]["history"]["edges"][-1]["node"]
    assert entry == {"kind": "workflow_item_updated", "data": {"dueDate": due.isoformat()}}

    on_the_day = datetime.combine(due, datetime.min.time(), tzinfo=UTC)
    early = await gql(RUN_DUE, {"input": {"now": (on_the_day - timedelta(hours=1)).isoformat()}}, token=root)
    assert early["runDueTimers"]["fired"] == []
    fired = (await gql(RUN_DUE, {"input": {"now": on_the_day.isoformat()}}, token=root))["runDueTimers"]
    assert [(e["actor"], e["data"]) for e in fired["fired"]] == [(None, {"dueDate": due.isoformat()})]


USERS_DELIVERY = """{ users(first: 50) { edges { node { login notificationDelivery { level channels } } } } }"""


async def test_reading_everyones_choices_costs_the_same_for_2_and_12_users(gql, make_user, count_statements):
    """An admin's list of users with their delivery choices: one batched read of the choices,
    however many users (a loader), and the default choice for those who made none."""
    _, root = await make_user("root", admin=True)
    await make_user("u1")
    await gql(USERS_DELIVERY, token=root)  # the token is looked up once, then remembered
    with count_statements() as few:
        answer = await gql(USERS_DELIVERY, token=root)
    assert len(answer["users"]["edges"]) == 2
    for i in range(2, 12):
        await make_user(f"u{i}")
    with count_statements() as many:
        answer = await gql(USERS_DELIVERY, token=root)
    assert len(answer["users"]["edges"]) == 12
    assert all(
        e["node"]["notificationDelivery"][0] == {"level": "ASSIGNED", "channels": ["IN_APP"]}
        for e in answer["users"]["edges"]
    )
    assert many.count == few.count, many.statements
