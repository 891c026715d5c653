"""insights on SQLite: the figures statement by statement, the durations read and summarized in
Python (engine/cases/insight_figures.py), since SQLite has no ``percentile_cont``. The same
figures as engine/cases/insight_statement.py's one statement (PostgreSQL), into the same
``Folded``; tests/engine/test_insights_backends.py compares the two on one data set. SQLite runs
in the process: a statement costs no round trip, so one per figure is cheap."""

from collections import defaultdict
from datetime import datetime
from typing import Any

from sqlalchemy import and_, case, distinct, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.cases.insight_figures import as_day, bin_of, summarize
from engine.cases.insight_statement import OPEN_STATUSES, Folded, executed_entries, role_sets
from models import StateVisit, as_utc

_V = StateVisit.__table__.c


async def read(session: AsyncSession, chosen_query: Any, now: datetime) -> Folded:
    chosen = chosen_query.cte("chosen")
    folded = Folded([])
    rows = await _rows(
        session,
        select(
            _V.scope_action,
            _V.state,
            func.count(),
            func.count(case((_V.left_at.is_(None), 1))),
            func.min(case((_V.left_at.is_(None), _V.entered_at))),
        )
        .join(chosen, chosen.c.id == _V.case_id)
        .group_by(_V.scope_action, _V.state),
    )
    for scope, state, entered, open_now, oldest in rows:
        folded.states[scope, state] = (entered, open_now, as_utc(oldest) if oldest is not None else None)
    waits: dict[tuple[str | None, str], list[float]] = defaultdict(list)
    visits = select(_V.scope_action, _V.state, _V.left_at, _V.entered_at, _V.suspended_seconds).join(
        chosen, chosen.c.id == _V.case_id
    )
    for scope, state, left, entered, suspended in await _rows(session, visits.where(_V.left_at.is_not(None))):
        waits[scope, state].append((as_utc(left) - as_utc(entered)).total_seconds() - suspended)
    folded.timed = {key: summary for key, found in waits.items() if (summary := summarize(found)) is not None}
    executed = executed_entries(chosen)
    for action, count in await _rows(session, select(executed.c.action, func.count()).group_by(executed.c.action)):
        folded.executed[action] = count
    for action, roles, count in await _rows(session, role_sets(executed, postgres=False)):
        folded.add_roles(action, roles, count)
    done = (
        select(chosen.c.created_at, chosen.c.due_date, _V.entered_at)
        .select_from(chosen)
        .join(StateVisit.__table__, and_(_V.case_id == chosen.c.id, _V.scope == "", _V.left_at.is_(None)))
        .where(chosen.c.status == "COMPLETED")
    )
    cycles = []
    for start, due, done_at in await _rows(session, done):
        finished = as_utc(done_at)
        cycles.append((finished - as_utc(start)).total_seconds())
        folded.completed[finished.date()] = folded.completed.get(finished.date(), 0) + 1
        if due is not None and finished.date() > due:
            folded.late += 1
    folded.cycle = summarize(cycles)
    for seconds in cycles:
        folded.bins[bin_of(seconds)] = folded.bins.get(bin_of(seconds), 0) + 1
    today = now.date()
    ages = []
    for start, status, due in await _rows(session, select(chosen.c.created_at, chosen.c.status, chosen.c.due_date)):
        day = as_day(as_utc(start))
        folded.started[day] = folded.started.get(day, 0) + 1
        if status in OPEN_STATUSES:
            ages.append((now - as_utc(start)).total_seconds())
            folded.overdue += due is not None and due < today
    folded.age = summarize(ages)
    stays = (
        select(_V.case_id, _V.scope_action, _V.state, func.count().label("visits"))
        .join(chosen, chosen.c.id == _V.case_id)
        .group_by(_V.case_id, _V.scope, _V.scope_action, _V.state)
        .subquery()
    )
    rework = (
        select(
            stays.c.scope_action,
            stays.c.state,
            func.sum(stays.c.visits - 1),
            func.count(distinct(case((stays.c.visits > 1, stays.c.case_id)))),
        )
        .group_by(stays.c.scope_action, stays.c.state)
        .having(func.max(stays.c.visits) > 1)
    )
    folded.rework = [(scope, state, int(n), int(cases)) for scope, state, n, cases in await _rows(session, rework)]
    return folded


async def _rows(session: AsyncSession, query: Any) -> list[Any]:
    return list((await session.execute(query)).all())
