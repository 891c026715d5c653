"""The issue-2 walk-through over HTTP: users, groups, the tree, permissions, ordering, closing, history."""

import pytest

from tests.fixtures.builders import build_tree
from tests.fixtures.documents import (
    ADD_MEMBER,
    CLOSE_PROJECT,
    CLOSE_SUBPROJECT,
    CREATE_GROUP,
    CREATE_ITEM,
    CREATE_PROJECT,
    CREATE_SUBPROJECT,
    CREATE_USER,
    GRANT,
    HISTORY,
    ITEMS,
    LOGIN,
    REORDER,
    REVOKE,
    TREE,
    UPDATE_PROJECT,
)

# Every query here is also answered without compiled reads, the same (tests/fixtures/api.py).
pytestmark = pytest.mark.usefixtures("differential_reads")


async def test_walk_through(gql, make_user):
    _, admin = await make_user("root", admin=True)
    created = await gql(CREATE_USER, {"input": {"login": "alice", "password": "alice-secret"}}, token=admin)
    assert created["createUser"]["userErrors"] == []
    await gql(CREATE_USER, {"input": {"login": "bob", "password": "bob-secret1"}}, token=admin)
    carol = await gql(CREATE_USER, {"input": {"login": "carol", "password": "carol-secret"}}, token=admin)
    login = (await gql(LOGIN, {"login": "alice", "password": "alice-secret"}))["login"]
    assert login["userErrors"] == [] and login["user"] == {"login": "alice"}
    alice = login["token"]
    bob = (await gql(LOGIN, {"login": "bob", "password": "bob-secret1"}))["login"]["token"]
    carol_token = (await gql(LOGIN, {"login": "carol", "password": "carol-secret"}))["login"]["token"]
    group = (await gql(CREATE_GROUP, {"name": "auditors"}, token=admin))["createGroup"]["group"]
    members = await gql(ADD_MEMBER, {"g": group["id"], "u": carol["createUser"]["user"]["id"]}, token=admin)
    assert members["addGroupMember"]["group"]["members"] == [{"login": "carol"}]

    project, sub, items = await build_tree(gql, alice)
    assert project["status"] == "OPEN" and "project.close" in project["allowedIntents"]
    assert project["projectedBudgets"] == [{"organization": "City", "currency": "EUR", "value": "1000.50"}]

    # Nobody but alice sees anything yet.
    for token in (bob, carol_token):
        assert (await gql(TREE, token=token))["projects"] == {"totalCount": 0, "edges": []}
    # Grant the group project.view on the project, subproject and items.
    for resource, intent in [
        (project["id"], "project.view"),
        (sub["id"], "subproject.view"),
        *[(i, "workflowItem.view") for i in items],
    ]:
        granted = await gql(GRANT, {"r": resource, "i": intent, "p": group["id"]}, token=alice)
        assert granted["grantPermission"]["userErrors"] == []
    tree = (await gql(TREE, token=carol_token))["projects"]
    assert tree["totalCount"] == 1
    sub_node = tree["edges"][0]["node"]["subprojects"]["edges"][0]["node"]
    assert [e["node"]["displayName"] for e in sub_node["workflowItems"]["edges"]] == ["Item 0", "Item 1", "Item 2"]
    assert sub_node["workflowItems"]["edges"][0]["node"]["assignee"] == {"login": "alice"}
    assert (await gql(TREE, token=bob))["projects"]["totalCount"] == 0  # bob is not in the group
    assert (await gql("query($id: ID!) { node(id: $id) { id } }", {"id": project["id"]}, token=bob))["node"] is None


