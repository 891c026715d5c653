"""A live event's reads do not grow with its subscribers: the rows an entry points to are read
once per batch of entries (resolvers/live.py), not once per subscriber."""

import asyncio
from types import SimpleNamespace

import engine
from resolvers.context import Context
from resolvers.live import SharedRows
from schema import activity as activity_schema
from schema import schema
from server.hub import EventHub
from server.settings import Settings
from tests.fixtures.conditions import wait_until

ACTIVITY_WITH_PLACES = """subscription($p: ID) { activity(projectId: $p) {
  comment actor { login } project { displayName } subproject { displayName } workflowItem { displayName } } }"""


async def _project_with_an_item(db, owner):
    """Project P, its subproject S on the bug workflow, and its item I."""
    async with db.transaction() as s:
        project = await engine.create_project(s, actor=owner, display_name="P")
        sub = await engine.create_subproject(
            s, actor=owner, project_id=project.id, display_name="S", currency="EUR", workflow="bug"
        )
        item, _ = await engine.create_workflow_item(s, actor=owner, subproject_id=sub.id, display_name="I")
    return project, item


async def _deliver_one_event(db, owner, project_id, item_id, subscribers, count_statements):
    hub = EventHub(db)
    await hub.start()
    streams = []
    for _ in range(subscribers):
        context = Context(db=db, settings=Settings(database_url=db.url), hub=hub, actor=owner, live=True)
        streams.append(
            await schema.subscribe(ACTIVITY_WITH_PLACES, variable_values={"p": project_id}, context_value=context)
        )
    pending = [asyncio.ensure_future(anext(stream)) for stream in streams]
    await wait_until(lambda: hub.subscriber_count == subscribers, what="every subscription registered with the hub")
    async with db.transaction() as s:
        await engine.execute(s, actor=owner, action="comment", workflow_item_id=item_id, comment="live")
    with count_statements() as counted:
        await hub.catch_up()
        results = await asyncio.gather(*pending)
    for stream in streams:
        await stream.aclose()
    await hub.stop()
    return counted.count, results


async def test_the_reads_of_a_live_event_do_not_grow_with_its_subscribers(db, make_actor, count_statements):
    owner = await make_actor("owner")
    project, item = await _project_with_an_item(db, owner)
    one, (result,) = await _deliver_one_event(db, owner, project.id, item.id, 1, count_statements)
    assert not result.errors and result.data == {
        "activity": {
            "comment": "live",
            "actor": {"login": "owner"},
            "project": {"displayName": "P"},
            "subproject": {"displayName": "S"},
            "workflowItem": {"displayName": "I"},
        }
    }
    twenty, results = await _deliver_one_event(db, owner, project.id, item.id, 20, count_statements)
    assert [r.data for r in results] == [result.data] * 20
    assert twenty == one


async def test_a_live_result_is_shared_only_by_viewers_it_cannot_differ_for(db, make_actor):
    """The rule behind sharing one execution of a live event among its subscribers (see
    Context.share_result): same entry, same operation, same view of the event, and nothing
    asked of the viewer or the database while computing it."""
    alice, bob, carol = await make_actor("alice"), await make_actor("bob"), await make_actor("carol")

    def context(actor):
        return Context(db=db, settings=Settings(database_url=db.url), actor=actor, live=True)

    entry = SimpleNamespace(id="act_1", actor_id=None, project_id=None, subproject_id=None, workflow_item_id="i")
    note, results, item = object(), {}, object()
    # alice and bob may view the entry's item, carol may not: she would see workflowItem null
    shared = SharedRows(rows={"i": item}, viewers={"i": frozenset({alice.user_id, bob.user_id})})
    first = context(alice)
    first.start_event(entry, shared, results)
    first.share_result(entry, "op", "computed once")
    same_view = context(bob)
    same_view.start_event(entry, shared, results)
    assert same_view.shared_result(entry, "op") == "computed once"
    assert same_view.shared_result(entry, "another op") is None
    assert same_view.shared_result(note, "op") is None  # another root, e.g. a notification
    other_view = context(carol)
    other_view.start_event(entry, shared, results)
    assert other_view.shared_result(entry, "op") is None

    personal, fresh = context(alice), {}
    personal.start_event(entry, shared, fresh)
    personal.viewer  # noqa: B018 - a resolver asked who is viewing
    personal.share_result(entry, "op", "alice's own")
    reads, fresh_too = context(alice), {}
    reads.start_event(entry, shared, fresh_too)
    reads.session  # noqa: B018 - a loader missed and read the database
    reads.share_result(entry, "op", "alice's own")
    assert fresh == fresh_too == {}


async def test_a_live_events_loaders_start_with_the_shared_rows_the_viewer_may_see(db, make_actor, count_statements):
    """A subscriber that computes an event's result reads what the event's subscribers share
    through its loaders, as its own visibility-filtered read would find it; one that takes a
    shared result never needs them."""
    alice, carol = await make_actor("alice"), await make_actor("carol")
    entry = SimpleNamespace(id="act_1", actor_id=None, project_id=None, subproject_id=None, workflow_item_id="i")
    item = object()
    shared = SharedRows(rows={"i": item}, viewers={"i": frozenset({alice.user_id})})
    for actor, expected in ((alice, item), (carol, None)):
        ctx = Context(db=db, settings=Settings(database_url=db.url), actor=actor, live=True)
        ctx.start_event(entry, shared, {})
        with count_statements() as counted:
            assert await ctx.loaders.item_by_id.load("i") is expected
        assert counted.count == 0  # answered from the shared rows


async def test_an_unexpected_failure_in_a_live_event_reaches_its_subscribers_masked(db, make_actor, monkeypatch):
    """As over HTTP: a bug met while computing a live event reaches each subscriber as
    "Unexpected error." at its path, never as the exception's text, and the stream goes on."""
    owner = await make_actor("owner")
    project, item = await _project_with_an_item(db, owner)
    hub = EventHub(db)
    await hub.start()
    context = Context(db=db, settings=Settings(database_url=db.url), hub=hub, actor=owner, live=True)
    # schema.stream is what the WebSocket transports run (strawberry's graphql-transport-ws handler)
    stream = await schema.stream(
        "subscription($p: ID) { activity(projectId: $p) { comment actor { login } } }",
        variable_values={"p": project.id},
        context_value=context,
    )
    pending = asyncio.ensure_future(anext(stream))
    await wait_until(lambda: hub.subscriber_count == 1, what="the subscription registered with the hub")

    def broken(*_: object) -> None:
        raise RuntimeError("connection string postgresql://secret@db")

    monkeypatch.setattr(activity_schema, "one", broken)
    for comment in ("first", "second"):
        async with db.transaction() as s:
            await engine.execute(s, actor=owner, action="comment", workflow_item_id=item.id, comment=comment)
    await hub.catch_up()
    first = await pending
    second = await anext(stream)
    await stream.aclose()
    await hub.stop()
    for result, comment in ((first, "first"), (second, "second")):
        assert result.data == {"activity": {"comment": comment, "actor": None}}
        assert [(e.message, e.path) for e in result.errors] == [("Unexpected error.", ["activity", "actor"])]
        assert "secret" not in str(result.errors)
