"""Bench W1r (bench/fields.py) must measure what it says: each of its requests sets all ten
fields of a case to new values and takes one of the two routes, half each, beside W1's requests
on the same server; its section reports both and the difference against the budget. Run at a
tiny size with a driver that sends every body once (the report's runs use wrk)."""

import asyncio
import time

import httpx
import pytest
from sqlalchemy import select

from bench import fields, wrk
from bench.server import drop_postgres, fresh_postgres
from models import Activity, Case, CaseState, Database
from tests.fixtures.database import BACKEND


def _driver(answers: list[dict]):
    def send(url, bodies, *, token, connections, seconds):
        began = time.monotonic()
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
            for body in bodies:
                answers.append(client.post("/graphql", json=body).json())
        return wrk.WrkResult(len(bodies) / (time.monotonic() - began), 0.0, 0.0, 0, len(bodies))

    return send


@pytest.mark.skipif(BACKEND != "postgres", reason="W1r runs beside W1, on PostgreSQL")
async def test_w1r_at_a_tiny_size_sets_ten_fields_routes_both_ways_and_reports_beside_w1():
    url, name = await fresh_postgres("caseway_w1r_test")
    answers: list[dict] = []
    try:
        prepared = await fields.prepare(url, items=2, w1_size=(1, 1, 2))
        found = await asyncio.to_thread(
            fields.measure,
            url,
            prepared,
            seconds=1,
            rounds=1,
            workers=1,
            connections=1,
            warm_seconds=1,
            driver=_driver(answers),
        )
        db = Database(url)
        try:
            async with db.read_session() as s:
                updates = (
                    await s.execute(
                        select(Activity.workflow_item_id, Activity.data)
                        .where(Activity.action == "update")
                        .order_by(Activity.seq)
                    )
                ).all()
                states = (
                    await s.execute(
                        select(Case.object_id, CaseState.state).join(CaseState, CaseState.case_id == Case.id)
                    )
                ).all()
        finally:
            await db.dispose()
    finally:
        await drop_postgres(name)

    # W1's comments and W1r's updates, warmed then measured: every one answered without an error
    assert len(answers) == 2 * (len(prepared.w1) + len(prepared.w1r))
    assert all(a["data"]["executeAction"]["userErrors"] == [] for a in answers), answers
    assert {body["variables"]["item"] for body in prepared.w1}.isdisjoint(prepared.items)
    # each of the two cases updated four times, alternating: ten changes each, route 1 then route 2
    for item in prepared.items:
        mine = [data for logged, data in updates if logged == item]
        assert [data["route"] for data in mine] == [1, 2, 1, 2]
        assert [len(data["fields"]) for data in mine] == [10, 10, 10, 10]
    assert {state for item, state in states if item in prepared.items} == {"open"}  # the last values: under the bound
    assert len(found.w1) == len(found.w1r) == 1 and found.errors == 0
    assert found.w1[0].server_ms > 0 and found.w1r[0].server_ms > 0
    lines = fields.section(found, items=2, workers=1, connections=1)
    assert lines[0] == fields.BEGIN and lines[-1] == fields.END
    rows = {line.split(" | ")[0]: line for line in lines if line.startswith("| W1")}
    assert set(rows) == {"| W1", "| W1r"}
    verdict = next(line for line in lines if line.startswith("W1r - W1"))
    difference = found.w1r[0].server_ms - found.w1[0].server_ms
    assert f"**{difference:.2f} ms**" in verdict
    assert verdict.endswith("ok") == (difference <= fields.BUDGET_MS)
