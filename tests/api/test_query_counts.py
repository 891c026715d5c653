"""SQL statements per request are bounded by the query's depth, never by its breadth."""

import re

from tests.fixtures.builders import build_tree, grow
from tests.fixtures.documents import CREATE_ITEM, CREATE_PROJECT, CREATE_SUBPROJECT, GRANT, NESTED


async def test_nested_read_statement_count_does_not_grow_with_breadth(gql, make_user, count_statements):
    _, token = await make_user("alice")
    await grow(gql, token, 1, 1, 1)
    with count_statements() as small:
        data = await gql(NESTED, token=token)
    assert data["projects"]["totalCount"] == 1
    await grow(gql, token, 1, 2, 5)  # 2 projects, 3 subprojects, 11 items
    await grow(gql, token, 1, 7, 10)  # 3 projects, 10 subprojects, 81 items: 10x the breadth
    with count_statements() as large:
        data = await gql(NESTED, token=token)
    items = [
        i
        for p in data["projects"]["edges"]
        for s in p["node"]["subprojects"]["edges"]
        for i in s["node"]["workflowItems"]["edges"]
    ]
    assert len(items) == 81 and all(i["node"]["case"]["state"]["shortName"] == "open" for i in items)
    assert large.count == small.count, large.statements
    assert large.count <= 20, large.count


async def test_creating_an_item_costs_the_same_statements_however_many_grants_it_inherits(
    gql, make_user, count_statements
):
    """A new item copies its subproject's grants and gives its creator every intent: one
    insert, not one per grant."""
    _, alice = await make_user("alice")
    _, sub, _ = await build_tree(gql, alice, items=1)

    async def create(name):
        created = await gql(CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": name}}, token=alice)
        assert created["createWorkflowItem"]["userErrors"] == []
        return created["createWorkflowItem"]["workflowItem"]["id"]

    with count_statements() as few:
        await create("Before")
    viewers = []
    for n in range(8):
        user_id, token = await make_user(f"viewer{n}")
        granted = await gql(GRANT, {"r": sub["id"], "i": "subproject.view", "p": user_id}, token=alice)
        assert granted["grantPermission"]["userErrors"] == []
        viewers.append(token)
    with count_statements() as many:
        item_id = await create("After")
    assert many.count == few.count, many.statements
    for token in viewers:  # the copied grants hold: each viewer sees the new item
        seen = await gql("query($id: ID!) { node(id: $id) { id } }", {"id": item_id}, token=token)
        assert seen["node"] == {"id": item_id}


CREATE_ITEM_WITH_ROLES = """mutation($input: CreateWorkflowItemInput!) {
  createWorkflowItem(input: $input) {
    workflowItem { id case { roles { role { shortName } assignees { ... on User { login } } } } }
    userErrors { code } } }"""


async def test_creating_an_item_writes_its_role_players_at_once(gql, make_user, count_statements):
    """A new bug's two roles (submitter: its creator, assignee: the user named) are written by
    one insert, and creating it reads nothing back that it has just written."""
    _, alice = await make_user("alice")
    bob_id, _ = await make_user("bob")
    _, sub, _ = await build_tree(gql, alice, items=0, workflow="bug")
    with count_statements() as creating:
        created = await gql(
            CREATE_ITEM_WITH_ROLES,
            {"input": {"subprojectId": sub["id"], "displayName": "Leak", "assigneeId": bob_id}},
            token=alice,
        )
    payload = created["createWorkflowItem"]
    assert payload["userErrors"] == []
    roles = {
        r["role"]["shortName"]: [a["login"] for a in r["assignees"]] for r in payload["workflowItem"]["case"]["roles"]
    }
    assert roles == {"submitter": ["alice"], "assignee": ["bob"]}
    assert len(creating.starting("INSERT INTO case_role_party")) == 1, creating.statements
    log_written = creating.starting("INSERT INTO activity")[0]
    assert not [s for s in creating.statements[:log_written] if "FROM workflow_case" in s], "the new case was read back"


async def test_creating_a_project_and_a_subproject_deletes_nothing(gql, make_user, count_statements):
    """A new resource has no budgets to replace: its budgets are inserted, nothing is deleted."""
    _, alice = await make_user("alice")
    budgets = [{"organization": "City", "currency": "EUR", "value": "10.00"}]
    with count_statements() as creating:
        project = await gql(CREATE_PROJECT, {"input": {"displayName": "P", "projectedBudgets": budgets}}, token=alice)
        sub = await gql(
            CREATE_SUBPROJECT,
            {
                "input": {
                    "projectId": project["createProject"]["project"]["id"],
                    "displayName": "S",
                    "currency": "EUR",
                    "projectedBudgets": budgets,
                }
            },
            token=alice,
        )
    assert project["createProject"]["project"]["projectedBudgets"] == budgets
    assert sub["createSubproject"]["userErrors"] == []
    assert not creating.starting("DELETE"), creating.statements


async def test_a_workflow_definition_is_read_once(gql, make_user, count_statements):
    """Definitions never change: once read, showing a case's state reads the case's rows only."""
    _, alice = await make_user("alice")
    await grow(gql, alice, 1, 1, 2)
    with count_statements() as first:
        before = await gql(NESTED, token=alice)
    with count_statements() as again:
        after = await gql(NESTED, token=alice)
    assert after == before
    # A compiled read (resolvers/compiled: one statement that builds the JSON) takes each case's
    # roles from its workflow's spec inside that statement; no statement of its own reads them.
    reads_definitions = [
        s
        for s in again.statements
        if re.search(r"FROM workflow\b(?!_)", s) and not re.search(r"json_(build_)?object\(", s)
    ]
    assert not reads_definitions, again.statements
    assert again.count <= first.count


COMMENT = """mutation($item: ID!, $comment: String) {
  executeAction(input: {workflowItemId: $item, action: "comment", comment: $comment}) {
    case { version } activity { comment } userErrors { code } } }"""


async def test_an_action_costs_three_statements_on_postgresql(db, gql, make_user, count_statements):
    """Bench W1's executeAction: the case locked (with its item and subproject), its facts read
    (states, role players, subscribers, enabled instances), then its rows written with the log
    entry, whose insert reads the chain's head (engine/history/folded_writes.py). SQLite has no
    data-modifying CTEs: there the case, the instance completed and the one enabled again are
    each a statement before the entry's insert."""
    _, alice = await make_user("alice")
    _, _, (item,) = await build_tree(gql, alice, items=1, workflow="bug")
    await gql(COMMENT, {"item": item, "comment": "warm"}, token=alice)  # the workflow's spec cached
    with count_statements() as acting:
        done = (await gql(COMMENT, {"item": item, "comment": "again"}, token=alice))["executeAction"]
    assert done["userErrors"] == [] and done["activity"]["comment"] == "again" and done["case"]["version"] == 2
    writes = [s for s in acting.statements if not s.lstrip().upper().startswith("SELECT")]
    if db.engine.dialect.name == "postgresql":
        assert acting.count == 3, acting.statements
        assert len(writes) == 1 and "UPDATE workflow_case" in writes[0] and "INSERT INTO activity" in writes[0]
    else:
        assert acting.count == 6, acting.statements
        assert len(writes) == 4 and acting.starting("INSERT INTO activity") == [5], acting.statements
