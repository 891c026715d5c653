"""The event hub in-process: audiences, ordering, and dropping a subscriber that falls behind."""

import pytest

import engine
from engine.events import SubscriberDropped
from server.hub import EventHub


async def test_hub_delivers_in_seq_order_and_drops_slow_subscribers(db, make_actor):
    owner = await make_actor("owner")
    hub = EventHub(db, queue_size=3)
    await hub.start()
    try:
        fast, slow = hub.subscribe(), hub.subscribe()
        async with db.transaction() as s:
            project = await engine.create_project(s, actor=owner, display_name="P")
        await hub.catch_up()
        event = fast.queue.get_nowait()
        assert event.entry.project_id == project.id and event.audience.admits(owner)
        stranger = engine.Actor(user_id="usr_X", login="x", party_ids=frozenset({"usr_X"}))
        assert not event.audience.admits(stranger)
        for i in range(4):
            async with db.transaction() as s:
                await engine.update_project(s, actor=owner, id=project.id, display_name=f"P{i}")
            await hub.catch_up()
            while not fast.queue.empty():
                fast.queue.get_nowait()
        assert not fast.dropped and slow.dropped
        with pytest.raises(SubscriberDropped):
            await anext(slow.events())  # the first thing a dropped subscriber hears is why
    finally:
        await hub.stop()
