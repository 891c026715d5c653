"""200 distinct hostile documents keep a real server process's memory flat (issue 47, finding 1:
each left ~21 MB behind, 130 MB grew to 1.55 GB): the refused ones are not kept parsed, and
validation's work is bounded. Measured as the growth of VmRSS (/proc/<pid>/status)."""

import httpx
import pytest

from bench.abuse import rss_mb
from bench.abusive import hostile
from tests.fixtures.live import LiveServer

LIMIT_MB = 50  # the bound on growth after 200 distinct hostile documents

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture
def server(database):
    started = LiveServer(database.url)
    yield started
    started.stop()


async def test_two_hundred_distinct_hostile_documents_keep_the_rss_flat(server):
    pid = server.process.pid
    async with httpx.AsyncClient(base_url=server.http, timeout=30) as client:
        for n in range(4):  # the code paths, once
            await client.post("/graphql", json={"query": hostile(1000 + n)})
        before = rss_mb(pid)
        for n in range(200):
            body = (await client.post("/graphql", json={"query": hostile(n)})).json()
            code = body["errors"][0]["extensions"]["code"]
            assert code == ("TOO_MANY_REPEATED_FIELDS" if n % 2 == 0 else "QUERY_TOO_COMPLEX"), body
        after = rss_mb(pid)
        answered = (await client.post("/graphql", json={"query": "{ __typename }"})).json()
    assert answered["data"] == {"__typename": "Query"}
    assert after - before < LIMIT_MB, (before, after)
