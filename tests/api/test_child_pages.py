"""Paging a parent's children by cursor: a subproject's items in display order (the ordering,
then creation), a project's subprojects in creation order."""

import pytest

from tests.fixtures.builders import build_tree
from tests.fixtures.documents import CLOSE_SUBPROJECT, CREATE_ITEM, CREATE_SUBPROJECT, GRANT, REORDER

# The statements pinned here are the resolvers' (resolvers/child_pages.py, resolvers/queries.py):
# this module's server resolves every field, and its twin compiles what it can; each query is
# answered by both, the same (tests/fixtures/api.py).
pytestmark = pytest.mark.usefixtures("differential_reads")


@pytest.fixture
def compiled_reads() -> bool:
    return False


ITEM_PAGE = """query($s: ID!, $first: Int, $after: String, $filter: ProjectFilter) { node(id: $s) { ... on Subproject {
  workflowItems(first: $first, after: $after, filter: $filter) { totalCount edges { cursor node { id displayName } }
    pageInfo { hasNextPage endCursor } } } } }"""

RENAME = """mutation($id: ID!, $name: String!) {
  updateWorkflowItem(input: {id: $id, displayName: $name}) { userErrors { code } } }"""

TWO_SUBPROJECTS = """query($a: ID!, $b: ID!) {
  a: node(id: $a) { ... on Subproject { workflowItems(first: 2) { totalCount edges { node { displayName } } } } }
  b: node(id: $b) { ... on Subproject { workflowItems(first: 2) { totalCount edges { node { displayName } } } } } }"""


async def add_subproject(gql, token, project_id, name):
    variables = {"input": {"projectId": project_id, "displayName": name, "currency": "EUR"}}
    return (await gql(CREATE_SUBPROJECT, variables, token=token))["createSubproject"]["subproject"]["id"]


def names(connection):
    return [edge["node"]["displayName"] for edge in connection["edges"]]


async def walk(gql, token, sub_id, *, first, filter=None):
    """Every page from the start; returns the pages' names and (hasNextPage, totalCount) each."""
    seen, pages, after = [], [], None
    while True:
        variables = {"s": sub_id, "first": first, "after": after, "filter": filter}
        page = (await gql(ITEM_PAGE, variables, token=token))["node"]["workflowItems"]
        seen.append(names(page))
        pages.append((page["pageInfo"]["hasNextPage"], page["totalCount"]))
        if not page["pageInfo"]["hasNextPage"]:
            return seen, pages
        after = page["pageInfo"]["endCursor"]


async def test_pages_follow_the_ordering_then_creation(gql, make_user):
    _, alice = await make_user("alice")
    _, sub, ids = await build_tree(gql, alice, items=7)
    await gql(REORDER, {"s": sub["id"], "ordering": [ids[5], ids[2], ids[6]]}, token=alice)
    seen, pages = await walk(gql, alice, sub["id"], first=2)
    assert seen == [["Item 5", "Item 2"], ["Item 6", "Item 0"], ["Item 1", "Item 3"], ["Item 4"]]
    assert pages == [(True, 7), (True, 7), (True, 7), (False, 7)]
    seen, _ = await walk(gql, alice, sub["id"], first=3)
    assert seen == [["Item 5", "Item 2", "Item 6"], ["Item 0", "Item 1", "Item 3"], ["Item 4"]]
    empty = (await gql(ITEM_PAGE, {"s": sub["id"], "first": 0}, token=alice))["node"]["workflowItems"]
    assert empty["edges"] == [] and empty["pageInfo"]["hasNextPage"] and empty["totalCount"] == 7
    last = (await gql(ITEM_PAGE, {"s": sub["id"], "first": 5, "after": ids[4]}, token=alice))["node"]["workflowItems"]
    assert last["edges"] == [] and not last["pageInfo"]["hasNextPage"] and last["totalCount"] == 7


async def test_pages_of_a_filter_count_what_matches(gql, make_user):
    _, alice = await make_user("alice")
    _, sub, ids = await build_tree(gql, alice, items=6)
    for n in (1, 3, 4):
        await gql(RENAME, {"id": ids[n], "name": f"Roof {n}"}, token=alice)
    await gql(REORDER, {"s": sub["id"], "ordering": [ids[4], ids[0]]}, token=alice)
    seen, pages = await walk(gql, alice, sub["id"], first=2, filter={"search": "roof"})
    assert seen == [["Roof 4", "Roof 1"], ["Roof 3"]]
    assert pages == [(True, 3), (False, 3)]


