"""Compiled reads (resolvers/compiled) answer exactly what the resolvers answer.

Every document here runs twice over the same database (``same``, tests/fixtures/compiled.py):
on a server with the read planner (the default) and on one with ``CASEWAY_COMPILED_READS=false``;
the two response bodies must be equal, byte for byte, for every kind of viewer of the
authorization matrix.

The generated tests (hypothesis, derandomized: the same examples on every run; the strategies
are tests/fixtures/selections.py's) read one scene, ``ordered_scene``
(tests/fixtures/compiled_scene.py), in which the same page holds rows one viewer may read and
another may not (the viewer sees S but not S2, I but not I2 nor I3, and reads I3's entries in
P's and S's history but not its grant entries; the player reads I3's log but those; the owner
reads them).
``reads`` draws any compiled field, for one drawn viewer (its documents are large);
``page_reads`` the resources' pages and ``log_reads`` Case.log and history, each for every
viewer. Breakages they are known to catch, each tried on both databases (2026-11-26):

- resolvers/compiled/log.py's ``_page`` reading every entry (``entry_readable`` made ``true()``):
  ``log_reads``;
- ``_page`` reading permission entries by the usual rule (viewHistory or a role in the case,
  listPermissions not asked): ``log_reads`` (the player on I3, the viewer on P and S);
- ``_page`` with the permission-kinds branch dropped (no one but admins reads them):
  ``log_reads`` (the owner);
- resolvers/compiled/pages.py's ``items_page`` without ``item_visible``: ``page_reads``;
- ``subprojects_page`` without ``subproject_visible``: ``page_reads``.

``reads`` alone catches neither pages.py breakage (its pages sit below fields it draws first).

Before this scene, no viewer saw a page's rows but some (the viewer read no entry at all, saw
every item and subproject), and (fixed beside it by ``_uses``) ``$f`` was declared wherever
``$flag`` was used, which failed validation alike on both servers: these breakages passed.
"""

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy import update

from bench.queries import R1, R2, R4
from models import WorkflowItem
from tests.api import test_authorization_matrix as matrix
from tests.fixtures.authorization import ACTORS
from tests.fixtures.compiled import compiled_outcomes
from tests.fixtures.compiled_scene import ordered_scene
from tests.fixtures.documents import CREATE_ITEM, GRANT, NESTED
from tests.fixtures.selections import log_reads, page_reads, reads

actors = matrix.actors  # the matrix's users (a fixture), one per actor


async def test_bench_reads_answer_the_same_for_every_viewer(gql, db, actors, same):
    scene = await matrix.build_scene(gql, db, actors)
    for actor in ACTORS:
        token = scene.tokens[actor]
        body = await same(R1, {"id": scene.project}, token)
        await same(R2, {"id": scene.project, "after": None}, token)
        await same(R4, {"s": scene.subproject, "after": None}, token)
        await same(NESTED, {}, token)
        print(actor, body)


TWO_ROOTS = """query Two($s: ID!) {
  node(id: $s) { ... on Subproject { workflowItems(first: 20) { totalCount
    edges { cursor node { id displayName status } } } } }
  projects(first: 5) { edges { node { id displayName } } pageInfo { hasNextPage endCursor } } }"""


async def test_a_compiled_read_costs_one_statement_per_root_field(
    gql, db, actors, same, count_statements, resolvers_only
):
    scene = await matrix.build_scene(gql, db, actors)
    token = scene.tokens["viewer"]
    await same(TWO_ROOTS, {"s": scene.subproject}, token)  # the viewer's token is remembered from now on
    with count_statements() as compiled:
        body = await gql.raw(TWO_ROOTS, {"s": scene.subproject}, token=token)
    assert [e["node"]["displayName"] for e in body["data"]["node"]["workflowItems"]["edges"]] == ["I", "I2"]
    assert compiled.count == 2, compiled.statements
    with count_statements() as resolved:  # CASEWAY_COMPILED_READS=false: a statement per relation
        assert (await resolvers_only.raw(TWO_ROOTS, {"s": scene.subproject}, token=token)) == body
    assert resolved.count > compiled.count, resolved.statements
    with count_statements() as r1:  # on SQLite too: each object below a page is its own CTE there
        await gql.raw(R1, {"id": scene.project}, token=token)
    assert r1.count == 1, r1.statements


