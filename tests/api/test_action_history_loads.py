"""``Case.actionHistory`` over a list of cases costs the same statements however many cases the
list holds (issue 48: it was one query per case)."""

from tests.fixtures.builders import build_tree
from tests.fixtures.documents import CREATE_ITEM, EXECUTE

HISTORIES = """query($sub: ID!) { node(id: $sub) { ... on Subproject { workflowItems(first: 50) { edges { node {
  displayName
  case {
    page: actionHistory(first: 2) { edges { node { action { shortName } status } } pageInfo { hasNextPage } }
    done: actionHistory(status: COMPLETED) { edges { node { action { shortName } status } } } } } } } } } }"""


async def _bugs(gql, token, commented: list[int]) -> str:
    """A bug subproject whose n-th item has ``commented[n]`` comments; its id."""
    _, sub, _ = await build_tree(gql, token, items=0, workflow="bug")
    for n, comments in enumerate(commented):
        made = await gql(CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": f"Bug {n}"}}, token=token)
        item = made["createWorkflowItem"]["workflowItem"]["id"]
        for _ in range(comments):
            done = await gql(EXECUTE, {"input": {"workflowItemId": item, "action": "comment"}}, token=token)
            assert done["executeAction"]["userErrors"] == []
    return sub["id"]


def _completed(data) -> dict[str, list[str]]:
    return {
        e["node"]["displayName"]: [i["node"]["action"]["shortName"] for i in e["node"]["case"]["done"]["edges"]]
        for e in data["node"]["workflowItems"]["edges"]
    }


async def test_action_history_over_many_cases_costs_the_statements_of_few(gql, make_user, count_statements):
    _, alice = await make_user("alice")
    few = await _bugs(gql, alice, [1, 0])
    many = await _bugs(gql, alice, [3, 0, 1, 2, 0, 4, 1, 2])
    with count_statements() as small:
        small_data = await gql(HISTORIES, {"sub": few}, token=alice)
    with count_statements() as large:
        large_data = await gql(HISTORIES, {"sub": many}, token=alice)
    # Each case's own instances, whatever the others hold: its comments, and no one else's.
    assert _completed(small_data) == {"Bug 0": ["comment"], "Bug 1": []}
    assert _completed(large_data) == {f"Bug {n}": ["comment"] * k for n, k in enumerate([3, 0, 1, 2, 0, 4, 1, 2])}
    for edge in large_data["node"]["workflowItems"]["edges"]:
        page = edge["node"]["case"]["page"]
        # comment, edit and resolve are enabled from the start: every case has more than two
        assert len(page["edges"]) == 2 and page["pageInfo"]["hasNextPage"] is True
    assert large.count == small.count, large.statements
    histories = [s for s in large.statements if "enabled_action" in s and "row_number" in s.lower()]
    assert len(histories) == 2, large.statements  # one per page shape (first: 2; status: COMPLETED), not per case


async def test_a_page_of_action_history_goes_on_after_its_cursor_case_by_case(gql, make_user):
    _, alice = await make_user("alice")
    sub = await _bugs(gql, alice, [2, 3])
    query = """query($sub: ID!, $after: String) { node(id: $sub) { ... on Subproject { workflowItems { edges { node {
      displayName case { actionHistory(first: 2, after: $after, status: COMPLETED) {
        edges { cursor node { status } } pageInfo { hasNextPage } } } } } } } } }"""
    first = await gql(query, {"sub": sub}, token=alice)
    pages = {
        e["node"]["displayName"]: e["node"]["case"]["actionHistory"] for e in first["node"]["workflowItems"]["edges"]
    }
    assert [len(p["edges"]) for p in pages.values()] == [2, 2]
    assert [p["pageInfo"]["hasNextPage"] for p in pages.values()] == [False, True]
    # Bug 1's cursor continues Bug 1's history: its third comment, and nothing of Bug 0's
    after = pages["Bug 1"]["edges"][-1]["cursor"]
    rest = await gql(query, {"sub": sub, "after": after}, token=alice)
    later = {
        e["node"]["displayName"]: e["node"]["case"]["actionHistory"] for e in rest["node"]["workflowItems"]["edges"]
    }
    assert len(later["Bug 1"]["edges"]) == 1 and later["Bug 1"]["pageInfo"]["hasNextPage"] is False
    assert later["Bug 1"]["edges"][0]["cursor"] > after


def _histories(data):
    edges = data["node"]["workflowItems"]["edges"]
    return {e["node"]["displayName"]: e["node"]["case"]["actionHistory"] for e in edges}
