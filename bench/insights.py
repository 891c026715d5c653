"""Bench I1: ``insights`` (engine/cases/insights.py) over one subproject and over a whole
workflow, on PostgreSQL, at the size of the bulk seed given (bench/bulk.py: `bug` items, one a
minute up to now; 1M items is `--size large`, R5's data).

The bulk seed leaves every case in its first state. So that the figures have something to
measure, ``moves`` gives seven cases in ten a stay in `open` of up to three days that ended by
`resolve`, then a stay in `resolved`, and half of those a `close` into `closed` (terminal; the
case COMPLETED); the log and `case_state` are left as they were (the bench reads visits and
case statuses, which is what insights reads for these figures; `actions` counts the log's).

Each figure is the median of ``--runs`` calls of the engine verb in one read session (the
resolver adds a read of the answer's fields only), for an admin and for a user who sees every
item through a grant each (`bench-dev`: the visibility check runs per case), with a window of
the last 400 days (the most allowed). ``python -m bench.insights --database-url postgresql://…``
on a database seeded by ``python -m bench.seed --bulk`` (it adds the moves once).
``--explain`` prints PostgreSQL's EXPLAIN (ANALYZE, BUFFERS) of the figures' statement, as the
engine sends it, for each (who, over what): what the statement reads.
"""

import argparse
import asyncio
import dataclasses
import statistics
import time
from datetime import timedelta
from typing import Any

import asyncpg
from sqlalchemy import event, select

from bench.pages_seed import asyncpg_dsn
from bench.sections import REPORT, commit, replace
from engine.cases import insights
from engine.people import identity
from models import Database, Subproject, Workflow, utcnow

BEGIN, END = "<!-- I1 -->", "<!-- /I1 -->"
TARGETS = {"subproject": 50.0, "workflow": 500.0}  # ms (issue 49: at 1M cases on PostgreSQL)

# Pseudo-random per case from its id: the same data on every run.
_R = "(('x' || substr(md5(c.id || '{salt}'), 1, 7))::bit(28)::int)"
MOVES = [
    f"""UPDATE state_visit v SET left_at = v.entered_at + make_interval(secs => {_R.format(salt="a")} % 259200),
        left_action = 'resolve', left_reason = 'ACTION'
      FROM workflow_case c WHERE c.id = v.case_id AND v.state = 'open' AND v.left_at IS NULL
        AND {_R.format(salt="m")} % 10 < 7""",
    """INSERT INTO state_visit (id, case_id, subproject_id, scope, scope_action, state, workflow_id, entered_at,
        entered_action, suspended_seconds)
      SELECT 'vis_r' || v.id, v.case_id, v.subproject_id, '', NULL, 'resolved', v.workflow_id, v.left_at, 'resolve', 0
      FROM state_visit v WHERE v.state = 'open' AND v.left_action = 'resolve'""",
    f"""UPDATE state_visit v SET left_at = v.entered_at + make_interval(secs => {_R.format(salt="b")} % 172800),
        left_action = 'close', left_reason = 'ACTION'
      FROM workflow_case c WHERE c.id = v.case_id AND v.state = 'resolved' AND v.left_at IS NULL
        AND {_R.format(salt="c")} % 2 = 0""",
    """INSERT INTO state_visit (id, case_id, subproject_id, scope, scope_action, state, workflow_id, entered_at,
        entered_action, suspended_seconds)
      SELECT 'vis_c' || v.id, v.case_id, v.subproject_id, '', NULL, 'closed', v.workflow_id, v.left_at, 'close', 0
      FROM state_visit v WHERE v.state = 'resolved' AND v.left_action = 'close'""",
    """UPDATE workflow_case c SET status = 'COMPLETED'
      FROM state_visit v WHERE v.case_id = c.id AND v.state = 'closed' AND c.status = 'ACTIVE'""",
    "ANALYZE",  # the bulk seed's COPY leaves the planner without statistics until autovacuum comes
]


async def moves(url: str) -> bool:
    """Give the cases their stays, once (False: done before)."""
    conn = await asyncpg.connect(asyncpg_dsn(url))
    try:
        if await conn.fetchval("SELECT count(*) FROM state_visit WHERE state = 'resolved'"):
            return False
        for statement in MOVES:
            await conn.execute(statement)
        return True
    finally:
        await conn.close()


