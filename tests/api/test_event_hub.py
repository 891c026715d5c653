"""The event hub in-process: audiences, ordering, and dropping a subscriber that falls behind."""

import asyncio
import gc
import time

import asyncpg
import pytest
from sqlalchemy.engine import make_url

import engine
from engine.notify.events import SubscriberDropped
from server.hub import CHANNEL, EventHub, PostgresEventHub
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


class HoldingProxy:
    """A TCP relay to PostgreSQL that can hold what the client sends: a NOTIFY held here is in
    flight, for as long as a test needs it to be."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.open = asyncio.Event()
        self.open.set()
        self.holding = asyncio.Event()  # set once something waits at the closed gate
        self._pumps: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        return self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        self._server.close()
        for pump in self._pumps:
            pump.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)

    async def _relay(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        server_reader, server_writer = await asyncio.open_connection(*self.target)
        self._pumps |= {
            asyncio.create_task(self._pump(client_reader, server_writer, gated=True)),
            asyncio.create_task(self._pump(server_reader, client_writer, gated=False)),
        }

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, gated: bool) -> None:
        try:
            while chunk := await reader.read(65536):
                if gated and not self.open.is_set():
                    self.holding.set()
                    await self.open.wait()
                writer.write(chunk)
                await writer.drain()
        finally:
            writer.close()


@pytest.mark.skipif(BACKEND != "postgres", reason="the NOTIFY wake-up exists on PostgreSQL only")
async def test_commits_during_a_notify_in_flight_get_one_more_notify_after_it(db, caplog):
    """asyncpg runs one operation per connection: publishes that land while a NOTIFY is in
    flight must wait for it, not start a second one (which fails, and the wake-up it carried is
    lost until the other processes' next poll), and must not be forgotten either: one more
    NOTIFY, after the one in flight, covers them all."""
    url = make_url(db.session_dsn).set(drivername="postgresql")
    listener = await asyncpg.connect(url.render_as_string(hide_password=False))
    arrivals: list[float] = []
    await listener.add_listener(CHANNEL, lambda *_: arrivals.append(time.monotonic()))
    failures: list[dict] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: failures.append(context))
    proxy = HoldingProxy(url.host or "127.0.0.1", url.port or 5432)
    dsn = url.set(host="127.0.0.1", port=await proxy.start()).render_as_string(hide_password=False)
    hub = PostgresEventHub(db, dsn=dsn, notify_delay=0)
    await hub.start()
    try:
        proxy.open.clear()
        await hub.publish([])
        await asyncio.wait_for(proxy.holding.wait(), 5)  # the first NOTIFY is in flight
        for _ in range(200):
            await hub.publish([])
            await asyncio.sleep(0)
        assert arrivals == []
        released = time.monotonic()
        proxy.open.set()
        for _ in range(100):
            if len(arrivals) >= 2:
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.2)  # time for a third NOTIFY, were one sent
    finally:
        proxy.open.set()
        await hub.stop()
        await listener.close()
        await proxy.stop()
        gc.collect()  # an unretrieved task exception is reported when the task is collected
        loop.set_exception_handler(None)
    assert len(arrivals) == 2 and arrivals[0] > released
    assert failures == [] and "NOTIFY failed" not in caplog.text
