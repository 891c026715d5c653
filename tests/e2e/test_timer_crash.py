"""Timers survive a crash: a server on PostgreSQL killed with SIGKILL while its timers fall due,
started again, fires every timer exactly once (counting the log entries); and two servers on one
database each claim different timers."""

import asyncio
import time
from collections import Counter

import pytest
from sqlalchemy import func, select

from bench.server import Server, drop_postgres, fresh_postgres
from models import Activity, Database
from server.migrate import upgrade
from tests.fixtures.builders import fired_per_timer, seed_timers
from tests.fixtures.database import BACKEND

pytestmark = pytest.mark.skipif(BACKEND != "postgres", reason="several server processes need PostgreSQL")


async def wait_for(url: str, condition, *, within: float) -> Counter[str]:  # type: ignore[no-untyped-def]
    """The firings per timer once ``condition`` holds of them; fails, showing how many fired,
    when it does not within ``within`` seconds (it used to return as if it had)."""
    deadline = time.monotonic() + within
    while not condition(fired := await fired_per_timer(url)):
        assert time.monotonic() < deadline, f"after {within} s {sum(fired.values())} firings of {len(fired)} timers"
        await asyncio.sleep(0.05)
    return fired


@pytest.fixture
async def database_url():  # type: ignore[no-untyped-def]
    url, name = await fresh_postgres("caseway_timers")
    await asyncio.to_thread(upgrade, url)
    yield url
    await drop_postgres(name)


ENV = {"CASEWAY_TIMER_POLL_INTERVAL": "1"}


async def test_a_server_killed_while_timers_fall_due_fires_each_once_after_a_restart(database_url):
    count = 300
    await seed_timers(database_url, count)
    first = await asyncio.to_thread(Server, database_url, env=ENV)
    try:
        await wait_for(database_url, lambda fired: len(fired) > 0, within=30)
    finally:
        first.process.kill()  # SIGKILL: no shutdown, a transaction may be cut mid-way
        first.process.wait(10)
    before = await fired_per_timer(database_url)
    second = await asyncio.to_thread(Server, database_url, env=ENV)  # catches up at startup
    try:
        fired = await wait_for(database_url, lambda fired: len(fired) == count, within=60)
    finally:
        second.stop()
    assert len(fired) == count and set(fired.values()) == {1}, (len(before), len(fired))
    assert sum(fired.values()) == count


async def test_two_servers_fire_a_thousand_timers_due_together_each_once(database_url):
    count = 1000
    await seed_timers(database_url, count)
    servers = await asyncio.gather(*(asyncio.to_thread(Server, database_url, env=ENV) for _ in range(2)))
    try:
        fired = await wait_for(database_url, lambda fired: sum(fired.values()) >= count, within=120)
    finally:
        for server in servers:
            server.stop()
    assert len(fired) == count and set(fired.values()) == {1}
    db = Database(database_url)
    try:
        async with db.read_session() as s:
            total = await s.scalar(select(func.count()).select_from(Activity).where(Activity.action == "lapse"))
    finally:
        await db.dispose()
    assert total == count
