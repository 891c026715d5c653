"""Bench T1 (bench/timers.py) must keep measuring what it says: its bulk-loaded timers are ones
the server fires (each exactly once, never early), the lateness it reports comes from those
firings, the server it started is stopped, and its section of the report is written in place."""

from pathlib import Path

import pytest
from sqlalchemy import select

from bench import timers
from bench.server import Server, drop_postgres, fresh_postgres
from engine.history.history import verify_history
from models import Database, WorkflowItem
from tests.fixtures.database import BACKEND

COUNT = 50


@pytest.mark.skipif(BACKEND != "postgres", reason="T1 bulk-loads with PostgreSQL COPY and serves with two workers")
async def test_t1_at_a_tiny_size_fires_every_bulk_loaded_timer_once_and_reports_it(tmp_path: Path):
    started: list[Server] = []

    def start(*args, **kwargs) -> Server:
        started.append(Server(*args, **kwargs))
        return started[-1]

    url, name = await fresh_postgres("caseway_t1_test")
    try:
        # The lead covers the start of a two-worker server on a busy two-core machine.
        result = await timers.run(url, timers=COUNT, spread=3, lead=8, margin=15, start=start)
        db = Database(url)
        try:
            async with db.read_session() as s:
                items = (await s.scalars(select(WorkflowItem.id).order_by(WorkflowItem.id).limit(3))).all()
                # Bulk-loaded entries and the engine's timer entry after them form intact hash chains.
                reports = [await verify_history(s, resource_id=item, secret_key="") for item in items]
        finally:
            await db.dispose()
    finally:
        await drop_postgres(name)

    assert len(started) == 1 and started[0].process.poll() is not None, "the server is stopped"
    assert len(items) == 3 and all(report.intact for report in reports)
    assert len(result.expected) == COUNT
    assert (result.exactly_once, result.missing, result.doubled, result.failed) == (COUNT, 0, 0, 0)
    assert len(result.fired) == COUNT and {f.enabled_action_id for f in result.fired} == result.expected
    assert result.waited < 3 + 15, "the wait ends once every timer fired"
    # A timer never fires before its fire_at, and the reader sees an entry only after its pass began.
    assert min(result.log_lateness) >= 0
    assert len(result.seen_lateness) == COUNT
    assert all(f.seen >= f.at.timestamp() for f in result.fired)
    assert sum(n for _, _, n, _, _ in result.windows()) == COUNT

    report = tmp_path / "REPORT.md"
    report.write_text("# Report\n\n<!-- A1 -->\nA1\n<!-- /A1 -->\n\n## Profile findings\n\nnotes\n")
    timers.replace_section(report, timers.section(result))
    timers.replace_section(report, timers.section(result))  # a second run replaces the first
    text = report.read_text()
    assert text.count(timers.BEGIN) == 1 and text.count(timers.END) == 1
    assert text.index("<!-- /A1 -->") < text.index(timers.BEGIN) < text.index("## Profile findings")
    assert f"| {COUNT} | {COUNT} | 0 | 0 | 0 | " in text


def test_quantiles_are_nearest_rank():
    values = [float(n) for n in range(1, 101)]
    assert (timers.quantile(values, 0.5), timers.quantile(values, 0.99), timers.quantile(values, 1.0)) == (50, 99, 100)
    assert timers.quantile([], 0.99) != timers.quantile([], 0.99)  # NaN: nothing fired is no pass