async def test_ordering_seed_000(gql, make_user):
    _, alice = await make_user("alice")
    _, sub, (a, b, c) = await build_tree(gql, alice)

    async def names():
        edges = (await gql(ITEMS, {"s": sub["id"]}, token=alice))["node"]["workflowItems"]["edges"]
        return [e["node"]["displayName"] for e in edges]

    assert await names() == ["Item 0", "Item 1", "Item 2"]  # empty ordering: creation time
    assert (await gql(REORDER, {"s": sub["id"], "ordering": [c]}, token=alice))["reorderWorkflowItems"][
        "userErrors"
    ] == []
    assert await names() == ["Item 2", "Item 0", "Item 1"]  # partial ordering, then the rest
    await gql(REORDER, {"s": sub["id"], "ordering": [b, a, c]}, token=alice)
    await gql(CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": "Item 3"}}, token=alice)
    assert await names() == ["Item 1", "Item 0", "Item 2", "Item 3"]  # new items follow a reorder
    bad = (await gql(REORDER, {"s": sub["id"], "ordering": [a, "wfi_NOPE"]}, token=alice))["reorderWorkflowItems"]
    assert bad["userErrors"][0]["code"] == "UNKNOWN_ITEM" and bad["userErrors"][0]["field"] == ["ordering", "1"]
    assert await names() == ["Item 1", "Item 0", "Item 2", "Item 3"]  # unchanged
    # Pagination follows the ordering.
    page = (await gql(ITEMS, {"s": sub["id"], "first": 2}, token=alice))["node"]["workflowItems"]
    assert page["pageInfo"]["hasNextPage"] and page["totalCount"] == 4
    rest = (await gql(ITEMS, {"s": sub["id"], "first": 2, "after": page["pageInfo"]["endCursor"]}, token=alice))[
        "node"
    ]["workflowItems"]
    assert [e["node"]["displayName"] for e in rest["edges"]] == ["Item 2", "Item 3"]
    assert not rest["pageInfo"]["hasNextPage"]


async def test_close_rules(gql, make_user):
    _, alice = await make_user("alice")
    project, sub, items = await build_tree(gql, alice, items=1)
    refused = (await gql(CLOSE_PROJECT, {"id": project["id"]}, token=alice))["closeProject"]
    assert refused["userErrors"][0]["code"] == "OPEN_CHILDREN"
    refused = (await gql(CLOSE_SUBPROJECT, {"id": sub["id"]}, token=alice))["closeSubproject"]
    assert refused["userErrors"][0]["code"] == "OPEN_CHILDREN"
    closed = await gql(
        """mutation($i: ID!) { executeAction(input: {workflowItemId: $i, action: "close"}) {
        case { status } userErrors { code } } }""",
        {"i": items[0]},
        token=alice,
    )
    assert closed["executeAction"]["case"]["status"] == "COMPLETED"
    assert (await gql(CLOSE_SUBPROJECT, {"id": sub["id"]}, token=alice))["closeSubproject"]["subproject"][
        "status"
    ] == "CLOSED"
    assert (await gql(CLOSE_PROJECT, {"id": project["id"]}, token=alice))["closeProject"]["project"][
        "status"
    ] == "CLOSED"
    update = await gql(UPDATE_PROJECT, {"input": {"id": project["id"], "displayName": "New"}}, token=alice)
    assert update["updateProject"]["userErrors"][0]["code"] == "RESOURCE_CLOSED"


async def test_history_paging_and_no_op_updates(gql, make_user):
    _, alice = await make_user("alice")
    project, _, _ = await build_tree(gql, alice, items=2)
    for name in ("A", "B", "B", "C"):  # the second "B" changes nothing and logs nothing
        await gql(UPDATE_PROJECT, {"input": {"id": project["id"], "displayName": name}}, token=alice)
    updates = await gql(HISTORY, {"id": project["id"], "filter": {"kind": "project_updated"}}, token=alice)
    assert [e["node"]["data"] for e in updates["node"]["history"]["edges"]] == [
        {"displayName": "A"},
        {"displayName": "B"},
        {"displayName": "C"},
    ]
    seen, after = [], None
    while True:
        page = (await gql(HISTORY, {"id": project["id"], "first": 3, "after": after}, token=alice))["node"]["history"]
        seen += [e["node"]["seq"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == sorted(seen) and len(seen) == page["totalCount"] and len(seen) > 6
    kinds = [
        e["node"]["kind"]
        for e in (await gql(HISTORY, {"id": project["id"], "first": 100}, token=alice))["node"]["history"]["edges"]
    ]
    assert kinds[:3] == ["project_created", "subproject_created", "workflow_item_created"]


async def test_revoking_the_last_granter_fails(gql, make_user):
    alice_id, alice = await make_user("alice")
    project, _, _ = await build_tree(gql, alice, items=0)
    result = await gql(REVOKE, {"r": project["id"], "i": "project.intent.grantPermission", "p": alice_id}, token=alice)
    assert result["revokePermission"]["userErrors"][0]["code"] == "LAST_GRANT_HOLDER"


async def test_bad_input_is_a_user_error_and_changes_nothing(gql, make_user):
    _, alice = await make_user("alice")
    _, sub, _ = await build_tree(gql, alice, items=0)
    cases = [
        (CREATE_PROJECT, {"input": {"displayName": "  "}}, "createProject", "INVALID_INPUT"),
        (
            CREATE_PROJECT,
            {
                "input": {
                    "displayName": "X",
                    "projectedBudgets": [
                        {"organization": "O", "currency": "EUR", "value": "1"},
                        {"organization": "O", "currency": "EUR", "value": "2"},
                    ],
                }
            },
            "createProject",
            "INVALID_INPUT",
        ),
        (
            CREATE_PROJECT,
            {
                "input": {
                    "displayName": "X",
                    "projectedBudgets": [{"organization": "O", "currency": "XYZ", "value": "1"}],
                }
            },
            "createProject",
            "INVALID_INPUT",
        ),
        (
            CREATE_SUBPROJECT,
            {"input": {"projectId": "prj_UNKNOWN", "displayName": "S", "currency": "EUR"}},
            "createSubproject",
            "NOT_FOUND",
        ),
        (
            CREATE_ITEM,
            {"input": {"subprojectId": sub["id"], "displayName": "I", "amountType": "ALLOCATED", "amount": "12,5"}},
            "createWorkflowItem",
            "INVALID_INPUT",
        ),
        (
            CREATE_ITEM,
            {"input": {"subprojectId": sub["id"], "displayName": "I", "amount": "10"}},
            "createWorkflowItem",
            "INVALID_INPUT",
        ),  # N/A forbids an amount
        (
            CREATE_ITEM,
            {
                "input": {
                    "subprojectId": sub["id"],
                    "displayName": "I",
                    "amountType": "DISBURSED",
                    "amount": "10",
                    "currency": "euro",
                }
            },
            "createWorkflowItem",
            "INVALID_INPUT",
        ),
    ]
    for document, variables, field, code in cases:
        result = (await gql(document, variables, token=alice))[field]
        assert result["userErrors"] and result["userErrors"][0]["code"] == code, (variables, result)
    items = (await gql(ITEMS, {"s": sub["id"]}, token=alice))["node"]["workflowItems"]
    assert items["totalCount"] == 0
    assert (await gql("{ projects { totalCount } }", token=alice))["projects"]["totalCount"] == 1
    ok = (
        await gql(
            CREATE_ITEM,
            {"input": {"subprojectId": sub["id"], "displayName": "I", "amountType": "ALLOCATED", "amount": "10.25"}},
            token=alice,
        )
    )["createWorkflowItem"]["workflowItem"]
    assert (ok["amount"], ok["currency"], ok["exchangeRate"]) == ("10.25", "EUR", "1.0")
    # Oversized `first` and wrong types are GraphQL errors, not 500s.
    body = await gql.raw("{ projects(first: 1000) { totalCount } }", token=alice)
    assert body["errors"][0]["extensions"]["code"] == "INVALID_INPUT"
    body = await gql.raw('{ projects(first: "x") { totalCount } }', token=alice)
    assert body["errors"]


async def test_unauthenticated(gql):
    body = await gql.raw("{ viewer { login } }")
    assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    body = await gql.raw("{ viewer { login } }", token="cw_not_a_token")
    assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    bad_login = (await gql(LOGIN, {"login": "nobody", "password": "whatever1"}))["login"]
    assert bad_login["token"] is None and bad_login["userErrors"][0]["code"] == "INVALID_CREDENTIALS"


async def test_queries_deeper_than_the_limit_are_refused(gql, make_user):
    _, alice = await make_user("alice")
    inner = "id"
    for _ in range(9):  # each round adds subprojects > edges > node > project: far past depth 15
        inner = f"subprojects {{ edges {{ node {{ project {{ {inner} }} }} }} }}"
    body = await gql.raw(f"{{ projects {{ edges {{ node {{ {inner} }} }} }} }}", token=alice)
    assert body["errors"][0]["extensions"]["code"] == "QUERY_TOO_DEEP", body
