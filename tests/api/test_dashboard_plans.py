"""The dashboard's reads stay bounded however many items there are (issue 52): each test makes a
table thousands of rows long, set-based, and holds the executed plan of the statement a read
sends to a number of rows that does not grow with it, as planned for the statement's first runs
and from its sixth on (tests/fixtures/plans.py). A change that reintroduces a scan fails here."""

import pytest

from engine.cases.assignment import PICK_LIST_CASES
from engine.notify.notifications import UNREAD_COUNT_CAP
from tests.fixtures.builders import build_tree
from tests.fixtures.database import BACKEND
from tests.fixtures.documents import CREATE_ITEM
from tests.fixtures.plans import (
    analyze,
    hidden_subprojects,
    multiply_item,
    notifications_of,
    plans,
    rows_read,
    sent,
)

pytestmark = [pytest.mark.skipif(BACKEND != "postgres", reason="PostgreSQL's plans"), pytest.mark.timeout(120)]

COPIES = 3000

ROLE_PICK_LISTS = """query($id: ID!) { node(id: $id) { ... on WorkflowItem { case {
  roles { role { shortName } pickList { ... on User { login } } } } } } }"""


async def bug_item(gql, token, assignee_id):
    """A subproject of the bug workflow and one item assigned to ``assignee_id``."""
    _, sub, _ = await build_tree(gql, token, items=0, workflow="bug")
    wanted = {"subprojectId": sub["id"], "displayName": "Leak", "assigneeId": assignee_id}
    created = await gql(CREATE_ITEM, {"input": wanted}, token=token)
    return created["createWorkflowItem"]["workflowItem"]


async def test_a_pick_list_reads_the_newest_cases_of_its_workflow_not_every_case(gql, db, make_user):
    _, alice = await make_user("alice")
    bob_id, _ = await make_user("bob")
    item = await bug_item(gql, alice, bob_id)
    await multiply_item(db, item["id"], COPIES)
    await analyze(db)
    with sent(db, "row_number", "case_role_party") as statements:
        answer = await gql(ROLE_PICK_LISTS, {"id": item["id"]}, token=alice)
    roles = {r["role"]["shortName"]: [p["login"] for p in r["pickList"]] for r in answer["node"]["case"]["roles"]}
    assert roles["assignee"] == ["bob"] and roles["submitter"] == ["alice"]
    assert len(statements) == 1
    for plan in await plans(db, *statements[0]):
        # the newest cases of each version, a backward range of (workflow_id, id): not COPIES
        assert rows_read(plan, "workflow_case") <= 2 * PICK_LIST_CASES + 10
        assert rows_read(plan, "case_role_party") <= 2 * PICK_LIST_CASES
        assert rows_read(plan, "workflow_item") <= 2 * PICK_LIST_CASES


TASKS_BY_DUE_DATE = """query { myTasks(first: 100, orderBy: DUE_DATE) { totalCount pageInfo { hasNextPage }
  edges { node { id dueDate action { shortName } case { workflowItem { displayName } } } } } }"""


@pytest.mark.parametrize("dated", [True, False])
async def test_my_tasks_by_due_date_and_their_count_read_a_page_of_the_index(gql, resolvers_only, db, make_user, dated):
    """A user with thousands of tasks, all with a due date or none: the dashboard's task list
    (the first 100 by due date, and totalCount) reads about a page of the task index per party
    on both roads, and the count from ``task_count``, not every task."""
    _, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    _, sub, _ = await build_tree(gql, alice, items=0, workflow="bug")
    wanted = {"subprojectId": sub["id"], "displayName": "Leak", "assigneeId": bob_id}
    created = await gql(CREATE_ITEM, {"input": {**wanted, **({"dueDate": "2031-07-01"} if dated else {})}}, token=alice)
    await multiply_item(db, created["createWorkflowItem"]["workflowItem"]["id"], COPIES)
    await analyze(db)
    for client in (gql, resolvers_only):
        with sent(db, "task_") as statements:
            tasks = (await client(TASKS_BY_DUE_DATE, token=bob))["myTasks"]
        assert tasks["totalCount"] == COPIES + 1 and len(tasks["edges"]) == 100 and tasks["pageInfo"]["hasNextPage"]
        assert {e["node"]["dueDate"] for e in tasks["edges"]} == {"2031-07-01" if dated else None}
        assert statements
        for statement in statements:
            for plan in await plans(db, *statement):
                # each party's runs past no cursor: a page and a row of the index, not COPIES (the
                # instances the page names are probed, or at this size scanned: not held here)
                assert rows_read(plan, "task_assignment") <= 4 * 101
                assert rows_read(plan, "task_count") <= 10


PROJECTS_AND_SUBPROJECTS = """{ projects(first: 100) { totalCount edges { node { displayName
  subprojects(first: 100) { totalCount edges { node { displayName } } } } } } }"""


async def test_a_projects_subprojects_are_probed_not_merged_with_every_subproject_grant(gql, db, make_user):
    """The projects page lists each project's subprojects: their grants are probed one by one,
    not merged with the viewer's whole range of subproject grants (thousands ahead of them here,
    of a project the viewer may not see), once per project."""
    alice_id, alice = await make_user("alice")
    _, sub, _ = await build_tree(gql, alice, items=0)
    await hidden_subprojects(db, sub["id"], alice_id, COPIES)
    await analyze(db)
    with sent(db, "subproject", "json_build_object") as statements:
        answer = await gql(PROJECTS_AND_SUBPROJECTS, token=alice)
    (project,) = [e["node"] for e in answer["projects"]["edges"]]  # not the hidden one
    assert project["subprojects"]["totalCount"] == 1 and answer["projects"]["totalCount"] == 1
    (statement,) = statements
    for plan in await plans(db, *statement):
        assert rows_read(plan, "permission") <= 20


UNREAD_BADGE = """{ notifications(first: 20) { unreadCount edges { node { readAt } } } }"""


async def test_the_unread_badge_reads_a_range_of_the_unread_notifications(gql, db, make_user):
    """Thousands of read notifications newer than the unread ones: the badge counts the newest
    unread up to its cap from the partial index of unread rows, not the recipient's every row
    (without that index, a backward range of the recipient's rows reads the 20,000 read first; at
    1M PostgreSQL also needed the count's order by id to prefer the index to a scan)."""
    alice_id, alice = await make_user("alice")
    project, _, _ = await build_tree(gql, alice, items=0)
    await notifications_of(db, alice_id, project["id"], unread=UNREAD_COUNT_CAP + 500, read=20_000)
    await analyze(db)
    with sent(db, "count(", "notification") as statements:
        answer = await gql(UNREAD_BADGE, token=alice)
    assert answer["notifications"]["unreadCount"] == UNREAD_COUNT_CAP  # "1000+"
    assert all(e["node"]["readAt"] is not None for e in answer["notifications"]["edges"])  # the newest are read
    (statement,) = statements
    for plan in await plans(db, *statement):
        assert rows_read(plan, "notification") <= UNREAD_COUNT_CAP + 10
