"""A page of a subproject whose ordering lists thousands of items, read many times on
PostgreSQL by the resolvers: a prepared statement is planned for any parameter after its fifth
run, and the page must not depend on the plan guessing the ordering's length
(resolvers/child_pages.py, ``_walk``)."""

import json

import pytest
from sqlalchemy import event, text

from tests.fixtures.builders import build_tree
from tests.fixtures.database import BACKEND

pytestmark = [
    pytest.mark.skipif(BACKEND != "postgres", reason="PostgreSQL's plan cache"),
    pytest.mark.usefixtures("differential_reads"),
]

WIDE = 3000

PAGE = """query($s: ID!, $after: String) { node(id: $s) { ... on Subproject {
  workflowItems(first: 20, after: $after) { totalCount edges { node { displayName } }
    pageInfo { hasNextPage endCursor } } } } }"""


@pytest.fixture
def compiled_reads() -> bool:
    return False


async def widen(db, sub_id: str, viewer: str) -> None:
    """``WIDE`` more items in the subproject, set-based, each viewable by ``viewer``, and an
    ordering listing every item newest first (so that display order is not creation order)."""
    columns = (
        "subproject_id, project_id, description, created_by, created_at, due_date, assignee_id, amount_type,"
        " amount, currency, exchange_rate, billing_date, reject_reason, tags, additional_data"
    )
    async with db.transaction() as s:
        await s.execute(
            text(
                f"INSERT INTO workflow_item (id, display_name, {columns}) "
                f"SELECT 'wfi_' || lpad(n::text, 26, '0'), 'Wide ' || lpad(n::text, 5, '0'), {columns} "
                "FROM workflow_item, generate_series(1, :wide) AS n WHERE subproject_id = :s"
            ),
            {"wide": WIDE, "s": sub_id},
        )
        await s.execute(
            text(
                "INSERT INTO permission (resource_id, intent, party_id) "
                "SELECT id, 'workflowItem.view', :viewer FROM workflow_item WHERE subproject_id = :s "
                "UNION SELECT :s, 'subproject.view', :viewer UNION SELECT project_id, 'project.view', :viewer "
                "FROM subproject WHERE id = :s ON CONFLICT DO NOTHING"
            ),
            {"viewer": viewer, "s": sub_id},
        )
        await s.execute(
            text(
                "UPDATE subproject SET workflow_item_ordering = (SELECT json_agg(id ORDER BY id DESC) "
                "FROM workflow_item WHERE subproject_id = :s) WHERE id = :s"
            ),
            {"s": sub_id},
        )
        await s.execute(text("ANALYZE workflow_item"))
        await s.execute(text("ANALYZE permission"))


def rows_read_from_functions(plan: dict) -> int:
    """Rows the set-returning functions (the ordering's ``unnest``) produced, over every loop."""
    own = plan["Actual Rows"] * plan["Actual Loops"] if plan["Node Type"] == "Function Scan" else 0
    return own + sum(rows_read_from_functions(child) for child in plan.get("Plans", []))


async def generic_plan(db, statement: str, parameters: tuple) -> dict:
    """The executed plan PostgreSQL uses for ``statement`` from its sixth run on: a generic
    plan, planned without the parameters' values. (EXPLAIN of a statement with parameters plans
    it with their values, so the statement is PREPAREd and its EXECUTE explained.)"""
    async with db.engine.connect() as connection:
        raw = (await connection.get_raw_connection()).driver_connection
        types = [t.name for t in (await raw.prepare(statement)).get_parameters()]
        values = [
            await raw.fetchval(f"SELECT quote_literal($1::{name}::text) || '::{name}'", value)
            for name, value in zip(types, parameters, strict=True)
        ]
        async with raw.transaction():
            await raw.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            await raw.execute(f"PREPARE wide_page AS {statement}")
            try:
                explained = await raw.fetchval(f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE wide_page({', '.join(values)})")
            finally:
                await raw.execute("DEALLOCATE wide_page")
    return (json.loads(explained) if isinstance(explained, str) else explained)[0]["Plan"]


@pytest.mark.timeout(60)
async def test_a_page_of_a_wide_ordering_stays_fast_past_the_fifth_run(gql, db, make_user):
    _, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    _, sub, _ = await build_tree(gql, alice, items=1)
    await widen(db, sub["id"], bob_id)
    sent: list[tuple[str, tuple]] = []

    def keep(conn, cursor, statement, parameters, context, executemany):
        if "unnest(" in statement:
            sent.append((statement, tuple(parameters)))

    event.listen(db.engine.sync_engine, "before_cursor_execute", keep)
    try:
        await gql(PAGE, {"s": sub["id"]}, token=bob)
        await gql(PAGE, {"s": sub["id"], "after": f"wfi_{WIDE // 2:026d}"}, token=bob)
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", keep)
    # the page statement, planned for any ordering: it reads the ordering a bounded number of
    # times (a plan that joins it by a nested loop reads it once per item: WIDE² rows)
    assert len(sent) == 2
    for statement, parameters in sent:
        read = rows_read_from_functions(await generic_plan(db, statement, parameters))
        assert read <= 3 * (WIDE + 1)
    first = ["Item 0"] + [f"Wide {n:05d}" for n in range(WIDE, WIDE - 19, -1)]  # its id is the newest
    middle = f"wfi_{WIDE // 2:026d}"
    second = [f"Wide {n:05d}" for n in range(WIDE // 2 - 1, WIDE // 2 - 21, -1)]
    for _ in range(8):  # past the fifth run: PostgreSQL's generic plan
        page = (await gql(PAGE, {"s": sub["id"]}, token=bob))["node"]["workflowItems"]
        assert [e["node"]["displayName"] for e in page["edges"]] == first
        assert page["totalCount"] == WIDE + 1 and page["pageInfo"]["hasNextPage"]
        page = (await gql(PAGE, {"s": sub["id"], "after": middle}, token=bob))["node"]["workflowItems"]
        assert [e["node"]["displayName"] for e in page["edges"]] == second
    last = (await gql(PAGE, {"s": sub["id"], "after": "wfi_" + "2".zfill(26)}, token=bob))["node"]["workflowItems"]
    assert [e["node"]["displayName"] for e in last["edges"]] == ["Wide 00001"]
    assert not last["pageInfo"]["hasNextPage"] and last["totalCount"] == WIDE + 1
