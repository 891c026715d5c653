"""One data set on SQLite and on PostgreSQL, the same figures (issue 49): PostgreSQL computes
percentiles with percentile_cont in the statement, SQLite reads the durations and
engine/cases/insight_figures.py interpolates them the same way. Durations with fractions of a
second, suspensions and rework, so that a difference in rounding or in what counts shows."""

import asyncio
import random
import uuid
from dataclasses import asdict
from datetime import timedelta

import asyncpg
import pytest

from engine.cases import insights
from engine.cases.insight_figures import Interval
from engine.people import identity
from models import Database
from server.migrate import upgrade
from tests.fixtures.database import BACKEND, POSTGRES_URL, create_test_user
from tests.fixtures.insights import T0, history, reviewed_subproject

NOW = T0 + timedelta(days=30)


def plans(count: int) -> list[list[tuple[float, str]]]:
    """Histories drawn from a fixed seed: waits in quarter seconds, a return to draft now and
    then, a suspension now and then, some cases left open."""
    draw = random.Random(49)
    made = []
    for _ in range(count):
        at, steps = 0.0, []
        for _ in range(draw.randint(0, 3)):
            at += draw.randint(1, 40_000) / 4
            steps.append((at, "submit"))
            if draw.random() < 0.3:
                at += draw.randint(1, 8_000) / 4
                steps += [(at, "suspend"), (at + draw.randint(1, 4_000) / 4, "resume")]
                at = steps[-1][0]
            at += draw.randint(1, 40_000) / 4
            if draw.random() < 0.5:
                steps.append((at, "send_back"))
            else:
                steps.append((at, "approve"))
                break
        made.append(steps)
    return made


async def seed(db: Database):  # type: ignore[no-untyped-def]
    async with db.transaction() as s:
        user = await create_test_user(s, login="owner", admin=True)
        owner = await identity.actor_for(s, user_id=user.id, login=user.login, is_admin=True)
    sub = await reviewed_subproject(db, owner)
    for n, steps in enumerate(plans(40)):
        await history(db, owner, sub.id, steps, start=T0 + timedelta(hours=7 * n, seconds=n / 8))
    return owner


async def figures(db: Database, owner) -> dict:  # type: ignore[no-untyped-def]
    async with db.read_session() as s:
        found = await insights.insights(s, actor=owner, workflow="reviewed", since=T0, until=NOW, now=NOW)
    return {
        "states": [
            (f.state.short_name, f.entered, f.in_state_now, f.oldest_since, f.time_in_state) for f in found.states
        ],
        "actions": [(a.action.short_name, a.executed, a.by_role) for a in found.actions],
        "cycle": found.cycle_time and asdict(found.cycle_time),
        "bins": found.cycle_bins,
        "age": found.open_age and asdict(found.open_age),
        "rework": [(r.state.short_name, r.returned, r.cases) for r in found.rework],
        "overdue": (found.overdue_open, found.overdue_late),
        "weeks": found.throughput(Interval.WEEK),
    }


async def test_sqlite_and_postgresql_give_the_same_figures_for_one_data_set(tmp_path):
    try:
        admin = await asyncpg.connect(POSTGRES_URL, timeout=5)
    except (OSError, asyncpg.PostgresError) as error:
        if BACKEND == "postgres":
            raise
        pytest.skip(f"no PostgreSQL to compare with: {error}")
    name = f"caseway_insights_{uuid.uuid4().hex[:12]}"
    await admin.execute(f'CREATE DATABASE "{name}"')
    urls = [f"sqlite:///{tmp_path / 'insights.db'}", POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"]
    answers = []
    try:
        for url in urls:
            await asyncio.to_thread(upgrade, url)
            db = Database(url)
            try:
                answers.append(await figures(db, await seed(db)))
            finally:
                await db.dispose()
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
    on_sqlite, on_postgres = answers
    assert on_sqlite["cycle"]["count"] >= 5 and on_sqlite["rework"], on_sqlite
    assert sum(1 for _, count in on_sqlite["bins"] if count) >= 2, on_sqlite["bins"]  # the data set has what it tests
    for key in on_sqlite:
        assert _rounded(on_sqlite[key]) == _rounded(on_postgres[key]), key


def _rounded(value):
    """Floats to 9 significant digits: the two databases add seconds in different orders."""
    if isinstance(value, float):
        return float(f"{value:.9g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return _rounded(asdict(value))
    return value