async def test_a_cursor_whose_item_left_the_page_continues_where_it_was(gql, make_user):
    """The cursor's item no longer matches the filter: the next page starts after its place,
    for a listed cursor (its place in the ordering) and an unlisted one (its creation)."""
    _, alice = await make_user("alice")
    _, sub, ids = await build_tree(gql, alice, items=6)
    await gql(REORDER, {"s": sub["id"], "ordering": [ids[3], ids[1]]}, token=alice)
    match = {"search": "item"}
    first = (await gql(ITEM_PAGE, {"s": sub["id"], "first": 2, "filter": match}, token=alice))["node"]["workflowItems"]
    assert names(first) == ["Item 3", "Item 1"]
    await gql(RENAME, {"id": ids[1], "name": "Gone 1"}, token=alice)
    after_listed = {"s": sub["id"], "first": 2, "after": first["pageInfo"]["endCursor"], "filter": match}
    page = (await gql(ITEM_PAGE, after_listed, token=alice))["node"]["workflowItems"]
    assert names(page) == ["Item 0", "Item 2"] and page["totalCount"] == 5
    await gql(RENAME, {"id": ids[2], "name": "Gone 2"}, token=alice)
    after_unlisted = {"s": sub["id"], "first": 2, "after": ids[2], "filter": match}
    page = (await gql(ITEM_PAGE, after_unlisted, token=alice))["node"]["workflowItems"]
    assert names(page) == ["Item 4", "Item 5"] and not page["pageInfo"]["hasNextPage"]


async def test_subprojects_read_together_keep_their_own_ordering(gql, make_user, count_statements):
    _, alice = await make_user("alice")
    project, a, a_ids = await build_tree(gql, alice, items=3)
    b_id = await add_subproject(gql, alice, project["id"], "Walls")
    b_ids = []
    for n in range(3):
        created = await gql(CREATE_ITEM, {"input": {"subprojectId": b_id, "displayName": f"Wall {n}"}}, token=alice)
        b_ids.append(created["createWorkflowItem"]["workflowItem"]["id"])
    await gql(REORDER, {"s": a["id"], "ordering": [a_ids[2]]}, token=alice)
    await gql(REORDER, {"s": b_id, "ordering": [b_ids[1], b_ids[0]]}, token=alice)
    with count_statements() as together:
        both = await gql(TWO_SUBPROJECTS, {"a": a["id"], "b": b_id}, token=alice)
    assert names(both["a"]["workflowItems"]) == ["Item 2", "Item 0"]
    assert names(both["b"]["workflowItems"]) == ["Wall 1", "Wall 0"]
    assert both["a"]["workflowItems"]["totalCount"] == both["b"]["workflowItems"]["totalCount"] == 3
    with count_statements() as alone:
        await gql(ITEM_PAGE, {"s": a["id"], "first": 2}, token=alice)
    assert together.count == alone.count, together.statements  # one query pages both


SUBPROJECTS = """query($p: ID!, $first: Int, $after: String, $filter: ProjectFilter) { node(id: $p) { ... on Project {
  subprojects(first: $first, after: $after, filter: $filter) { totalCount edges { cursor node { displayName } }
    pageInfo { hasNextPage endCursor } } } } }"""


async def test_subprojects_page_in_creation_order(gql, make_user):
    _, alice = await make_user("alice")
    project, first_sub, _ = await build_tree(gql, alice, items=0)
    subs = [first_sub["id"]]
    for n in range(1, 5):
        subs.append(await add_subproject(gql, alice, project["id"], f"Part {n}"))
    await gql(CLOSE_SUBPROJECT, {"id": subs[2]}, token=alice)

    async def page(first, after=None, filter=None):
        variables = {"p": project["id"], "first": first, "after": after, "filter": filter}
        return (await gql(SUBPROJECTS, variables, token=alice))["node"]["subprojects"]

    one = await page(2)
    assert names(one) == ["Roof", "Part 1"] and one["totalCount"] == 5 and one["pageInfo"]["hasNextPage"]
    two = await page(2, one["pageInfo"]["endCursor"])
    assert names(two) == ["Part 2", "Part 3"] and two["pageInfo"]["hasNextPage"]
    three = await page(2, two["pageInfo"]["endCursor"])
    assert names(three) == ["Part 4"] and not three["pageInfo"]["hasNextPage"] and three["totalCount"] == 5
    open_only = await page(10, subs[1], {"status": "OPEN"})  # after Part 1; Part 2 is closed
    assert names(open_only) == ["Part 3", "Part 4"] and open_only["totalCount"] == 4
    past_closed = await page(10, subs[2], {"status": "OPEN"})  # a cursor the filter leaves out
    assert names(past_closed) == ["Part 3", "Part 4"]


