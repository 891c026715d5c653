"""Each loader answers a whole batch with one query."""

import asyncio

from resolvers.context import Context
from server.settings import Settings
from tests.api.documents import CREATE_ITEM
from tests.api.test_resource_tree import build_tree


async def test_loaders_batch_into_one_statement(db, gql, make_user, count_statements):
    from engine import identity

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