async def measure(url: str, runs: int) -> dict[tuple[str, str], list[float]]:
    """Milliseconds per call: (who, over what) -> the runs."""
    db = Database(url)
    timings: dict[tuple[str, str], list[float]] = {}
    try:
        async with db.transaction() as s:
            admin = await identity.actor_by_login(s, "bench")
            dev = await identity.actor_by_login(s, "bench-dev")
            sub = await _subproject(s)
        now = utcnow()
        # "bench" as an admin sees every case without a check; bench-dev through its grant on each item.
        for who, actor in (("admin", dataclasses.replace(admin, is_admin=True)), ("grants", dev)):
            for over, scope in (("subproject", {"subproject_id": sub}), ("workflow", {})):
                found = []
                for _ in range(runs + 1):  # the first warms the caches (the spec, the plans)
                    async with db.read_session() as s:
                        began = time.perf_counter()
                        await insights.insights(
                            s, actor=actor, workflow="bug", since=now - timedelta(days=400), until=now, now=now, **scope
                        )
                        found.append((time.perf_counter() - began) * 1000)
                timings[who, over] = found[1:]
    finally:
        await db.dispose()
    return timings


async def explain(url: str) -> list[str]:
    """EXPLAIN (ANALYZE, BUFFERS) of the figures' statement (the one with the UNION ALL), as the
    engine sends it with its parameters, for each (who, over what) ``measure`` times."""
    db = Database(url)
    sent: list[tuple[str, Any]] = []

    def grab(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        if "UNION ALL" in statement and not statement.startswith("EXPLAIN"):
            sent.append((statement, parameters))

    event.listen(db.engine.sync_engine, "before_cursor_execute", grab)
    lines: list[str] = []
    try:
        async with db.transaction() as s:
            admin = await identity.actor_by_login(s, "bench")
            dev = await identity.actor_by_login(s, "bench-dev")
            sub = await _subproject(s)
        now = utcnow()
        for who, actor in (("admin", dataclasses.replace(admin, is_admin=True)), ("grants", dev)):
            for over, scope in (("subproject", {"subproject_id": sub}), ("workflow", {})):
                async with db.read_session() as s:
                    await insights.insights(
                        s, actor=actor, workflow="bug", since=now - timedelta(days=400), until=now, now=now, **scope
                    )
                    statement, parameters = sent[-1]
                    connection = await s.connection()
                    plan = await connection.exec_driver_sql("EXPLAIN (ANALYZE, BUFFERS) " + statement, parameters)
                    lines += [f"-- {who} over a {over}", *(row[0] for row in plan)]
    finally:
        await db.dispose()
    return lines


async def _subproject(s: Any) -> str | None:
    """The newest subproject of `bug` items: the one measured."""
    return await s.scalar(
        select(Subproject.id)
        .join(Workflow, Workflow.id == Subproject.workflow_id)
        .where(Workflow.short_name == "bug")
        .order_by(Subproject.created_at.desc(), Subproject.id)
        .limit(1)
    )


async def counted(url: str) -> tuple[int, int]:
    conn = await asyncpg.connect(asyncpg_dsn(url))
    try:
        return await conn.fetchval("SELECT count(*) FROM workflow_case"), await conn.fetchval(
            "SELECT count(*) FROM state_visit"
        )
    finally:
        await conn.close()


def section(cases: int, visits: int, timings: dict[tuple[str, str], list[float]], note: str) -> list[str]:
    lines = [
        BEGIN,
        f"## I1: insights over a subproject and over a whole workflow (`bench/insights.py`, at `{commit()}`)",
        "",
        f"{cases:,} cases, {visits:,} state visits (PostgreSQL). {note}",
        "",
        "| who | over | p50 ms | max ms | target ms | verdict |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for (who, over), runs in timings.items():
        p50 = statistics.median(runs)
        verdict = "ok" if p50 <= TARGETS[over] else "over"
        lines.append(f"| {who} | {over} | {p50:.1f} | {max(runs):.1f} | {TARGETS[over]:.0f} | {verdict} |")
    lines.append(END)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--note", default="", help="said in the report: the machine's load, the size's why")
    parser.add_argument("--report", action="store_true", help="write the section into bench/REPORT.md")
    parser.add_argument("--explain", action="store_true", help="print the statement's plans, measure nothing")
    args = parser.parse_args()
    asyncio.run(moves(args.database_url))
    if args.explain:
        print("\n".join(asyncio.run(explain(args.database_url))))
        return
    timings = asyncio.run(measure(args.database_url, args.runs))
    cases, visits = asyncio.run(counted(args.database_url))
    lines = section(cases, visits, timings, args.note)
    print("\n".join(lines))
    if args.report:
        replace(REPORT, lines, begin=BEGIN, end=END, after="<!-- /R5 -->")


if __name__ == "__main__":
    main()