ITEM_PAGE_UNCOUNTED = """query($s: ID!, $first: Int, $after: String, $filter: ProjectFilter) {
  node(id: $s) { ... on Subproject {
  workflowItems(first: $first, after: $after, filter: $filter) { edges { cursor node { id displayName } }
    pageInfo { hasNextPage endCursor } } } } }"""

UNCOUNTED_SUBPROJECTS = """query($p: ID!, $after: String) { node(id: $p) { ... on Project {
  subprojects(first: 2, after: $after) { edges { node { displayName } } pageInfo { hasNextPage } } } } }"""


async def test_a_page_without_its_total_reads_only_the_page(gql, make_user, count_statements):
    """Without `totalCount` a page of an unordered subproject is read up to its end and no
    further (LIMIT first + 1, no count), and pages exactly as the counted one: the same items,
    cursors and hasNextPage, for the viewer's items only, with filters and with a cursor whose
    item has left the filter."""
    bob_id, bob = await make_user("bob")
    _, alice = await make_user("alice")
    project, sub, ids = await build_tree(gql, alice, items=7)
    grants = [(sub["id"], "subproject.view")] + [(ids[n], "workflowItem.view") for n in (0, 2, 3, 5, 6)]
    for resource, intent in grants:  # bob may see the subproject and five of its seven items
        granted = await gql(GRANT, {"r": resource, "i": intent, "p": bob_id}, token=alice)
        assert granted["grantPermission"]["userErrors"] == []
    await gql(RENAME, {"id": ids[3], "name": "Roof 3"}, token=alice)

    async def walk_uncounted(token, first, filter=None, after=None):
        seen = []
        while True:
            variables = {"s": sub["id"], "first": first, "after": after, "filter": filter}
            with count_statements() as reading:
                page = (await gql(ITEM_PAGE_UNCOUNTED, variables, token=token))["node"]["workflowItems"]
            paging = [s for s in reading.statements if "workflow_item.display_name" in s and "LIMIT" in s.upper()]
            assert paging and not [s for s in reading.statements if "count(" in s.lower()], reading.statements
            seen.append((names(page), page["pageInfo"]["hasNextPage"]))
            if not page["pageInfo"]["hasNextPage"]:
                return seen
            after = page["pageInfo"]["endCursor"]

    for token, filter in ((alice, None), (bob, None), (bob, {"search": "item"}), (alice, {"status": "OPEN"})):
        counted, _ = await walk(gql, token, sub["id"], first=2, filter=filter)
        uncounted = await walk_uncounted(token, 2, filter)
        assert [page for page, _ in uncounted] == counted
        assert [more for _, more in uncounted] == [True] * (len(counted) - 1) + [False]
    assert [page for page, _ in await walk_uncounted(bob, 2)] == [
        ["Item 0", "Item 2"],
        ["Roof 3", "Item 5"],
        ["Item 6"],
    ]
    # the cursor's item has left the filter: the next page starts after it all the same
    assert await walk_uncounted(bob, 2, {"search": "item"}, after=ids[3]) == [(["Item 5", "Item 6"], False)]

    parts = [await add_subproject(gql, alice, project["id"], f"Part {n}") for n in range(3)]
    one = (await gql(UNCOUNTED_SUBPROJECTS, {"p": project["id"]}, token=alice))["node"]["subprojects"]
    assert names(one) == ["Roof", "Part 0"] and one["pageInfo"]["hasNextPage"]
    two = (await gql(UNCOUNTED_SUBPROJECTS, {"p": project["id"], "after": parts[0]}, token=alice))["node"]
    assert names(two["subprojects"]) == ["Part 1", "Part 2"] and not two["subprojects"]["pageInfo"]["hasNextPage"]


