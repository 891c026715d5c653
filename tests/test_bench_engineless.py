"""W1e, the ceiling of any engine in the benchmark report (bench/engineless.py), must be W1's
request through Caseway's server: authenticated, in the mutation's transaction, answered with
the case's new version, having written what W2 writes and nothing through the engine."""

import asyncio

import httpx
import pytest
from sqlalchemy import select

from bench import engineless
from engine import cases
from models import Activity
from server.settings import Settings
from tests.fixtures.bench import case_state, w1_request
from tests.fixtures.database import BACKEND


@pytest.mark.skipif(BACKEND != "postgres", reason="W1e runs W2's PostgreSQL transaction")
async def test_the_ceiling_answers_w1s_request_through_caseways_server(db, monkeypatch):
    w1 = await w1_request(db)
    monkeypatch.setattr(cases, "execute", cases.execute)  # put back after the test
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


@pytest.mark.skipif(BACKEND != "postgres", reason="W1e runs W2's PostgreSQL transaction")
async def test_concurrent_requests_on_one_case_run_one_after_another(db, monkeypatch):
    """W2's statements run in the mutation's transaction, so the case's lock holds until it
    commits: ten requests at once on one case (the `small` data has 200 cases for 32 clients)
    each complete the one enabled comment instance and enable the next. When the statements ran
    outside it, two completed the same instance (two left enabled), or one found none."""
    w1 = await w1_request(db)
    monkeypatch.setattr(cases, "execute", cases.execute)
    app = engineless.create(Settings(database_url=db.url), db=db)
    version, entries, comments = await case_state(db, w1.item_id)
    headers = {"Authorization": f"Bearer {w1.data['token']}"}

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://w1e") as client:
        answers = await asyncio.gather(*(client.post("/graphql", json=w1.body, headers=headers) for _ in range(10)))

    versions = sorted(a.json()["data"]["executeAction"]["case"]["version"] for a in answers)
    assert versions == list(range(version + 1, version + 11))
    version_after, entries_after, comments_after = await case_state(db, w1.item_id)
    assert (version_after, entries_after) == (version + 10, entries + 10)
    assert (
        comments_after.count("ENABLED") == 1 and comments_after.count("COMPLETED") == comments.count("COMPLETED") + 10
    )
