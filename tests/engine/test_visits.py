"""State visits (engine/history/visits.py): a visit per stay in a state, written with the action
that moves the case, suspended stretches kept apart, child scopes under their own scope; and the
backfill of migration 0026, which derives the same rows from the log."""

import importlib
from datetime import timedelta

import pytest
from sqlalchemy import delete, select

import engine
from engine.history import activity
from engine.history import visits as visits_module
from models import StateVisit, new_id
from tests.fixtures.child_workflows import REVIEW
from tests.fixtures.engine import new_subproject
from tests.fixtures.insights import T0, history, reviewed_subproject

backfill = importlib.import_module("migrations.versions.0026_state_visits").backfill

COLUMNS = (
    "case_id",
    "scope",
    "scope_action",
    "state",
    "workflow_id",
    "entered_at",
    "entered_action",
    "left_at",
    "left_action",
    "left_reason",
    "suspended_seconds",
    "suspended_at",
)


async def visits(db, case_id=None):
    async with db.read_session() as s:
        query = select(StateVisit).order_by(StateVisit.case_id, StateVisit.entered_at, StateVisit.id)
        if case_id is not None:
            query = query.where(StateVisit.case_id == case_id)
        rows = [tuple(getattr(v, c) for c in COLUMNS) for v in await s.scalars(query)]
    return sorted(rows, key=lambda r: (r[0], r[5], r[2] or "", r[3]))  # by case, then time, scope and state


def at(seconds):
    return T0 + timedelta(seconds=seconds)


async def test_a_case_with_rework_and_a_suspension_has_one_visit_per_stay(db, make_actor):
    owner = await make_actor("owner")
    sub = await reviewed_subproject(db, owner)
    steps = [(60, "submit"), (90, "note"), (160, "send_back"), (200, "submit"), (250, "suspend"), (550, "resume")]
    made = await history(db, owner, sub.id, [*steps, (600, "approve")])
    rows = [(r[3], r[5], r[6], r[7], r[8], r[9], r[10], r[11]) for r in await visits(db, made.case_id)]
    assert rows == [
        ("draft", at(0), "start", at(60), "submit", "ACTION", 0.0, None),
        ("review", at(60), "submit", at(160), "send_back", "ACTION", 0.0, None),  # the note moved nothing
        ("draft", at(160), "send_back", at(200), "submit", "ACTION", 0.0, None),
        ("review", at(200), "submit", at(600), "approve", "ACTION", 300.0, None),  # 300 s suspended
        ("approved", at(600), "approve", None, None, None, 0.0, None),
    ]


async def test_a_suspended_case_shows_when_it_stopped_and_a_canceled_one_ends_its_visit(db, make_actor):
    owner = await make_actor("owner")
    sub = await reviewed_subproject(db, owner)
    stopped = await history(db, owner, sub.id, [(10, "submit"), (40, "suspend")])
    canceled = await history(db, owner, sub.id, [(10, "submit"), (40, "suspend"), (100, "cancel")])
    assert [(r[3], r[7], r[10], r[11]) for r in await visits(db, stopped.case_id)] == [
        ("draft", at(10), 0.0, None),
        ("review", None, 0.0, at(40)),
    ]
    assert [(r[3], r[7], r[9], r[10], r[11]) for r in await visits(db, canceled.case_id)] == [
        ("draft", at(10), "ACTION", 0.0, None),
        ("review", at(100), "CANCELED", 60.0, None),
    ]


async def test_child_scopes_have_visits_of_their_own_that_close_with_their_owner(db, make_actor):
    owner = await make_actor("owner")
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=REVIEW)
        sub = await new_subproject(s, owner, workflow="rev_op")
    made = await history(db, owner, sub.id, [(100, "review"), (250, "opinion")])
    rows = {(r[2], r[3]): (r[5], r[6], r[7], r[8], r[9]) for r in await visits(db, made.case_id)}
    assert rows == {
        (None, "open"): (at(0), "init", at(250), "rev_and_op", "ACTION"),
        (None, "done"): (at(250), "rev_and_op", None, None, None),
        ("review_wr", "rev_open"): (at(0), "rev_init", at(100), "review", "ACTION"),
        ("review_wr", "rev_done"): (at(100), "review", at(100), None, "CLOSED"),  # its parent fired then
        ("opinion_wr", "opi_open"): (at(0), "opi_init", at(250), "opinion", "ACTION"),
        ("opinion_wr", "opi_done"): (at(250), "opinion", at(250), None, "CLOSED"),
    }


async def test_the_backfill_derives_from_the_log_the_visits_written_live(db, make_actor):
    """Histories of every kind run live; then migration 0026's backfill rebuilds the table from
    the log alone: the same rows, column for column."""
    owner = await make_actor("owner")
    sub = await reviewed_subproject(db, owner)
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=REVIEW)
        children = await new_subproject(s, owner, workflow="rev_op")
    plans = [
        [(60, "submit"), (160, "send_back"), (200, "submit"), (250, "suspend"), (550, "resume"), (600, "approve")],
        [(5, "submit"), (7, "suspend")],
        [(5, "submit"), (7, "suspend"), (9, "cancel")],
        [(5, "note"), (8, "cancel")],
        [],
    ]
    for n, plan in enumerate(plans):
        await history(db, owner, sub.id, plan, start=at(n * 1000))
    await history(db, owner, children.id, [(100, "review"), (250, "opinion")], start=at(9000))
    await history(db, owner, children.id, [(100, "review"), (150, "cancel")], start=at(9500))
    live = await visits(db)
    assert len(live) == 21, live
    async with db.engine.begin() as conn:
        await conn.execute(delete(StateVisit))
        written = await conn.run_sync(lambda sync: backfill(sync, new_id=new_id))
    assert written == len(live)
    assert await visits(db) == live


async def test_moves_rolled_back_with_a_savepoint_leave_no_visit(db, make_actor):
    """As a migration refuses a case (engine/migration): its moves ran in a savepoint that rolls
    back, their log entries and their visits are forgotten, the transaction goes on and commits."""
    owner = await make_actor("owner")
    sub = await reviewed_subproject(db, owner)
    made = await history(db, owner, sub.id, [])
    async with db.transaction() as s:
        entries, noted = activity.queued(s), visits_module.mark(s)
        with pytest.raises(RuntimeError):
            async with s.begin_nested():
                await engine.execute(s, actor=owner, case_id=made.case_id, action="submit", now=at(30))
                await s.flush()
                raise RuntimeError("refused")
        activity.forget(s, entries)
        visits_module.forget(s, noted)
    assert [(r[3], r[7]) for r in await visits(db, made.case_id)] == [("draft", None)]
    await history_step(db, owner, made.case_id, "submit", at(60))  # a later move is written as ever
    assert [(r[3], r[7]) for r in await visits(db, made.case_id)] == [("draft", at(60)), ("review", None)]


async def history_step(db, actor, case_id, action, now):
    async with db.transaction() as s:
        await engine.execute(s, actor=actor, case_id=case_id, action=action, now=now)
