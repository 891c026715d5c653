"""Reads on a streaming replica with read-your-writes (CASEWAY_DATABASE_REPLICA_URLS), against a
real primary and replica of the test's own (scripts/replica_pair.py) whose replica applies every
commit ten seconds late: what it has not replayed, it cannot show, so each assertion below
tells which server answered.
"""

import asyncio
import os
import time

import asyncpg
import httpx
import pytest

from engine.people import identity
from models import Database
from scripts.replica_pair import bin_dir, running_pair
from tests.fixtures.builders import caseway
from tests.fixtures.database import BACKEND, create_test_user
from tests.fixtures.documents import CREATE_PROJECT
from tests.fixtures.live import LiveServer

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(BACKEND != "postgres", reason="replicas are PostgreSQL's"),
    pytest.mark.skipif(bin_dir() is None, reason="PostgreSQL's server binaries are not installed"),
]

APPLY_DELAY_MS = 10_000
PROJECT_NAMES = """query { projects(first: 100) { edges { node { displayName } } } }"""
HEADER = "Caseway-Read-After"


async def _replayed_all(pair) -> None:
    """Until the replica has replayed everything the primary wrote so far."""
    # The positions are the cluster's: asked in its own database, which the replica has even
    # before it has replayed the CREATE DATABASE of the test's own.
    primary = await asyncpg.connect(pair.primary_url())
    replica = await asyncpg.connect(pair.replica_url())
    try:
        target = await primary.fetchval("SELECT pg_current_wal_insert_lsn()")
        deadline = time.monotonic() + APPLY_DELAY_MS / 1000 + 20
        while await replica.fetchval("SELECT pg_last_wal_replay_lsn() < $1", target):
            assert time.monotonic() < deadline, "the replica did not catch up"
            await asyncio.sleep(0.1)
    finally:
        await primary.close()
        await replica.close()


async def _project_scans_on(url: str) -> int:
    """Scans of the project table the replica (or primary) at ``url`` has counted."""
    conn = await asyncpg.connect(url)
    try:
        return await conn.fetchval(
            "SELECT coalesce(seq_scan, 0) + coalesce(idx_scan, 0) FROM pg_stat_user_tables WHERE relname = 'project'"
        )
    finally:
        await conn.close()


async def _replica_is_up(server: LiveServer, name: str) -> None:
    """Until the server's replica monitor has found the replica (it checks five times a second)."""
    deadline = time.monotonic() + 20
    async with httpx.AsyncClient(base_url=server.http, timeout=30) as client:
        while (await client.get("/ready")).json()["checks"]["replicas"][name]["state"] != "up":
            assert time.monotonic() < deadline, "the replica was not found"
            await asyncio.sleep(0.05)


async def _lag_over(server: LiveServer, name: str, ms: float) -> None:
    """Until the server measures the replica more than ``ms`` behind (the replica applies each
    commit ten seconds late, so this comes true a moment after a write)."""
    deadline = time.monotonic() + 20
    async with httpx.AsyncClient(base_url=server.http, timeout=30) as client:
        while ((await client.get("/ready")).json()["checks"]["replicas"][name]["lag_ms"] or 0) <= ms:
            assert time.monotonic() < deadline, "the replica's lag was never measured"
            await asyncio.sleep(0.05)


async def _names(server: LiveServer, token: str, **headers: str) -> list[str]:
    async with httpx.AsyncClient(base_url=server.http, timeout=30) as client:
        response = await client.post(
            "/graphql", json={"query": PROJECT_NAMES}, headers={"Authorization": f"Bearer {token}", **headers}
        )
    body = response.json()
    assert response.status_code == 200 and not body.get("errors"), body
    return [e["node"]["displayName"] for e in body["data"]["projects"]["edges"]]


async def _create(server: LiveServer, token: str, name: str) -> str:
    """Creates a project; returns the position the answer says the next reads must see."""
    async with httpx.AsyncClient(base_url=server.http, timeout=30) as client:
        response = await client.post(
            "/graphql",
            json={"query": CREATE_PROJECT, "variables": {"input": {"displayName": name}}},
            headers={"Authorization": f"Bearer {token}"},
        )
    assert response.json()["data"]["createProject"]["userErrors"] == []
    return response.headers[HEADER]


