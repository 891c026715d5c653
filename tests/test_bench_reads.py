"""Bench R1f (bench/read_floor.py) must be R1 itself, written as one SQL statement: the same
answer as Caseway's R1 (planner on and off), hiding what Caseway hides; and R1s
(bench/sqlite_reads.py) must report both settings and their ratio."""

import httpx
import pytest
from sqlalchemy import text

from bench import queries, read_floor, seed, sqlite_reads
from models import Database
from server.app import create_app
from server.settings import Settings
from tests.fixtures.database import BACKEND


async def _caseway_r1(db: Database, data: dict, *, compiled: bool) -> dict:
    twin = Database(db.url)
    app = create_app(Settings(database_url=db.url, compiled_reads=compiled), db=twin)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://r1") as client:
            body = queries.bodies(data)["R1"][0]
            response = await client.post("/graphql", json=body, headers={"Authorization": f"Bearer {data['token']}"})
    finally:
        await twin.dispose()
    assert "errors" not in response.json(), response.json()
    return response.json()["data"]


@pytest.mark.skipif(BACKEND != "postgres", reason="R1f is a PostgreSQL statement (json_build_object)")
async def test_r1f_answers_what_caseways_r1_answers_and_hides_what_it_hides(db):
    await seed.seed(db.url, 1, 2, 3)
    data = await seed.driver_data(db.url)
    project = data["projects"][0]

    floor = await read_floor.answer(db.url, project)
    assert floor == await _caseway_r1(db, data, compiled=True) == await _caseway_r1(db, data, compiled=False)
    subprojects = floor["node"]["subprojects"]["edges"]
    assert [len(s["node"]["workflowItems"]["edges"]) for s in subprojects] == [3, 3]
    case = subprojects[0]["node"]["workflowItems"]["edges"][0]["node"]["case"]
    assert case["state"] and case["enabledActions"] and case["roles"][0]["assignees"]

    # The bench user loses its grant on one item and its roles in that item's case: hidden.
    hidden = subprojects[0]["node"]["workflowItems"]["edges"][0]["node"]["id"]
    async with db.transaction() as s:
        await s.execute(
            text("DELETE FROM permission WHERE resource_id = :i AND party_id = :u"), {"i": hidden, "u": data["owner"]}
        )
        await s.execute(
            text(
                "DELETE FROM case_role_party WHERE party_id = :u"
                " AND case_id IN (SELECT id FROM workflow_case WHERE object_id = :i)"
            ),
            {"i": hidden, "u": data["owner"]},
        )
    floor = await read_floor.answer(db.url, project)
    assert floor == await _caseway_r1(db, data, compiled=False)
    ids = [e["node"]["id"] for s in floor["node"]["subprojects"]["edges"] for e in s["node"]["workflowItems"]["edges"]]
    assert hidden not in ids and len(ids) == 5

    driven = await read_floor.run(db.url, project, clients=2, seconds=0.3)
    assert driven["statements"] > 0 and driven["sps"] > 0 and driven["p50_ms"] <= driven["p99_ms"]


def test_r1s_rows_give_each_setting_its_median_round_and_the_ratio():
    with_planner, without = sqlite_reads.SETTINGS
    rounds = [sqlite_reads.Round(with_planner, rate, 10.0, 20.0, 30.0, 0) for rate in (40.0, 60.0, 50.0)] + [
        sqlite_reads.Round(without, rate, 10.0, 20.0, 45.0, 0) for rate in (20.0, 25.0, 30.0)
    ]
    lines = sqlite_reads.rows(rounds)
    assert len(lines) == 3
    assert with_planner in lines[0] and "median of 3: 40, 50, 60" in lines[0] and "| 50 |" in lines[0]
    assert without in lines[1] and "| 25 |" in lines[1] and "45.0 ms" in lines[1]
    assert lines[2] == "| R1s ratio | with the planner / without | 2.00 | | | |"


def test_r1s_rows_without_one_setting_give_no_ratio():
    with_planner, _ = sqlite_reads.SETTINGS
    lines = sqlite_reads.rows([sqlite_reads.Round(with_planner, 10.0, 1.0, 2.0, 3.0, 4)])
    assert len(lines) == 1 and "(4 errors)" in lines[0]
