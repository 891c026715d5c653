"""Timers survive a crash: a server on PostgreSQL killed with SIGKILL while its timers fall due,
started again, fires every timer exactly once (counting the log entries); and two servers on one
database each claim different timers."""

import asyncio
import time
from collections import Counter

import pytest
from sqlalchemy import func, select

import engine
from bench.server import Server, drop_postgres, fresh_postgres
from engine import identity, workflows
from models import Activity, Database
from server.migrate import upgrade
from tests.fixtures.database import BACKEND

pytestmark = pytest.mark.skipif(BACKEND != "postgres", reason="several server processes need PostgreSQL")

SPEC = {
    "short_name": "lapse",
    "states": {"new": {}, "late": {"terminal": True}},
    "actions": {
        "start": {"trigger": "init", "new_state": "new"},
        "lapse": {"trigger": "time", "enabled_states": ["new"], "timeout_seconds": 2, "new_state": "late"},
    },
}


async def seed_timers(url: str, count: int) -> None:
    db = Database(url)
    try:
        async with db.transaction() as s:
            await engine.sync_spec_files(s, workflows.BUILTIN_DIR)
            user = await identity.create_user(s, actor=None, login="root", password="password123", admin=True)
            owner = await identity.actor_for(s, user_id=user.id, login=user.login, is_admin=True)
            await engine.define_workflow(s, actor=None, spec=SPEC)
            project = await engine.create_project(s, actor=owner, display_name="P")
            sub = await engine.create_subproject(
                s, actor=owner, project_id=project.id, display_name="S", currency="EUR", workflow="lapse"
            )
        for start in range(0, count, 100):  # timers due together, two seconds from now
            async with db.transaction() as s:
                for i in range(start, min(start + 100, count)):
                    await engine.create_workflow_item(s, actor=owner, subproject_id=sub.id, display_name=f"T{i}")
    finally:
        await db.dispose()


async def fired_per_timer(url: str) -> Counter[str]:
    db = Database(url)
    try:
        async with db.read_session() as s:
            rows = await s.scalars(select(Activity.data).where(Activity.action == "lapse"))
            return Counter(data["timer"]["enabledActionId"] for data in rows)
    finally:
        await db.dispose()


async def wait_for(url: str, condition, *, within: float) -> Counter[str]:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + within
    while True:
        fired = await fired_per_timer(url)
        if condition(fired) or time.monotonic() > deadline:
            return fired
        await asyncio.sleep(0.05)


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