async def test_reads_go_to_the_replica_unless_it_has_not_replayed_the_readers_write(tmp_path):
    with running_pair(apply_delay_ms=APPLY_DELAY_MS) as pair:
        admin = await asyncpg.connect(pair.primary_url())
        await admin.execute("CREATE DATABASE caseway")
        await admin.close()
        primary_url = pair.primary_url("caseway")
        migrated = caseway("migrate", env={**os.environ, "CASEWAY_DATABASE_URL": primary_url})
        assert migrated.returncode == 0, migrated.stderr
        db = Database(primary_url)
        async with db.transaction() as s:
            tokens = {}
            for login in ("ada", "bea", "cid"):
                user = await create_test_user(s, login=login, admin=True)
                tokens[login] = await identity.create_token(s, user_id=user.id, ttl_seconds=3600)
        await db.dispose()
        await _replayed_all(pair)

        replicated = {"database_replica_urls": pair.replica_url("caseway"), "replica_max_lag_ms": "600000"}
        first, second = (LiveServer(primary_url, wait=False, **replicated) for _ in range(2))
        # A third server that reads from the replica only while it is less than a second behind.
        strict = LiveServer(primary_url, wait=False, database_replica_urls=pair.replica_url("caseway"))
        try:
            name = f"127.0.0.1:{pair.replica_port}/caseway"
            for server in (first, second, strict):
                server.wait_until_healthy()
                await _replica_is_up(server, name)
            replica_url = pair.replica_url("caseway")

            # No write yet: the replica answers (its own statistics count the scan).
            before = await _project_scans_on(replica_url)
            assert await _names(first, tokens["ada"]) == []
            deadline = time.monotonic() + 10
            while await _project_scans_on(replica_url) == before:  # statistics are flushed within a second
                assert time.monotonic() < deadline, "the replica served no read"
                await asyncio.sleep(0.1)

            # Ada writes through the first server and reads at once through it: the primary answers
            # (the replica shows nothing for ten seconds).
            position = await _create(first, tokens["ada"], "Written by Ada")
            assert await _names(first, tokens["ada"]) == ["Written by Ada"]
            # Another process knows nothing of Ada's write, unless her client sends its position.
            assert await _names(second, tokens["ada"]) == []  # the replica, ten seconds behind
            assert await _names(second, tokens["ada"], **{HEADER: position}) == ["Written by Ada"]

            # The other order: Bea writes through the second server, reads through the first.
            position = await _create(second, tokens["bea"], "Written by Bea")
            assert await _names(second, tokens["bea"]) == ["Written by Ada", "Written by Bea"]
            assert await _names(first, tokens["bea"], **{HEADER: position}) == ["Written by Ada", "Written by Bea"]
            # A position that is not one is no reason to refuse: the primary answers.
            assert await _names(first, tokens["cid"], **{HEADER: "yesterday"}) == ["Written by Ada", "Written by Bea"]

            # Cid wrote nothing, but the replica is more than a second behind: the strict server
            # (1 s at most) reads the primary, the lenient one the replica.
            await _lag_over(strict, name, 1000)
            assert await _names(strict, tokens["cid"]) == ["Written by Ada", "Written by Bea"]
            assert "Written by Bea" not in await _names(first, tokens["cid"])

            async with httpx.AsyncClient(base_url=first.http, timeout=30) as client:
                ready = (await client.get("/ready")).json()
                metrics = (await client.get("/metrics")).text
            assert ready["status"] == "ready"
            assert ready["checks"]["replicas"][name]["state"] == "up"
            assert f'caseway_replica_up{{replica="{name}"}} 1.0' in metrics

            # The replica stops: every read still answers, from the primary.
            await _replayed_all(pair)
            pair.stop_replica()
            for server in (first, second):
                assert await _names(server, tokens["cid"]) == ["Written by Ada", "Written by Bea"]
            async with httpx.AsyncClient(base_url=first.http, timeout=30) as client:
                deadline = time.monotonic() + 10
                while (await client.get("/ready")).json()["checks"]["replicas"][name]["state"] != "down":
                    assert time.monotonic() < deadline, "the replica was not reported down"
                    await asyncio.sleep(0.1)
                assert (await client.get("/ready")).status_code == 200  # the primary serves: ready
        finally:
            for server in (first, second, strict):
                server.stop()