async def test_a_page_of_items_seen_in_part_answers_the_same(gql, db, actors, same):
    """A viewer of the subproject who sees some of its items (by their role in I and I2's
    cases, by a grant on I3) and not I4, and one who sees none: every page, the cursors and
    the total, compiled as the resolvers answer. The compiled page checks each candidate's
    visibility as it reaches it (``pages._probe``); the count reads them all."""
    scene = await matrix.build_scene(gql, db, actors)
    owner = scene.tokens["owner"]
    made = []
    for name in ("I3", "I4"):  # made before the grants below, so the player's are not copied
        created = await gql(
            CREATE_ITEM, {"input": {"subprojectId": scene.subproject, "displayName": name}}, token=owner
        )
        made.append(created["createWorkflowItem"]["workflowItem"]["id"])
    for actor in ("player", "stranger"):
        for resource, intent in ((scene.project, "project.view"), (scene.subproject, "subproject.view")):
            granted = await gql(GRANT, {"r": resource, "i": intent, "p": scene.ids[actor]}, token=owner)
            assert granted["grantPermission"]["userErrors"] == []
    granted = await gql(GRANT, {"r": made[0], "i": "workflowItem.view", "p": scene.ids["player"]}, token=owner)
    assert granted["grantPermission"]["userErrors"] == []
    seen = {}
    for actor in ("player", "stranger"):
        token, after, names = scene.tokens[actor], None, []
        while True:
            body = await same(COUNTED_PAGE_OF_ITEMS, {"s": scene.subproject, "after": after}, token)
            page = body["data"]["node"]["workflowItems"]
            names += [edge["node"]["displayName"] for edge in page["edges"]]
            if not page["pageInfo"]["hasNextPage"]:
                break
            after = page["pageInfo"]["endCursor"]
        seen[actor] = (names, page["totalCount"])
        await same(R1, {"id": scene.project}, token)
        await same(R4, {"s": scene.subproject, "after": None}, token)
    assert seen == {"player": (["I", "I2", "I3"], 3), "stranger": ([], 0)}


# -- generated selections over the compiled part of the schema ---------------------------------


@pytest.mark.slow
@settings(derandomize=True, database=None, deadline=None, max_examples=60, suppress_health_check=list(HealthCheck))
@given(data=st.data())
async def test_generated_reads_answer_the_same_for_every_viewer(gql, db, actors, same, compiled_share, data):
    await _generated(gql, db, actors, same, compiled_share, data, reads(), every_viewer=False)


@pytest.mark.slow
@settings(derandomize=True, database=None, deadline=None, max_examples=30, suppress_health_check=list(HealthCheck))
@given(data=st.data())
async def test_generated_page_reads_answer_the_same_for_every_viewer(gql, db, actors, same, compiled_share, data):
    await _generated(gql, db, actors, same, compiled_share, data, page_reads(), roots=("prj", "sub"))


@pytest.mark.slow
@settings(derandomize=True, database=None, deadline=None, max_examples=50, suppress_health_check=list(HealthCheck))
@given(data=st.data())
async def test_generated_log_reads_answer_the_same_for_every_viewer(gql, db, actors, same, compiled_share, data):
    await _generated(gql, db, actors, same, compiled_share, data, log_reads())


async def _generated(gql, db, actors, same, share, data, documents, every_viewer=True, roots=None):
    """One drawn document, with drawn variables, for every viewer (``every_viewer``: what one
    may read of a page and another may not is the point), else for a drawn one: both servers'
    bodies equal. ``roots``: the kinds of ``$id`` the documents read (all the scene's, else).
    Whether the planner compiled it is recorded in ``share`` (per document, for its first
    viewer), so that a document that fell back cannot pass by comparing the resolvers with
    themselves unnoticed."""
    scene = _SCENES.get(tuple(sorted(actors.values())))
    if scene is None:
        scene = _SCENES[tuple(sorted(actors.values()))] = await ordered_scene(gql, db, actors)
    document = data.draw(documents, label="document")
    ids = [
        scene.project,
        scene.subproject,
        scene.item,
        scene.case,
        scene.empty_subproject,
        scene.extra["i2"],
        scene.extra["i3"],
        "wfi_01ZZZZZZZZZZZZZZZZZZZZZZZZ",
    ]
    ids = [i for i in ids if roots is None or i.startswith(roots)]
    variables = {
        "id": data.draw(st.sampled_from(ids), label="id"),
        "n": data.draw(st.sampled_from([None, 1, 3]), label="n"),
        "after": data.draw(
            st.sampled_from([None, scene.item, scene.extra["i2"], scene.extra["i3"], "bogus"]), label="after"
        ),
        "flag": data.draw(st.booleans(), label="flag"),
        "f": data.draw(
            st.sampled_from([None, {"status": "CLOSED"}, {"search": "I2"}, {"tag": "t"}, {"search": "x" * 201}]),
            label="f",
        ),
    }
    variables["la"] = data.draw(st.sampled_from([None, *scene.extra["seqs"], "bogus", "9" * 20]), label="la")
    variables["me"] = data.draw(st.sampled_from([None, "", actors["owner"], actors["player"]]), label="me")
    variables["hf"] = data.draw(
        st.sampled_from(
            [
                None,
                {},
                {"kind": "action_executed"},
                {"kind": "permission_revoked"},
                {"actor": actors["owner"]},
                {"from": "2999-01-01T00:00:00Z"},
                {"kind": ""},
            ]
        ),
        label="hf",
    )
    used = {k: v for k, v in variables.items() if f"${k}:" in document}
    viewers = ACTORS if every_viewer else [data.draw(st.sampled_from(ACTORS), label="actor")]
    for place, actor in enumerate(viewers):
        before = compiled_outcomes()
        body = await same(document, used, scene.tokens[actor])
        if place == 0:
            # node(id:) of a case: the planner has no root for it (a case is read below its item),
            # so the resolvers answer by design: counted apart, as a formless field is
            root_without_form = "node(id: $id)" in document and used.get("id", "").startswith("case_")
            share.record(document, body, before, compiled_outcomes(), formless=root_without_form)
        codes = {(e.get("extensions") or {}).get("code") for e in body.get("errors") or []}
        assert "GRAPHQL_VALIDATION_FAILED" not in codes, (document, body)  # a document that tests nothing
        event(f"{actor}: {'errors' if codes else 'no errors'}")


