"""Bench R4i: R4's page (20 items of a 20,000-item subproject, with its totalCount) read by a
viewer whose view reaches down from the project (one grant, ``inherit: true``), beside R4's own
viewer, who holds a grant on every item; in-process, one client, no load.

    python -m bench.pages_inherited [--rounds 7] [--report PATH | --no-report]

On a database of its own (dropped afterwards): the `wide` data bulk-seeded as R4's, vacuumed
and analyzed, and a user granted ``project.view`` on its project reaching down. Each page (the
first and the middle one, R4's two bodies) is read through the whole ASGI app, as bench/pages.py
reads R5's; its one statement is then asked again under ``EXPLAIN (ANALYZE, TIMING OFF)`` with
the same parameters (per-node timing would cost more than the statement does): PostgreSQL's own
time for it (planning and execution), the number the goal is about
(issue 45: at most 5 ms for the inherited viewer, its totalCount without a check per item). A
page's numbers are the medians of ``--rounds`` reads. Light on the machine: one connection at a
time, a few seconds of work after the seed.
"""

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from sqlalchemy import event, select

from bench import queries, sections, seed
from bench.server import drop_postgres, fresh_postgres, vacuum_analyze
from engine.people import identity
from models import Database, Permission, Project
from server.app import create_app
from server.settings import Settings

BEGIN, END = "<!-- R4i -->", "<!-- /R4i -->"
GOAL_MS = 5.0
EXPLAIN = "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON)"


async def _team_token(url: str) -> str:
    """A user whose view of the wide project reaches down: one grant row, nothing per item."""
    db = Database(url)
    async with db.transaction() as s:
        team = await identity.create_user(s, actor=None, login="bench-team", password=seed.PASSWORD)
        project = await s.scalar(select(Project.id).limit(1))
        s.add(Permission(resource_id=project, intent="project.view", party_id=team.id, inherit=True))
        await s.flush()
        token = await identity.create_token(s, user_id=team.id, ttl_seconds=3600)
    await db.dispose()
    return token


async def _page(
    client: httpx.AsyncClient, db: Database, conn: asyncpg.Connection, body: dict, token: str
) -> tuple[float, float, int]:
    """(request ms, PostgreSQL ms of its statement, totalCount) of one read."""
    seen: list[tuple[str, Any]] = []

    def on_execute(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        seen.append((statement, parameters))

    event.listen(db.engine.sync_engine, "before_cursor_execute", on_execute)
    started = time.perf_counter()
    response = await client.post("/graphql", json=body, headers={"Authorization": f"Bearer {token}"})
    elapsed = (time.perf_counter() - started) * 1000
    event.remove(db.engine.sync_engine, "before_cursor_execute", on_execute)
    answer = response.json()
    assert not answer.get("errors"), answer
    # compiled: one statement (besides a token lookup, when the actor cache has let it go)
    pages = [(s, p) for s, p in seen if s.startswith("SELECT json_build_object")]
    assert len(pages) == 1, [s[:80] for s, _ in seen]
    statement, parameters = pages[0]
    plan = json.loads(await conn.fetchval(f"{EXPLAIN} {statement}", *parameters))[0]
    total = answer["data"]["node"]["workflowItems"]["totalCount"]
    return elapsed, plan["Planning Time"] + plan["Execution Time"], total


async def measure(url: str, rounds: int) -> list[dict[str, Any]]:
    data = await seed.driver_data(url)
    bodies = queries.bodies(data)["R4"]
    viewers = {"a grant per item (R4)": data["token"], "view reaching down from the project": await _team_token(url)}
    dsn = url.replace("postgresql+asyncpg://", "postgresql://")
    db = Database(url)
    app = create_app(Settings(database_url=url), db=db)
    rows = []
    # One connection for every EXPLAIN, warm as the server's pooled ones are (a new backend
    # plans with cold catalog caches), JIT off as theirs is (models/db.py).
    conn = await asyncpg.connect(dsn, server_settings={"jit": "off"})
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench") as client:
        for viewer, token in viewers.items():
            for body, page in zip(bodies, ("first", "middle"), strict=True):
                for _ in range(2):  # warm: the token, the plan's statement, PostgreSQL's caches
                    await _page(client, db, conn, body, token)
                reads = [await _page(client, db, conn, body, token) for _ in range(rounds)]
                rows.append(
                    {
                        "viewer": viewer,
                        "page": page,
                        "request_ms": statistics.median(r[0] for r in reads),
                        "postgres_ms": statistics.median(r[1] for r in reads),
                        "total": reads[0][2],
                    }
                )
    await conn.close()
    await db.dispose()
    return rows


def report_lines(rows: list[dict[str, Any]], rounds: int) -> list[str]:
    inherited = [r for r in rows if "reaching" in r["viewer"]]
    worst = max(r["postgres_ms"] for r in inherited)
    verdict = "met" if worst <= GOAL_MS else "missed"
    lines = [
        BEGIN,
        "",
        f"## R4i: R4's page for a viewer whose view is inherited (commit {sections.commit()})",
        "",
        "bench/pages_inherited.py: the `wide` data (one subproject of 20,000 items, bulk-seeded,",
        "vacuumed), R4's document (20 items with `totalCount`), in-process, one client; PostgreSQL's",
        "time is its one statement's planning and execution under `EXPLAIN (ANALYZE, TIMING OFF)`;",
        f"medians of {rounds}.",
        "",
        "| viewer | page | totalCount | request ms | PostgreSQL ms |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['viewer']} | {r['page']} | {r['total']:,} | {r['request_ms']:.1f} | {r['postgres_ms']:.2f} |"
        )
    lines += [
        "",
        f"Goal (issue 45): at most {GOAL_MS:g} ms of PostgreSQL time per page for the inherited viewer: "
        f"**{verdict}** ({worst:.2f} ms at most).",
        "",
        END,
    ]
    return lines


async def main_async(args: argparse.Namespace) -> None:
    url, name = await fresh_postgres("caseway_bench_r4i")
    try:
        await seed.seed(url, *seed.SIZES["wide"], bulk=True)
        await vacuum_analyze(url)
        rows = await measure(url, args.rounds)
    finally:
        await drop_postgres(name)
    lines = report_lines(rows, args.rounds)
    print("\n".join(lines))
    if not args.no_report:
        sections.replace(args.report, lines, begin=BEGIN, end=END)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--report", type=Path, default=sections.REPORT)
    parser.add_argument("--no-report", action="store_true")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
