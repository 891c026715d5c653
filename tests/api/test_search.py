"""Search (issue 38, point 4) over HTTP, on both databases: the projects, subprojects and items a
viewer may see, ranked by the full-text index, kept in step with the rows; pages by cursor in
a constant number of statements; bounded input; and the pickers' users(search:) and
groups(search:)."""

import string

import pytest
from sqlalchemy import text

from resolvers import search as searching
from resolvers.search import TSVECTOR
from tests.fixtures.builders import sql
from tests.fixtures.documents import (
    CREATE_GROUP,
    CREATE_ITEM,
    CREATE_PROJECT,
    CREATE_SUBPROJECT,
    GRANT,
    UPDATE_PROJECT,
)

SEARCH = """query($q: String!, $first: Int, $after: String) { search(query: $q, first: $first, after: $after) {
  totalCount pageInfo { hasNextPage endCursor }
  edges { cursor node { __typename id
    ... on Project { displayName } ... on Subproject { displayName } ... on WorkflowItem { displayName } } } } }"""
SEARCH_NAMES = """query($q: String!) { search(query: $q, first: 100) { edges { node {
  ... on Project { displayName } ... on Subproject { displayName } ... on WorkflowItem { displayName } } } } }"""
RENAME_SEARCHED_ITEM = """mutation($id: ID!, $name: String!) {
  updateWorkflowItem(input: {id: $id, displayName: $name}) {
  userErrors { code message } } }"""
PICK_USERS = """query($s: String, $first: Int, $after: String) { users(search: $s, first: $first, after: $after) {
  totalCount pageInfo { hasNextPage endCursor } edges { node { login } } } }"""
PICK_GROUPS = """query($s: String) { groups(search: $s) { totalCount edges { node { name displayName } } } }"""


async def names(gql, token, query):
    found = await gql(SEARCH_NAMES, {"q": query}, token=token)
    return [e["node"]["displayName"] for e in found["search"]["edges"]]


async def made(gql, document, value, token):
    (payload,) = (await gql(document, {"input": value}, token=token)).values()
    assert payload["userErrors"] == [], payload
    return next(v for k, v in payload.items() if k != "userErrors")


async def tree(gql, token, project_name, sub_name="Works", description=""):
    project = await made(gql, CREATE_PROJECT, {"displayName": project_name, "description": description}, token)
    sub = await made(
        gql,
        CREATE_SUBPROJECT,
        {"projectId": project["id"], "displayName": sub_name, "currency": "EUR", "workflow": "bug"},
        token,
    )
    return project["id"], sub["id"]


async def item(gql, token, sub_id, name, description="", assignee=None):
    value = {"subprojectId": sub_id, "displayName": name, "description": description}
    if assignee:
        value["assigneeId"] = assignee
    return (await made(gql, CREATE_ITEM, value, token))["id"]


async def test_each_viewer_finds_what_they_may_see_and_nothing_else(gql, make_user):
    _, root = await make_user("root", admin=True)
    _, owner = await make_user("owner")
    viewer_id, viewer = await make_user("viewer")
    player_id, player = await make_user("player")
    _, stranger = await make_user("stranger")
    school, school_works = await tree(gql, owner, "School roof", "Gym", description="the gym leaks")
    await item(gql, owner, school_works, "Roof tiles", "replace the broken ones")
    await item(gql, owner, school_works, "Gutter", "the roof drains here", assignee=player_id)
    await item(gql, owner, school_works, "Window", "cracked pane")
    _, garden_works = await tree(gql, stranger, "Roof garden", "Beds and roof works")
    granted = await gql(GRANT, {"r": school, "i": "project.view", "p": viewer_id}, token=owner)
    assert granted["grantPermission"]["userErrors"] == []
    await item(gql, stranger, garden_works, "Roof beds")

    everything = ["School roof", "Roof tiles", "Gutter", "Roof garden", "Beds and roof works", "Roof beds"]
    assert sorted(await names(gql, root, "roof")) == sorted(everything)
    assert sorted(await names(gql, owner, "roof")) == ["Gutter", "Roof tiles", "School roof"]
    # The grant came after the subproject and items: it shows the project only.
    assert await names(gql, viewer, "roof") == ["School roof"]
    assert await names(gql, player, "roof") == ["Gutter"]  # a role in its case
    assert sorted(await names(gql, stranger, "roof")) == ["Beds and roof works", "Roof beds", "Roof garden"]
    assert sorted(await names(gql, owner, "gym")) == ["Gym", "School roof"]


