"""Caseway behind PgBouncer in transaction pooling (Debian's 1.18, started by scripts/pgbouncer.py):
two server processes of two workers each share ten server connections under the W1 load
(executeAction from 32 clients at once) without an error, while the event hub's LISTEN and the
migrations take their own sessions through CASEWAY_DATABASE_DIRECT_URL.

The rest of the PostgreSQL half's writes, timers, jobs, subscriptions and migrations run through
a PgBouncer too: scripts/run_tests.py's third run (CASEWAY_TEST_PGBOUNCER=1, tests/fixtures/database.py).
"""

import asyncio
import os

import asyncpg
import httpx
import pytest

from bench import seed
from bench.queries import W1
from bench.server import Server
from scripts.pgbouncer import binary, running_pgbouncer
from tests.fixtures.builders import caseway
from tests.fixtures.database import BACKEND, own_database
from tests.fixtures.live import WsClient

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(BACKEND != "postgres", reason="PgBouncer pools PostgreSQL connections"),
    pytest.mark.skipif(
        binary() is None and not os.environ.get("CI"), reason="pgbouncer is not installed (apt-get install pgbouncer)"
    ),
]

SERVER_CONNECTIONS = 10
ACTIVITY = """subscription($i: ID) { activity(workflowItemId: $i) { kind comment } }"""
COMMENT_ON = """mutation($i: ID!, $c: String!) { executeAction(input: {workflowItemId: $i, action: "comment",
  comment: $c}) { userErrors { code } } }"""


async def _server_connections(direct: str, database: str) -> int:
    """Client backends PostgreSQL holds for ``database`` now, the hubs' LISTEN sessions aside."""
    conn = await asyncpg.connect(direct.rsplit("/", 1)[0] + "/postgres")
    try:
        return await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend' "
            "AND application_name <> 'caseway-hub'",
            database,
        )
    finally:
        await conn.close()


async def test_two_servers_of_two_workers_share_ten_server_connections_under_w1(tmp_path):
    with running_pgbouncer(pool_size=SERVER_CONNECTIONS) as bouncer:
        async with own_database("caseway_pgbouncer", tmp_path) as direct:
            name = direct.rsplit("/", 1)[1]
            pooled = bouncer.url(name)
            env = {"CASEWAY_DATABASE_URL": pooled, "CASEWAY_DATABASE_DIRECT_URL": direct}
            migrated = caseway("migrate", env={**os.environ, **env})
            assert migrated.returncode == 0, migrated.stderr
            await seed.seed(direct, 1, 2, 40)
            data = await seed.driver_data(direct)
            token, items = data["token"], data["items"]
            settings = {
                **env,
                "CASEWAY_DB_POOL_SIZE": "4",
                # The safety-net poll is a minute away: a live entry that arrives sooner came
                # through the hub's LISTEN, which PgBouncer could not carry.
                "CASEWAY_HUB_POLL_INTERVAL": "60",
            }
            servers = [Server(pooled, workers=2, env=settings, wait=False) for _ in range(2)]
            try:
                for server in servers:
                    server.wait_until_healthy()
                watched = items[0]
                watcher = await WsClient.connect(servers[0].url.replace("http", "ws") + "/graphql", token)
                # Live only (no `after` cursor, so no replay from the log): the entry awaited below
                # is written seconds later, after the whole load, through the other server.
                await watcher.subscribe(ACTIVITY, {"i": watched})

                peak = 0
                stop = asyncio.Event()

                async def watch_connections() -> None:
                    nonlocal peak
                    while not stop.is_set():
                        peak = max(peak, await _server_connections(direct, name))
                        await asyncio.sleep(0.05)

                async def client(n: int) -> list[tuple[int, dict]]:
                    answers = []
                    async with httpx.AsyncClient(base_url=servers[n % 2].url, timeout=60) as http:
                        for k in range(8):
                            item = items[(n * 8 + k) % len(items)]
                            response = await http.post(
                                "/graphql",
                                json={"query": W1, "variables": {"item": item}},
                                headers={"Authorization": f"Bearer {token}"},
                            )
                            answers.append((response.status_code, response.json()))
                    return answers

                watcher_task = asyncio.create_task(watch_connections())
                results = [a for batch in await asyncio.gather(*(client(n) for n in range(32))) for a in batch]
                stop.set()
                await watcher_task

                assert len(results) == 256
                failures = [body for status, body in results if status != 200 or body.get("errors")]
                assert failures == []
                assert all(body["data"]["executeAction"]["userErrors"] == [] for _, body in results)
                assert 0 < peak <= SERVER_CONNECTIONS

                conn = await asyncpg.connect(direct)
                try:
                    written = await conn.fetchval("SELECT count(*) FROM activity WHERE comment = 'bench'")
                finally:
                    await conn.close()
                assert written == 256  # every acknowledged write is there, once

                # Live across processes: written through the second server, heard by the first.
                async with httpx.AsyncClient(base_url=servers[1].url, timeout=30) as http:
                    response = await http.post(
                        "/graphql",
                        json={"query": COMMENT_ON, "variables": {"i": watched, "c": "through the hub"}},
                        headers={"Authorization": f"Bearer {token}"},
                    )
                assert response.json()["data"]["executeAction"]["userErrors"] == []
                received = await watcher.receive_until(
                    lambda m: m["type"] == "next" and m["payload"]["data"]["activity"]["comment"] == "through the hub",
                    within=20,
                )
                assert received[-1]["payload"]["data"]["activity"]["kind"] == "action_executed"
                await watcher.close()
            finally:
                for server in servers:
                    server.stop()
