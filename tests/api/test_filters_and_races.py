"""Filters on lists, and item creation racing a reorder."""

import asyncio

import pytest

from tests.fixtures.builders import build_tree
from tests.fixtures.documents import CREATE_ITEM, CREATE_PROJECT, ITEMS, REORDER

# Every query here is also answered without compiled reads, the same (tests/fixtures/api.py).
pytestmark = pytest.mark.usefixtures("differential_reads")

FILTERED = """query($f: ProjectFilter) { projects(filter: $f) { totalCount edges { node { displayName } } } }"""


async def test_project_filters(gql, make_user):
    _, token = await make_user("alice")
    for name, tags in (("School roof", ["edu", "build"]), ("School library", ["edu"]), ("Bridge", ["build_2"])):
        await gql(CREATE_PROJECT, {"input": {"displayName": name, "tags": tags}}, token=token)

    async def names(f):
        edges = (await gql(FILTERED, {"f": f}, token=token))["projects"]["edges"]
        return sorted(e["node"]["displayName"] for e in edges)

    assert await names({"tag": "edu"}) == ["School library", "School roof"]
    assert await names({"tag": "build"}) == ["School roof"]  # "build_2" is another tag, not a prefix match
    assert await names({"search": "LIBR"}) == ["School library"]
    assert await names({"status": "CLOSED"}) == []
    assert await names({"status": "OPEN", "tag": "build_2"}) == ["Bridge"]


@pytest.mark.postgres
async def test_items_created_during_a_reorder_are_never_lost(gql, make_user):
    """Eight creations racing four reorders lose no item. A race only on PostgreSQL: SQLite's
    one writer serializes the twelve, so there it checks that each keeps the ordering whole."""
    _, token = await make_user("alice")
    _, sub, ids = await build_tree(gql, token, items=3)
    creations = [
        gql(CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": f"new {i}"}}, token=token)
        for i in range(8)
    ]
    reorders = [gql(REORDER, {"s": sub["id"], "ordering": list(reversed(ids))}, token=token) for _ in range(4)]
    await asyncio.gather(*creations, *reorders)
    items = (await gql(ITEMS, {"s": sub["id"], "first": 100}, token=token))["node"]["workflowItems"]
    names = [e["node"]["displayName"] for e in items["edges"]]
    assert items["totalCount"] == 11 and names[:3] == ["Item 2", "Item 1", "Item 0"]
    assert sorted(names[3:]) == [f"new {i}" for i in range(8)]