_SCENES: dict[tuple[str, ...], Any] = {}


PAGE_OF_ITEMS = """query Page($s: ID!, $after: String) { node(id: $s) { ... on Subproject {
  workflowItems(first: 1, after: $after) { pageInfo { hasNextPage endCursor } edges { node { displayName } } } } } }"""
COUNTED_PAGE_OF_ITEMS = """query CountedPage($s: ID!, $after: String) { node(id: $s) { ... on Subproject {
  workflowItems(first: 1, after: $after) { totalCount pageInfo { hasNextPage endCursor }
    edges { node { displayName } } } } } }"""


async def test_a_compiled_page_counts_only_when_its_total_is_selected(gql, db, actors, same, count_statements):
    """R4's page of a 20,000-item subproject: the page is read by index, first + 1 rows past the
    cursor (LIMIT), and the visible items are counted, a scan of all of them, only for
    totalCount."""
    scene = await matrix.build_scene(gql, db, actors)
    token = scene.tokens["player"]  # sees the items through their role, not through a grant
    first = await same(PAGE_OF_ITEMS, {"s": scene.subproject}, token)
    assert first["data"]["node"] is None  # the player may not see the subproject itself
    token = scene.tokens["viewer"]
    for after in (None, scene.item):
        variables = {"s": scene.subproject, "after": after}
        body = await same(PAGE_OF_ITEMS, variables, token)  # the viewer's token is remembered from now on
        total = await same(COUNTED_PAGE_OF_ITEMS, variables, token)
        assert len(body["data"]["node"]["workflowItems"]["edges"]) == 1
        assert total["data"]["node"]["workflowItems"]["totalCount"] == 2
        with count_statements() as page:
            await gql.raw(PAGE_OF_ITEMS, variables, token=token)
        with count_statements() as counted:
            await gql.raw(COUNTED_PAGE_OF_ITEMS, variables, token=token)
        (compiled_page,), (compiled_count,) = page.statements, counted.statements
        # hasNextPage counts the page's rows (first + 1 at most); totalCount is the count more, in
        # two forms of which one runs: every item when the viewer's view of them reaches down from
        # above (no check per item), else the visible ones
        assert "LIMIT" in compiled_page.upper()
        assert compiled_count.upper().count("COUNT(") == compiled_page.upper().count("COUNT(") + 2
        assert compiled_page.upper().count("CASE WHEN (SUBPROJECT.ID IN") == 0
        assert compiled_count.upper().count("CASE WHEN (SUBPROJECT.ID IN") == 1


NEW_FIELDS = """query New($id: ID!) { node(id: $id) { ... on Project { createdAt subprojects { edges { node {
  createdAt workflowItems { edges { node { createdAt case { createdAt state { shortName prettyName terminal }
    enabledActions { action { shortName } assignees { __typename ... on User { login } ... on Group { name } } }
  } } } } } } } } } }"""
FILTERED_ITEMS = """query Filtered($s: ID!, $f: ProjectFilter) { node(id: $s) { ... on Subproject {
  workflowItems(first: 5, filter: $f) { totalCount edges { node { displayName status } } } } } }"""
