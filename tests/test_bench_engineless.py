"""W1e, the ceiling of any engine in the benchmark report (bench/engineless.py), must be W1's
request through Caseway's server: authenticated, in the mutation's transaction, answered with
the case's new version, having written what W2 writes and nothing through the engine."""

import httpx
import pytest
from sqlalchemy import select

import engine
from bench import engineless
from models import Activity
from server.settings import Settings
from tests.fixtures.bench import case_state, w1_request
from tests.fixtures.database import BACKEND


@pytest.mark.skipif(BACKEND != "postgres", reason="W1e runs W2's PostgreSQL transaction")
async def test_the_ceiling_answers_w1s_request_through_caseways_server(db, monkeypatch):
    w1 = await w1_request(db)
    monkeypatch.setattr(engine, "execute", engine.execute)  # put back after the test
    app = engineless.create(Settings(database_url=db.url), db=db)
    version, entries, comments = await case_state(db, w1.item_id)

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://w1e") as client:
        anonymous = await client.post("/graphql", json=w1.body)
        headers = {"Authorization": f"Bearer {w1.data['token']}"}
        response = await client.post("/graphql", json=w1.body, headers=headers)

    assert anonymous.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert response.json()["data"] == {"executeAction": {"case": {"version": version + 1}, "userErrors": []}}
    # W2's writes: the comment instance completed and enabled again, one log entry more.
    assert await case_state(db, w1.item_id) == (version + 1, entries + 1, sorted([*comments, "COMPLETED"]))
    async with db.session() as s:
        newest = await s.scalar(
            select(Activity).where(Activity.workflow_item_id == w1.item_id).order_by(Activity.seq.desc()).limit(1)
        )
    assert newest.data == {}, "the engine logs the state change; W2's entry has no data"
