"""W0, the stack's floor in the benchmark report (bench/floor.py), must do W1's work: answer
W1's exact request with the case's new version, having written what W2 writes."""

import httpx
import pytest

from bench import floor
from tests.fixtures.bench import case_state, w1_request
from tests.fixtures.database import BACKEND


@pytest.mark.skipif(BACKEND != "postgres", reason="W0 runs W2's PostgreSQL transaction")
async def test_the_floor_answers_w1s_request_and_moves_the_case(db, monkeypatch):
    w1 = await w1_request(db)
    monkeypatch.setenv("CASEWAY_DATABASE_URL", db.url.replace("postgresql+asyncpg://", "postgresql://"))
    monkeypatch.setenv("CASEWAY_FLOOR_ACTOR", w1.data["owner"])
    version, entries, comments = await case_state(db, w1.item_id)

    transport = httpx.ASGITransport(app=floor.app)
    async with floor.app.router.lifespan_context(floor.app), httpx.AsyncClient(transport=transport) as client:
        response = await client.post("http://floor/graphql", json=w1.body)

    assert response.json() == {"data": {"executeAction": {"case": {"version": version + 1}, "userErrors": []}}}
    assert await case_state(db, w1.item_id) == (version + 1, entries + 1, sorted([*comments, "COMPLETED"]))