EDGES = """query Edges($id: ID!) { node(id: $id) { ... on WorkflowItem { createdAt case { createdAt
  state { shortName prettyName terminal } enabledActions { action { shortName }
    assignees { __typename ... on User { login } ... on Group { name } } } } } } }"""


async def test_new_fields_answer_the_same_at_their_edges(gql, db, actors, same, count_statements):
    """What the generated documents do not reach: an instant on a whole second (isoformat leaves
    the fraction out), and the new fields asserted, not only compared."""
    scene = await ordered_scene(gql, db, actors)
    owner = scene.tokens["owner"]
    item = scene.extra["i3"]  # closed
    async with db.transaction() as s:
        whole = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
        await s.execute(update(WorkflowItem).where(WorkflowItem.id == item).values(created_at=whole))
    for actor in ACTORS:
        tree = await same(NEW_FIELDS, {"id": scene.project}, scene.tokens[actor])
        body = await same(EDGES, {"id": item}, scene.tokens[actor])
        if actor == "owner":
            read = body["data"]["node"]
            assert read["createdAt"] == "2026-01-02T03:04:05+00:00"
            assert read["case"]["state"] == {"shortName": "closed", "prettyName": "Closed", "terminal": True}
            items = tree["data"]["node"]["subprojects"]["edges"][0]["node"]["workflowItems"]["edges"]
            actions = items[1]["node"]["case"]["enabledActions"]  # I's (second in the ordering)
            resolve = next(ea["assignees"] for ea in actions if ea["action"]["shortName"] == "resolve")
            # the player and the group play resolve's assigned role, by party id
            assert [a["__typename"] for a in resolve] == ["Group", "User"] and resolve[1]["login"] == "player"
    for status, names in (("OPEN", ["I2", "I"]), ("CLOSED", ["I3"])):  # I3 is closed; I2's case is suspended
        for actor in ACTORS:
            body = await same(FILTERED_ITEMS, {"s": scene.subproject, "f": {"status": status}}, scene.tokens[actor])
            if actor == "owner":
                items = body["data"]["node"]["workflowItems"]
                assert [e["node"]["displayName"] for e in items["edges"]] == names
                assert items["totalCount"] == len(names)
    for document, variables in (
        (EDGES, {"id": item}),
        (NEW_FIELDS, {"id": scene.project}),
        (FILTERED_ITEMS, {"s": scene.subproject, "f": {"status": "CLOSED", "search": "3"}}),
    ):
        with count_statements() as compiled:
            await gql.raw(document, variables, token=owner)
        assert compiled.count == 1, compiled.statements


LOG_PAGE = """query Log($id: ID!, $after: String) { node(id: $id) { ... on WorkflowItem { case { log(first: 2,
  after: $after) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node { seq at kind comment data
    hash prevHash via actor { login kind }
    onBehalfOf { __typename ... on User { login } ... on Group { name } } } } } } } } }"""


async def test_a_case_log_compiles_and_answers_the_same_at_its_edges(gql, db, actors, same, count_statements):
    """Case.log compiled: the viewer (project.view, no viewHistory, no role) sees the item and
    an empty log, the stranger no item, the player (a role in the case) the whole log; a page
    boundary with ``after``; an entry made by a deputy for an absent user; a refused cursor."""
    scene = await ordered_scene(gql, db, actors)
    owner = scene.tokens["owner"]
    first_seq, second_seq = (int(s) for s in scene.extra["seqs"][:2])  # the second: made for the victim
    pages = {}
    for actor in ACTORS:
        token = scene.tokens[actor]
        pages[actor] = await same(LOG_PAGE, {"id": scene.item}, token)
        cursor = None
        for _ in range(10):  # every page, each after the one before
            body = await same(LOG_PAGE, {"id": scene.item, "after": cursor}, token)
            log = (body["data"]["node"] or {}).get("case", {}).get("log") if body["data"]["node"] else None
            if log is None or not log["pageInfo"]["hasNextPage"]:
                break
            cursor = log["pageInfo"]["endCursor"]
        refused = await same(LOG_PAGE, {"id": scene.item, "after": "bogus"}, token)
        if actor != "stranger":  # the stranger's item is missing: its log's cursor is never read
            assert refused["errors"][0]["extensions"]["code"] == "INVALID_INPUT"
    assert pages["stranger"]["data"]["node"] is None
    viewer = pages["viewer"]["data"]["node"]["case"]["log"]
    assert viewer == {"totalCount": 0, "pageInfo": {"hasNextPage": False, "endCursor": None}, "edges": []}
    for actor in ("owner", "player", "admin"):
        log = pages[actor]["data"]["node"]["case"]["log"]
        assert [e["node"]["seq"] for e in log["edges"]] == [first_seq, second_seq], actor
        assert [e["cursor"] for e in log["edges"]] == [str(first_seq), str(second_seq)]
        assert log["pageInfo"] == {"hasNextPage": True, "endCursor": str(second_seq)}
        assert log["edges"][1]["node"]["onBehalfOf"] == {"__typename": "User", "login": "victim"}
        assert log["edges"][0]["node"]["onBehalfOf"] is None
        assert log["edges"][0]["node"]["actor"] == {"login": "owner", "kind": "PERSON"}
        assert log["edges"][0]["node"]["at"].endswith("+00:00")
        assert log["edges"][0]["node"]["via"] is None
    after = await same(LOG_PAGE, {"id": scene.item, "after": str(first_seq)}, owner)
    assert after["data"]["node"]["case"]["log"]["edges"][0]["node"]["seq"] == second_seq
    # the third entry came through an API token (tests/fixtures/compiled_scene.py)
    third = await same(LOG_PAGE, {"id": scene.item, "after": str(second_seq)}, owner)
    assert third["data"]["node"]["case"]["log"]["edges"][0]["node"]["via"] == "nightly sync"
    with count_statements() as compiled:
        await gql.raw(LOG_PAGE, {"id": scene.item, "after": str(first_seq)}, token=owner)
    assert compiled.count == 1, compiled.statements


