"""Jobs survive a crash, and servers share them (PostgreSQL): a `caseway serve` killed with
SIGKILL while the receiver holds a delivery open, started again, delivers every job, the
interrupted one again with the same Idempotency-Key; two servers on one database deliver 2,000
jobs, each exactly once, each case's in order."""

import asyncio
import json
import time
from collections.abc import Callable

import pytest
from sqlalchemy import func, select

from bench.server import Server, drop_postgres, fresh_postgres
from engine.jobs import webhook
from models import Database, Job
from server.migrate import upgrade
from tests.fixtures.database import BACKEND
from tests.fixtures.jobs import seed_jobs
from tests.fixtures.receiver import SECRET, Receiver

pytestmark = pytest.mark.skipif(BACKEND != "postgres", reason="several server processes need PostgreSQL")


@pytest.fixture
async def database_url():  # type: ignore[no-untyped-def]
    url, name = await fresh_postgres("jobs_crash")
    await asyncio.to_thread(upgrade, url)
    yield url
    await drop_postgres(name)
    webhook.configure({})


async def job_states(url: str) -> dict[str, int]:
    db = Database(url)
    try:
        async with db.read_session() as s:
            return dict((await s.execute(select(Job.state, func.count()).group_by(Job.state))).all())  # type: ignore[arg-type]
    finally:
        await db.dispose()


async def all_completed(url: str, count: int, *, within: float = 10.0) -> None:
    """Until all ``count`` jobs are COMPLETED; fails naming the states it last saw (it used to
    return silently when time ran out)."""
    deadline = time.monotonic() + within
    while (states := await job_states(url)) != {"COMPLETED": count}:
        assert time.monotonic() < deadline, f"after {within} s the jobs are {states}, not all COMPLETED"
        await asyncio.sleep(0.05)


async def until(condition: Callable[[], bool], *, within: float) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


def env_for(receiver: Receiver, timeout: float) -> dict[str, str]:
    return {
        "CASEWAY_WEBHOOKS": json.dumps({"billing": {"url": receiver.url, "secret": SECRET, "timeout": timeout}}),
        "CASEWAY_JOB_POLL_INTERVAL": "1",
    }


async def test_a_server_killed_mid_delivery_delivers_every_job_after_a_restart(database_url, receiver: Receiver):
    keys = await seed_jobs(database_url, receiver.url, cases=10, per_case=2)
    held: list[str] = []

    def answer(delivery):  # type: ignore[no-untyped-def]
        if not held:  # the first delivery is held open until the server dies
            held.append(delivery.key)
            return "hang"
        return None

    receiver.per_request = answer
    first = await asyncio.to_thread(Server, database_url, env=env_for(receiver, timeout=3))
    try:
        await until(lambda: bool(held) and len(receiver.keys_ok()) >= 5, within=30)
    finally:
        first.process.kill()  # SIGKILL while the receiver holds a delivery open
        first.process.wait(10)
    receiver.released.set()  # the held request ends; its server is gone, so is the answer
    assert await job_states(database_url) != {"COMPLETED": len(keys)}  # the held job is unfinished

    second = await asyncio.to_thread(Server, database_url, env=env_for(receiver, timeout=3))
    try:  # the held job's lease (timeout + 5 s) ends, it is reconciled and delivered again
        await until(lambda: set(receiver.keys_ok()) == set(keys), within=60)
        await all_completed(database_url, len(keys))  # the last outcome commits just after its delivery
    finally:
        second.stop()
    assert await job_states(database_url) == {"COMPLETED": len(keys)}
    assert set(receiver.keys_ok()) == set(keys)  # none lost; the receiver counts each key once
    redelivered = [d for d in receiver.deliveries if d.key == held[0]]
    assert [d.status for d in redelivered] == ["hang", 200]  # the same Idempotency-Key, delivered again
    assert all(d.signed for d in receiver.deliveries)


async def test_two_servers_share_two_thousand_jobs_each_delivered_once(database_url, receiver: Receiver):
    keys = await seed_jobs(database_url, receiver.url, cases=200, per_case=10)
    assert len(keys) == 2000
    servers = await asyncio.gather(
        *(asyncio.to_thread(Server, database_url, env=env_for(receiver, timeout=10)) for _ in range(2))
    )
    try:
        await until(lambda: len(receiver.deliveries) >= len(keys), within=180)
        await all_completed(database_url, len(keys))
    finally:
        for server in servers:
            server.stop()
    delivered = receiver.keys_ok()
    assert set(delivered) == set(keys) and set(delivered.values()) == {1}
    assert len(receiver.deliveries) == len(keys)
    by_case: dict[str, list[int]] = {}
    for d in receiver.deliveries:
        by_case.setdefault(d.entry["caseId"], []).append(d.entry["seq"])
    assert all(seqs == sorted(seqs) for seqs in by_case.values())  # each case in order
    assert max(receiver.most_in_flight[case] for case in by_case) == 1
    assert await job_states(database_url) == {"COMPLETED": len(keys)}