async def test_words_match_as_prefixes_all_of_them_case_aside_best_first(gql, make_user):
    _, owner = await make_user("owner")
    _, sub = await tree(gql, owner, "Depot", "Stores")
    await item(gql, owner, sub, "Invoice 2031-07", "INVOICE for the ROOF, invoice attached")
    await item(gql, owner, sub, "Inventory", "count the ladders")
    await item(gql, owner, sub, "Payment", "the invoice of the contractor for the old school building's new windows")
    await item(gql, owner, sub, "Grüße", "Straße")
    assert sorted(await names(gql, owner, "inv")) == ["Inventory", "Invoice 2031-07", "Payment"]
    assert (await names(gql, owner, "invoice"))[0] == "Invoice 2031-07"  # three times, and short
    assert await names(gql, owner, "Invoice roof") == ["Invoice 2031-07"]
    assert await names(gql, owner, "roof, invoice!") == ["Invoice 2031-07"]
    assert await names(gql, owner, "ladders count") == ["Inventory"]
    assert await names(gql, owner, "2031") == ["Invoice 2031-07"]
    assert await names(gql, owner, "straße") == ["Grüße"]
    assert await names(gql, owner, "invoice ladders") == []
    # A word of one or two letters matches whole: the index would read every word it begins.
    await item(gql, owner, sub, "Valve 7")
    await item(gql, owner, sub, "Valve 70")
    assert await names(gql, owner, "valve 7") == ["Valve 7"]
    assert await names(gql, owner, "70 valve") == ["Valve 70"]
    assert sorted(await names(gql, owner, "val")) == ["Valve 7", "Valve 70"]
    # An address, a path and a URL are words on both databases (PostgreSQL's parser alone would
    # keep each whole, and only its first word would be found).
    await item(gql, owner, sub, "Mail ada@example.org", "see /srv/plans or http://drawings.example.org/roof")
    assert await names(gql, owner, "example") == ["Mail ada@example.org"]
    assert await names(gql, owner, "plans drawings") == ["Mail ada@example.org"]
    assert await names(gql, owner, "org srv") == ["Mail ada@example.org"]


