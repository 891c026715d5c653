"""The dashboard's reads stay bounded however many items there are (issue 52): each test makes a
table thousands of rows long, set-based, and holds the executed plan of the statement a read
sends to a number of rows that does not grow with it, as planned for the statement's first runs
and from its sixth on (tests/fixtures/plans.py). A change that reintroduces a scan fails here."""

import pytest

from engine.cases.assignment import PICK_LIST_CASES
from tests.fixtures.builders import build_tree
from tests.fixtures.database import BACKEND
from tests.fixtures.documents import CREATE_ITEM
from tests.fixtures.plans import analyze, multiply_item, plans, rows_read, sent

pytestmark = [pytest.mark.skipif(BACKEND != "postgres", reason="PostgreSQL's plans"), pytest.mark.timeout(120)]

COPIES = 3000

PICKS = """query($id: ID!) { node(id: $id) { ... on WorkflowItem { case {
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
        answer = await gql(PICKS, {"id": item["id"]}, token=alice)
    roles = {r["role"]["shortName"]: [p["login"] for p in r["pickList"]] for r in answer["node"]["case"]["roles"]}
    assert roles["assignee"] == ["bob"] and roles["submitter"] == ["alice"]
    assert len(statements) == 1
    for plan in await plans(db, *statements[0]):
        # the newest cases of each version, a backward range of (workflow_id, id): not COPIES
        assert rows_read(plan, "workflow_case") <= 2 * PICK_LIST_CASES + 10
        assert rows_read(plan, "case_role_party") <= 2 * PICK_LIST_CASES
        assert rows_read(plan, "workflow_item") <= 2 * PICK_LIST_CASES
