"""List pages at any size (bench R5): one resource's history is read by keyset and reads the
same pages as the batched read of several; no list counts unless `totalCount` (or
`unreadCount`) is selected."""

from datetime import UTC, datetime, timedelta

import pytest

from engine.history.activity import record
from models import Project
from tests.fixtures.documents import CREATE_PROJECT

# The statements pinned here are the resolvers' (resolvers/child_pages.py, resolvers/queries.py):
# this module's server resolves every field, and its twin compiles what it can; each query is
# answered by both, the same (tests/fixtures/api.py).
pytestmark = pytest.mark.usefixtures("differential_reads")


@pytest.fixture
def compiled_reads() -> bool:
    return False


ONE = """query($id: ID!, $first: Int, $after: String, $filter: HistoryFilter) { node(id: $id) { ... on Project {
  history(first: $first, after: $after, filter: $filter) {
    edges { cursor node { seq kind comment actor { login } } } pageInfo { hasNextPage endCursor } } } } }"""

# Both projects' history in one request: the loader reads them with one windowed statement.
BOTH = """query($first: Int, $after: String, $filter: HistoryFilter) { projects { edges { node { id
  history(first: $first, after: $after, filter: $filter) {
    edges { cursor node { seq kind comment actor { login } } } pageInfo { hasNextPage endCursor } } } } } }"""

START = datetime(2026, 3, 1, tzinfo=UTC)


async def _two_projects(db, gql, make_user):
    """Two projects of alice's, each with entries of two kinds by alice and by bob, a day apart."""
    alice_id, alice = await make_user("alice")
    bob_id, _ = await make_user("bob")
    ids = []
    for name in ("Harbour", "Library"):
        created = await gql(CREATE_PROJECT, {"input": {"displayName": name}}, token=alice)
        ids.append(created["createProject"]["project"]["id"])
    async with db.transaction() as s:
        for n in range(7):
            for index, project_id in enumerate(ids):
                project = await s.get(Project, project_id)
                await record(
                    s,
                    kind="commented" if n % 2 else "reviewed",
                    actor_id=bob_id if n % 3 == 0 else alice_id,
                    about=project,
                    comment=f"{project.display_name} {n}",
                    at=START + timedelta(days=n, hours=index),
                )
    return alice, bob_id, ids


def _walk(pages):
    """(comment, cursor) of every entry, and each page's hasNextPage, from the pages followed."""
    return [([(e["node"]["comment"], e["cursor"]) for e in p["edges"]], p["pageInfo"]["hasNextPage"]) for p in pages]


FILTERS = {
    "none": None,
    "kind": {"kind": "commented"},
    "actor": "bob",
    "from/to": {"from": (START + timedelta(days=2)).isoformat(), "to": (START + timedelta(days=5)).isoformat()},
}


@pytest.mark.parametrize("name", FILTERS)
async def test_one_projects_history_pages_as_the_batched_read_does(db, gql, make_user, name):
    alice, bob_id, ids = await _two_projects(db, gql, make_user)
    filt = {"actor": bob_id} if FILTERS[name] == "bob" else FILTERS[name]
    for project_id in ids:
        alone, batched, after = [], [], None
        while True:
            variables = {"id": project_id, "first": 2, "after": after, "filter": filt}
            page = (await gql(ONE, variables, token=alice))["node"]["history"]
            alone.append(page)
            after = page["pageInfo"]["endCursor"]
            if not page["pageInfo"]["hasNextPage"]:
                break
        after = None
        while True:
            data = await gql(BOTH, {"first": 2, "after": after, "filter": filt}, token=alice)
            page = next(e["node"]["history"] for e in data["projects"]["edges"] if e["node"]["id"] == project_id)
            batched.append(page)
            after = page["pageInfo"]["endCursor"]
            if not page["pageInfo"]["hasNextPage"]:
                break
        assert _walk(alone) == _walk(batched)
        entries = [e["node"] for p in alone for e in p["edges"] if e["node"]["comment"]]
        expected = {
            "none": list(range(7)),
            "kind": [1, 3, 5],
            "actor": [0, 3, 6],
            "from/to": [2, 3, 4] if project_id == ids[1] else [2, 3, 4, 5],
        }[name]
        name_of = "Harbour" if project_id == ids[0] else "Library"
        assert [e["comment"] for e in entries] == [f"{name_of} {n}" for n in expected]
        if name == "actor":
            assert {e["actor"]["login"] for e in entries} == {"bob"}


COUNTED = {
    "projects": ("{ projects { %s edges { node { id } } } }", ["projects"]),
    "users": ("{ users { %s edges { node { id } } } }", ["users"]),
    "jobs": ("{ jobs { %s edges { node { id } } } }", ["jobs"]),
    "history": (
        'query($id: ID!) { node(id: $id) { ... on Project { history(filter: {kind: "reviewed"}) '
        "{ %s edges { node { id } } } } } }",
        ["node", "history"],
    ),
    "notifications": ("{ notifications { %s edges { node { id } } } }", ["notifications"]),
    "unread notifications": ("{ notifications { %s edges { node { id } } } }", ["notifications"]),
}


@pytest.mark.parametrize("name", COUNTED)
async def test_a_page_counts_only_when_its_count_is_selected(db, gql, make_user, count_statements, name):
    alice, _, ids = await _two_projects(db, gql, make_user)
    document, path = COUNTED[name]
    field = "unreadCount" if name == "unread notifications" else "totalCount"
    variables = {"id": ids[0]} if name == "history" else {}
    await gql(document % "", variables, token=alice)  # the token, read once
    with count_statements() as plain:
        page = await gql(document % "", variables, token=alice)
    with count_statements() as counted:
        total = await gql(document % field, variables, token=alice)
    for key in path:
        page, total = page[key], total[key]
    assert total["edges"] == page["edges"]
    assert not [s for s in plain.statements if "count(" in s.lower()], plain.statements
    assert len([s for s in counted.statements if "count(" in s.lower()]) == 1, counted.statements
    assert counted.count == plain.count + 1
    expected = {"projects": 2, "users": 2, "history": 4}.get(name, 0)  # reviewed: entries 0, 2, 4, 6
    assert total[field] == expected