async def test_both_databases_split_words_at_the_same_characters(gql, make_user):
    """SQLite's FTS5 splits at every character that is not a letter or a digit; PostgreSQL's
    parser alone would keep "-07", "+49" and "pipe-fitting" whole and drop a tag's or an
    entity's words, so "07" found "Invoice 2031-07" on SQLite only (migration 0019)."""
    _, owner = await make_user("owner")
    _, sub = await tree(gql, owner, "Depot", "Stores")
    await item(gql, owner, sub, "Invoice 2031-07", "call +49 30-555")
    await item(gql, owner, sub, "A+B plan", "pipe-fitting")
    await item(gql, owner, sub, "x_y", "o'brien's #4")
    await item(gql, owner, sub, "Budget <draft note>", "Q&amp;A")
    assert await names(gql, owner, "07") == ["Invoice 2031-07"]
    assert await names(gql, owner, "2031-07") == ["Invoice 2031-07"]
    assert await names(gql, owner, "49 555 30") == ["Invoice 2031-07"]
    assert await names(gql, owner, "b") == ["A+B plan"]
    assert await names(gql, owner, "a+b fitting") == ["A+B plan"]
    assert await names(gql, owner, "y") == ["x_y"]
    assert await names(gql, owner, "brien 4") == ["x_y"]
    assert await names(gql, owner, "note draft") == ["Budget <draft note>"]
    assert await names(gql, owner, "amp q") == ["Budget <draft note>"]
    assert sorted(await names(gql, owner, "a")) == ["A+B plan", "Budget <draft note>"]
    # A word does not match across a split (the characters are spaces, not removed).
    for query in ("203107", "ab", "xy", "pipefitting", "brien4", "draftnote"):
        assert await names(gql, owner, query) == [], query
    # Every ASCII punctuation mark between two words of two letters or digits (matched whole).
    _, marker = await make_user("marker")
    _, marks = await tree(gql, marker, "Marks", "Marks")
    words = [f"{n:02d}" if n % 2 else "z" + chr(ord("a") + n // 2) for n in range(len(string.punctuation) + 1)]
    marked = words[0] + "".join(mark + word for mark, word in zip(string.punctuation, words[1:], strict=True))
    await item(gql, marker, marks, "Punctuation", marked)
    for word in words:
        assert await names(gql, marker, word) == ["Punctuation"], word


async def test_the_index_follows_creation_updates_and_deletion(gql, make_user, db):
    _, owner = await make_user("owner")
    project, sub = await tree(gql, owner, "Harbour", "Quay walls")
    window = await item(gql, owner, sub, "Window", "cracked")
    assert await names(gql, owner, "window") == ["Window"]
    assert (await gql(RENAME_SEARCHED_ITEM, {"id": window, "name": "Skylight"}, token=owner))["updateWorkflowItem"][
        "userErrors"
    ] == []
    assert await names(gql, owner, "window") == []
    assert await names(gql, owner, "skylight") == ["Skylight"]
    assert await names(gql, owner, "cracked") == ["Skylight"]
    await made(gql, UPDATE_PROJECT, {"id": project, "description": "ferries and quays"}, owner)
    assert await names(gql, owner, "quays") == ["Harbour"]
    lonely, _ = await tree(gql, owner, "Lighthouse", "Lighthouse lamp")
    assert sorted(await names(gql, owner, "lighthouse")) == ["Lighthouse", "Lighthouse lamp"]
    # A row deleted by any means leaves the index with it (no mutation deletes one yet).
    await sql(db, "DELETE FROM subproject WHERE project_id = :p", p=lonely)
    await sql(db, "DELETE FROM permission WHERE resource_id = :p", p=lonely)
    await sql(db, "DELETE FROM project WHERE id = :p", p=lonely)
    assert await names(gql, owner, "lighthouse") == []
    if db.is_sqlite:  # the FTS5 table holds nothing more than the rows
        await sql(db, "INSERT INTO search_fts(search_fts) VALUES ('integrity-check')")


async def test_pages_follow_their_cursors_in_a_constant_number_of_statements(gql, make_user, count_statements):
    _, owner = await make_user("owner")
    _, sub = await tree(gql, owner, "Canal lock", "Lock keeping")  # a project and a subproject match "lock" too
    for n in range(10):
        await item(gql, owner, sub, f"Lock gate {n}", "lock " * (n % 3))
    whole = (await gql(SEARCH, {"q": "lock", "first": 100}, token=owner))["search"]
    ranked = [e["node"]["id"] for e in whole["edges"]]
    assert len(ranked) == 12 and whole["totalCount"] == 12 and not whole["pageInfo"]["hasNextPage"]
    assert {e["node"]["__typename"] for e in whole["edges"]} == {"Project", "Subproject", "WorkflowItem"}
    seen, after = [], None
    while True:
        page = (await gql(SEARCH, {"q": "lock", "first": 5, "after": after}, token=owner))["search"]
        seen += [e["node"]["id"] for e in page["edges"]]
        assert page["pageInfo"]["endCursor"] == (page["edges"][-1]["cursor"] if page["edges"] else None)
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == ranked
    # A page of every kind: the ranked ids and their count in one statement, then one statement
    # per kind on the page, however many rows it holds.
    counts = {}
    for more in (0, 20):
        for n in range(more):
            await item(gql, owner, sub, f"Lock chamber {n}")
        with count_statements() as counter:
            found = (await gql(SEARCH, {"q": "lock", "first": 100}, token=owner))["search"]
        counts[len(found["edges"])] = counter.count
    assert list(counts) == [12, 32] and counts[12] == counts[32] <= 4, counts


@pytest.mark.parametrize(
    ("variables", "field"),
    [
        ({"q": "x" * 201}, ["query"]),
        ({"q": " ,.;!? "}, ["query"]),
        ({"q": " ".join(f"w{n}" for n in range(11))}, ["query"]),
        ({"q": "roof", "after": "wfi_01ABC"}, ["after"]),
        ({"q": "roof", "after": "nan~wfi_01ABC"}, ["after"]),
        ({"q": "roof", "first": 101}, ["first"]),
    ],
)
async def test_bad_searches_are_refused_before_any_sql(gql, make_user, variables, field):
    _, owner = await make_user("owner")
    body = await gql.raw(SEARCH, variables, token=owner)
    assert body["data"] is None
    (error,) = body["errors"]
    assert (error["extensions"]["code"], error["extensions"]["field"]) == ("INVALID_INPUT", field)


async def test_the_pickers_search_users_and_groups_by_name(gql, make_user):
    _, root = await make_user("root", admin=True)
    _, alice = await make_user("alice")
    for login in ("bob", "carol", "caroline", "marc"):
        await make_user(login)
    for name in ("roofers", "glaziers", "admins"):
        assert (await gql(CREATE_GROUP, {"name": name}, token=root))["createGroup"]["userErrors"] == []
    users = (await gql(PICK_USERS, {"s": "CAR"}, token=alice))["users"]
    assert ([e["node"]["login"] for e in users["edges"]], users["totalCount"]) == (["carol", "caroline"], 2)
    page = (await gql(PICK_USERS, {"s": "ar", "first": 1}, token=alice))["users"]
    assert [e["node"]["login"] for e in page["edges"]] == ["carol"] and page["pageInfo"]["hasNextPage"]
    rest = (await gql(PICK_USERS, {"s": "ar", "after": page["pageInfo"]["endCursor"]}, token=alice))["users"]
    assert [e["node"]["login"] for e in rest["edges"]] == ["caroline", "marc"]
    assert (await gql(PICK_USERS, {"s": "%"}, token=alice))["users"]["edges"] == []
    groups = (await gql(PICK_GROUPS, {"s": "glaz"}, token=alice))["groups"]
    assert [e["node"]["name"] for e in groups["edges"]] == ["glaziers"]
    every = (await gql(PICK_GROUPS, {"s": None}, token=alice))["groups"]
    assert [e["node"]["name"] for e in every["edges"]] == ["roofers", "glaziers", "admins"]
    too_long = await gql.raw(PICK_GROUPS, {"s": "x" * 201}, token=alice)
    assert too_long["errors"][0]["extensions"]["code"] == "INVALID_INPUT"


async def test_postgresql_answers_a_search_from_its_gin_indexes(db):
    """The query's expression is the indexed one (migration 0019's), or PostgreSQL would scan."""
    if db.is_sqlite:
        pytest.skip("PostgreSQL's GIN indexes; SQLite reads its FTS5 table")
    async with db.engine.connect() as conn:
        await conn.execute(text("SET enable_seqscan = off"))
        for table in ("project", "subproject", "workflow_item"):
            vector = TSVECTOR.format(table=table)
            plan = await conn.execute(
                text(f"EXPLAIN SELECT id FROM {table} WHERE {vector} @@ to_tsquery('simple', 'x:*')")
            )
            assert f"ix_search_{table}" in "\n".join(row[0] for row in plan)


async def test_a_query_that_matches_very_many_rows_ranks_a_bounded_number_of_each_kind(gql, make_user, monkeypatch):
    _, owner = await make_user("owner")
    keeper_id, keeper = await make_user("keeper")
    watcher_id, watcher = await make_user("watcher")
    _, sub = await tree(gql, owner, "Dam", "Dam walls")
    for n in range(5):
        await item(gql, owner, sub, f"Dam gate {n}", assignee={0: keeper_id, 4: None}.get(n, watcher_id))

    def gates(found):
        return sorted(e["node"]["displayName"] for e in found["edges"] if e["node"]["__typename"] == "WorkflowItem")

    monkeypatch.setattr(searching, "MAX_RANKED", 3)
    # The keeper may see the oldest gate alone, which is not among the newest three matches: it
    # is among the keeper's own newest three, so it is found.
    found = (await gql(SEARCH, {"q": "dam gate", "first": 100}, token=keeper))["search"]
    assert gates(found) == ["Dam gate 0"] and found["totalCount"] == 1
    # The watcher plays a role in gates 1-3 and was never shown gate 0 (nor 4): the hidden
    # matches examined are neither shown nor counted.
    found = (await gql(SEARCH, {"q": "dam gate", "first": 100}, token=watcher))["search"]
    assert gates(found) == ["Dam gate 1", "Dam gate 2", "Dam gate 3"] and found["totalCount"] == 3
    found = (await gql(SEARCH, {"q": "dam", "first": 100}, token=owner))["search"]
    kinds = sorted(e["node"]["__typename"] for e in found["edges"])
    assert kinds == ["Project", "Subproject", "WorkflowItem", "WorkflowItem", "WorkflowItem"]
    assert found["totalCount"] == 5
    # The newest three items, whatever order the database keeps them in: each page ranks the
    # same set, so the pages' cursors walk it whole.
    newest = ["Dam gate 2", "Dam gate 3", "Dam gate 4"]
    items = [e["node"]["displayName"] for e in found["edges"] if e["node"]["__typename"] == "WorkflowItem"]
    assert sorted(items) == newest
    walked, after = [], None
    while True:
        page = (await gql(SEARCH, {"q": "dam gate", "first": 1, "after": after}, token=owner))["search"]
        assert page["totalCount"] == 3
        walked += [e["node"]["displayName"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert sorted(walked) == newest and len(walked) == 3
