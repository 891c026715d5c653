"""Each loader answers a whole batch with one query."""

import asyncio

import pytest

from resolvers.context import Context
from server.settings import Settings
from tests.fixtures.builders import build_tree
from tests.fixtures.documents import CREATE_ITEM, EXECUTE


async def test_loaders_batch_into_one_statement(db, gql, make_user, count_statements):
    from engine.people import identity

    _, token = await make_user("alice")
    _, sub, items = await build_tree(gql, token, items=4)
    await gql(CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": "more"}}, token=token)
    ctx = Context(db=db, settings=Settings())
    ctx.actor = await identity.authenticate(ctx.session, token)
    cases = await asyncio.gather(*[ctx.loaders.case_by_item.load(i) for i in items])
    for loader in ("states_by_case", "enabled_by_case", "roles_by_case"):
        with count_statements() as counter:
            results = await asyncio.gather(*[getattr(ctx.loaders, loader).load(c.id) for c in cases])
        assert counter.count == 1 and len(results) == 4 and all(results), loader
    with count_statements() as counter:
        found = await asyncio.gather(*[ctx.loaders.item_by_id.load(i) for i in [*items, "wfi_MISSING"]])
    assert counter.count == 1 and [f.id for f in found[:4]] == items and found[4] is None
    await ctx.close()


ITEMS_WITH_STATES = """query($s: ID!) { node(id: $s) { ... on Subproject {
  workflowItems(first: 10) { edges { node { displayName case { state { shortName } states { shortName } } } } } } } }"""

STATES_BY_NODE = """query($a: ID!, $b: ID!, $c: ID!) {
  a: node(id: $a) { ... on WorkflowItem { displayName case { state { shortName } } } }
  b: node(id: $b) { ... on WorkflowItem { displayName case { state { shortName } } } }
  c: node(id: $c) { ... on WorkflowItem { displayName case { state { shortName } } } } }"""


async def test_each_item_shows_its_own_state_when_several_load_at_once(gql, make_user):
    """Three bug items in three states, read in one request by a page and by three `node`s:
    a loader that hands one case's states to another shows a mix-up here."""
    owner_id, owner = await make_user("owner")
    _, sub, _ = await build_tree(gql, owner, items=0, workflow="bug")
    ids = []
    for name in ("Open one", "Resolved one", "Closed one"):
        item = {"subprojectId": sub["id"], "displayName": name, "assigneeId": owner_id}
        made = await gql(CREATE_ITEM, {"input": item}, token=owner)
        ids.append(made["createWorkflowItem"]["workflowItem"]["id"])
    steps = {ids[1]: [("resolve", "fixed")], ids[2]: [("resolve", "fixed"), ("close", None)]}
    for item, actions in steps.items():
        for action, resolution in actions:
            done = {"workflowItemId": item, "action": action, "resolution": resolution}
            assert (await gql(EXECUTE, {"input": done}, token=owner))["executeAction"]["userErrors"] == []
    expected = {"Open one": "open", "Resolved one": "resolved", "Closed one": "closed"}

    page = (await gql(ITEMS_WITH_STATES, {"s": sub["id"]}, token=owner))["node"]["workflowItems"]["edges"]
    assert {e["node"]["displayName"]: e["node"]["case"]["state"]["shortName"] for e in page} == expected
    assert {e["node"]["displayName"]: [s["shortName"] for s in e["node"]["case"]["states"]] for e in page} == {
        name: [state] for name, state in expected.items()
    }
    nodes = await gql(STATES_BY_NODE, dict(zip("abc", ids, strict=True)), token=owner)
    assert {n["displayName"]: n["case"]["state"]["shortName"] for n in nodes.values()} == expected


async def test_a_cleared_key_is_no_longer_known_and_loads_again():
    """`cached` reads the values a loader's cache keeps; a key cleared from the loader (DataLoader
    `clear`) must not be answered from them, or a field would show the value from before."""
    from strawberry.dataloader import DataLoader

    from resolvers.loaders import MISSING, KnownValues, cached

    calls: list[list[str]] = []

    async def load(keys: list[str]) -> list[str | Exception]:
        calls.append(keys)
        return [ValueError(key) if key == "bad" else f"{key} #{len(calls)}" for key in keys]

    loader = DataLoader(load_fn=load, cache_map=KnownValues())
    assert (await loader.load("a"), cached(loader, "a"), cached(loader, "b")) == ("a #1", "a #1", MISSING)
    loader.clear("a")
    assert cached(loader, "a") is MISSING
    assert (await loader.load("a"), cached(loader, "a"), calls) == ("a #2", "a #2", [["a"], ["a"]])
    with pytest.raises(ValueError):
        await loader.load("bad")
    loader.clear("bad")  # a failed load is cached but was never a value: clearing it is no error
    assert cached(loader, "bad") is MISSING and len(calls) == 3


async def test_a_loader_by_id_reads_only_the_rows_asked_for(db, gql, make_user):
    """A loader by id reads the keys it is asked for, not every row the viewer may see to pick
    them out afterwards: the same answer, but work that grows with all the viewer can see."""
    from sqlalchemy import select

    from engine.people import identity
    from models import Activity, Document, Subproject, WorkflowItem
    from models.ids import new_id

    _, token = await make_user("alice")
    for _ in range(2):
        await build_tree(gql, token, items=2)
    async with db.transaction() as s:
        items = (await s.scalars(select(WorkflowItem.id).order_by(WorkflowItem.id))).all()
        for item_id in items:
            s.add(Document(id=new_id("doc"), workflow_item_id=item_id, file_name="a.txt", sha256="0" * 64))
    async with db.session() as s:
        keys = {
            "subproject_by_id": (await s.scalars(select(Subproject.id))).all(),
            "item_by_id": items,
            "document_by_id": (await s.scalars(select(Document.id))).all(),
            "activity_by_id": (await s.scalars(select(Activity.id))).all(),
        }
    ctx = Context(db=db, settings=Settings())
    ctx.actor = await identity.authenticate(ctx.session, token)
    rows_read: list[int] = []
    read = ctx.loaders._rows

    async def counting(query):
        rows = await read(query)
        rows_read.append(len(rows))
        return rows

    ctx.loaders._rows = counting
    for loader, ids in keys.items():
        assert len(ids) >= 2, loader  # others the viewer may see, not asked for
        rows_read.clear()
        assert (await getattr(ctx.loaders, loader).load(ids[0])).id == ids[0], loader
        assert rows_read == [1], loader
    await ctx.close()
