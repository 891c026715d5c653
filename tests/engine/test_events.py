"""The event hub in-process: audiences, ordering, and dropping a subscriber that falls behind."""

import asyncio
import gc
import time

import asyncpg
import pytest

import engine
from engine.events import SubscriberDropped
from server.hub import CHANNEL, EventHub, create_hub
from tests.fixtures.database import BACKEND


async def test_hub_delivers_in_seq_order_and_drops_slow_subscribers(db, make_actor):
    owner = await make_actor("owner")
    hub = EventHub(db, queue_size=3)
    await hub.start()
    try:
        fast, slow = await hub.subscribe(), await hub.subscribe()
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


async def test_a_hub_without_subscribers_reads_nothing_and_starts_a_newcomer_at_the_newest(
    db, make_actor, count_statements
):
    """Every commit wakes every server process; one with nobody subscribed must not read the
    log for it (two reads per commit on a two-process server). A subscriber that comes later
    starts after what committed meanwhile: that is history to replay, not live news."""
    owner = await make_actor("owner")
    hub = EventHub(db)
    await hub.start()
    try:
        async with db.transaction() as s:
            project = await engine.create_project(s, actor=owner, display_name="P")
        with count_statements() as idle:
            await hub.publish([])
            await hub.catch_up()
        assert idle.count == 0
        subscriber = await hub.subscribe()
        async with db.transaction() as s:
            await engine.update_project(s, actor=owner, id=project.id, display_name="P2")
        await hub.catch_up()
        live = [subscriber.queue.get_nowait().entry.kind for _ in range(subscriber.queue.qsize())]
        assert live == ["project_updated"]
        assert subscriber.start_seq > 0  # the creation is before it, for a replay to find
    finally:
        await hub.stop()


@pytest.mark.skipif(BACKEND != "postgres", reason="the NOTIFY wake-up exists on PostgreSQL only")
async def test_a_burst_of_commits_sends_its_wake_ups_one_at_a_time(db, caplog):
    """asyncpg runs one operation per connection: a publish that lands while a NOTIFY is in
    flight must wait for it, not start a second one (which fails, and the wake-up it carried is
    lost until the other processes' next poll). The burst ends with a NOTIFY that arrives."""
    listener = await asyncpg.connect(db.url.replace("postgresql+asyncpg://", "postgresql://"))
    arrivals: list[float] = []
    await listener.add_listener(CHANNEL, lambda *_: arrivals.append(time.monotonic()))
    failures: list[dict] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: failures.append(context))
    hub = create_hub(db, notify_delay=0)
    await hub.start()
    try:
        for _ in range(200):
            await hub.publish([])
            last_publish = time.monotonic()  # publish never yields: its NOTIFY is not sent yet
            for _ in range(3):  # lets a NOTIFY start, so the next publish lands during it
                await asyncio.sleep(0)
        for _ in range(50):
            if arrivals and arrivals[-1] > last_publish:
                break
            await asyncio.sleep(0.05)
    finally:
        await hub.stop()
        await listener.close()
        gc.collect()  # an unretrieved task exception is reported when the task is collected
        loop.set_exception_handler(None)
    assert arrivals and arrivals[-1] > last_publish
    assert failures == [] and "NOTIFY failed" not in caplog.text