HISTORY_PAGE = """query History($id: ID!, $after: String, $f: HistoryFilter) { node(id: $id) {
  ... on Project { history(first: 2, after: $after, filter: $f) { totalCount pageInfo { hasNextPage endCursor }
    edges { cursor node { seq kind comment actor { login } } } } } } }"""


ENTRY_ITEMS = """query Entries($id: ID!) { node(id: $id) { ... on Project { history(first: 100) { edges { node {
  seq kind workflowItem { id } } } } } } }"""


async def test_a_history_compiles_and_answers_the_same_at_its_edges(gql, db, actors, same, count_statements):
    """Project.history compiled: the viewer (project.view, viewHistory on I3 alone) reads I3's
    entries but not the grant entries among them, the owner all of it; a page boundary with
    ``after``; each part of the filter."""
    scene = await ordered_scene(gql, db, actors)
    owner = scene.tokens["owner"]
    filters = [None, {"kind": "comment"}, {"kind": ""}, {"actor": actors["player"]}, {"from": "2999-01-01T00:00:00Z"}]
    filters += [{"to": "2000-01-01T00:00:00"}, {"kind": "k" * 65}]
    for actor in ACTORS:
        for f in filters:
            await same(HISTORY_PAGE, {"id": scene.project, "f": f}, scene.tokens[actor])
    whole = await same(HISTORY_PAGE, {"id": scene.project}, owner)
    history = whole["data"]["node"]["history"]
    assert history["totalCount"] > 2 and history["pageInfo"]["hasNextPage"] is True
    after = history["pageInfo"]["endCursor"]
    assert after == history["edges"][1]["cursor"] == str(history["edges"][1]["node"]["seq"])
    following = await same(HISTORY_PAGE, {"id": scene.project, "after": after}, owner)
    assert following["data"]["node"]["history"]["edges"][0]["node"]["seq"] > int(after)
    kind = history["edges"][1]["node"]["kind"]
    kinds = await same(HISTORY_PAGE, {"id": scene.project, "f": {"kind": kind}}, owner)
    assert {e["node"]["kind"] for e in kinds["data"]["node"]["history"]["edges"]} == {kind}
    # the viewer (viewHistory on I3 alone) reads I3's entries but their grant entries, no other
    viewer = await same(ENTRY_ITEMS, {"id": scene.project}, scene.tokens["viewer"])
    every = (await gql(ENTRY_ITEMS, {"id": scene.project}, token=owner))["node"]["history"]["edges"]
    of_i3 = [e["node"]["seq"] for e in every if (e["node"]["workflowItem"] or {}).get("id") == scene.extra["i3"]]
    readable = [e["node"]["seq"] for e in every if e["node"]["seq"] in of_i3 and "permission" not in e["node"]["kind"]]
    assert len(readable) == len(of_i3) - 2 > 0
    assert [e["node"]["seq"] for e in viewer["data"]["node"]["history"]["edges"]] == readable
    with count_statements() as compiled:
        await gql.raw(HISTORY_PAGE, {"id": scene.project, "after": after, "f": {"kind": kind}}, token=owner)
    assert compiled.count == 1, compiled.statements
