"""W0, the stack's floor in the benchmark report (bench/floor.py), must do W1's work: answer
W1's exact request with the case's new version, having written what W2 writes."""

import httpx
import pytest
from sqlalchemy import func, select

from bench import floor, queries, seed
from models import Activity, Case, EnabledAction
from tests.fixtures.database import BACKEND


async def _state(db, item_id: str) -> tuple[int, int, list[str]]:
    async with db.session() as s:
        case = await s.scalar(select(Case).where(Case.object_id == item_id))
        entries = await s.scalar(select(func.count()).select_from(Activity).where(Activity.workflow_item_id == item_id))
        comments = await s.scalars(
            select(EnabledAction.status).where(EnabledAction.case_id == case.id, EnabledAction.action == "comment")
        )
        return case.version, entries, sorted(comments)


@pytest.mark.skipif(BACKEND != "postgres", reason="W0 runs W2's PostgreSQL transaction")
async def test_the_floor_answers_w1s_request_and_moves_the_case(db, monkeypatch):
    await seed.seed(db.url, 1, 1, 2)
    data = await seed.driver_data(db.url)
    body = queries.bodies(data)["W1"][0]
    item_id = body["variables"]["item"]
    monkeypatch.setenv("CASEWAY_DATABASE_URL", db.url.replace("postgresql+asyncpg://", "postgresql://"))
    monkeypatch.setenv("CASEWAY_FLOOR_ACTOR", data["owner"])
    version, entries, comments = await _state(db, item_id)

    transport = httpx.ASGITransport(app=floor.app)
    async with floor.app.router.lifespan_context(floor.app), httpx.AsyncClient(transport=transport) as client:
        response = await client.post("http://floor/graphql", json=body)

    assert response.json() == {"data": {"executeAction": {"case": {"version": version + 1}, "userErrors": []}}}
    assert await _state(db, item_id) == (version + 1, entries + 1, sorted([*comments, "COMPLETED"]))