async def test_the_same_connection_twice_counts_only_where_asked(gql, make_user):
    """Two aliases of one subproject's items, one with totalCount and one without, each get
    their own page; fragments that ask for the count are seen too."""
    _, alice = await make_user("alice")
    _, sub, _ = await build_tree(gql, alice, items=3)
    both = await gql(
        """query($s: ID!) { node(id: $s) { ... on Subproject {
          counted: workflowItems(first: 2) { ...Total edges { node { displayName } } }
          scrolled: workflowItems(first: 2) { edges { node { displayName } } pageInfo { hasNextPage } } } } }
        fragment Total on WorkflowItemConnection { totalCount }""",
        {"s": sub["id"]},
        token=alice,
    )
    assert both["node"]["counted"]["totalCount"] == 3
    assert names(both["node"]["counted"]) == names(both["node"]["scrolled"]) == ["Item 0", "Item 1"]
    assert both["node"]["scrolled"]["pageInfo"]["hasNextPage"]


async def test_a_counted_page_of_one_parent_is_read_by_keyset_and_counted_apart(gql, make_user, count_statements):
    """One unordered subproject's counted page: its page up to LIMIT first + 1 and its total as
    an aggregate, not a rank of every visible item; the total counts only what the viewer may
    see and what the filter keeps, and comes along past the last page and for an empty
    subproject. Read together with a second subproject (ranked, one query for both), each
    gets the same pages and totals."""
    bob_id, bob = await make_user("bob")
    _, alice = await make_user("alice")
    project, sub, ids = await build_tree(gql, alice, items=6)
    for resource, intent in [(sub["id"], "subproject.view")] + [(ids[n], "workflowItem.view") for n in (1, 2, 4, 5)]:
        granted = await gql(GRANT, {"r": resource, "i": intent, "p": bob_id}, token=alice)
        assert granted["grantPermission"]["userErrors"] == []
    await gql(RENAME, {"id": ids[4], "name": "Roof 4"}, token=alice)

    async def page(token, first, after=None, filter=None, of=None):
        variables = {"s": of or sub["id"], "first": first, "after": after, "filter": filter}
        with count_statements() as reading:
            found = (await gql(ITEM_PAGE, variables, token=token))["node"]["workflowItems"]
        paging = [s for s in reading.statements if "workflow_item.display_name" in s]
        assert len(paging) == 1 and "LIMIT" in paging[0].upper() and "OVER" not in paging[0].upper(), paging
        assert "count(" in paging[0].lower()
        return names(found), found["pageInfo"]["hasNextPage"], found["totalCount"]

    assert await page(bob, 2) == (["Item 1", "Item 2"], True, 4)
    assert await page(bob, 2, ids[2]) == (["Roof 4", "Item 5"], False, 4)
    assert await page(bob, 2, ids[5]) == ([], False, 4)  # past the last page
    assert await page(bob, 0) == ([], True, 4)
    assert await page(bob, 5, filter={"search": "item"}) == (["Item 1", "Item 2", "Item 5"], False, 3)
    assert await page(alice, 4, ids[1]) == (["Item 2", "Item 3", "Roof 4", "Item 5"], False, 6)
    empty = await add_subproject(gql, alice, project["id"], "Empty")
    assert await page(alice, 2, of=empty) == ([], False, 0)

    walls = await add_subproject(gql, alice, project["id"], "Walls")
    await gql(CREATE_ITEM, {"input": {"subprojectId": walls, "displayName": "Wall 0"}}, token=alice)
    for token in (alice, bob):
        both = await gql(TWO_SUBPROJECTS, {"a": sub["id"], "b": walls}, token=token)
        for alias, subproject in (("a", sub["id"]), ("b", walls)):
            alone = (await gql(ITEM_PAGE, {"s": subproject, "first": 2}, token=token))["node"]
            together = both[alias]
            assert (together is None) == (alone is None)
            if together is not None:
                together, alone = together["workflowItems"], alone["workflowItems"]
                assert names(together) == names(alone) and together["totalCount"] == alone["totalCount"]
