"""Timers and automatic actions, driven through the engine with an injected clock: a timer fires
once at its time, restarts when disabled and enabled again, fires USER actions nobody took,
waits while its case is not ACTIVE, and one that fails does not hold up the others."""

from datetime import timedelta

from sqlalchemy import select, update

import engine
from engine.cases import timers
from engine.cases.context import load_case
from engine.clock import SettableClock
from engine.people.actors import SYSTEM_ID
from models import Activity, Case, EnabledAction
from server.timer_runs import run_due_timers
from tests.fixtures.engine import new_subproject

HOUR = 3600
WEEK = 7 * 24 * HOUR

# A request that expires an hour after it is submitted, unless it is recalled; a USER action
# (`approve`) that approves by itself after a week unless someone acts.
LEAVE = {
    "short_name": "leave",
    "roles": {"clerk": {}, "boss": {}},
    "states": {
        "draft": {},
        "waiting": {},
        "expired": {"terminal": True},
    },
    "actions": {
        "start": {"trigger": "init", "new_state": "draft"},
        "submit": {"enabled_states": ["draft"], "new_state": "waiting"},
        "recall": {"enabled_states": ["waiting"], "new_state": "draft"},
        "expire": {"trigger": "time", "enabled_states": ["waiting"], "timeout_seconds": HOUR, "new_state": "expired"},
    },
}
REVIEW = {
    "short_name": "review",
    "roles": {"boss": {}},
    "states": {"open": {}, "approved": {"terminal": True}, "rejected": {"terminal": True}},
    "actions": {
        "start": {"trigger": "init", "new_state": "open"},
        "approve": {
            "assigned_role": "boss",
            "assigned_states": ["open"],
            "timeout_seconds": WEEK,
            "new_state": "approved",
        },
        "reject": {"assigned_role": "boss", "assigned_states": ["open"], "new_state": "rejected"},
    },
}
# An automatic triage in the initial state, then a timeout of 0 in the next one.
TRIAGE = {
    "short_name": "triage",
    "states": {"new": {}, "sorted": {}, "queued": {}, "done": {"terminal": True}},
    "actions": {
        "start": {"trigger": "init", "new_state": "new"},
        "triage": {"trigger": "auto", "enabled_states": ["new"], "new_state": "sorted"},
        "enqueue": {"enabled_states": ["sorted"], "timeout_seconds": 0, "new_state": "queued"},
        "finish": {"enabled_states": ["queued"], "new_state": "done"},
    },
}


async def items(db, owner, workflow, count, *, mode="UNORDERED"):
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=workflow)  # again: a new version, taken by the subproject
        sub = await new_subproject(s, owner, workflow=workflow["short_name"], mode=mode)
        made = [
            await engine.create_workflow_item(s, actor=owner, subproject_id=sub.id, display_name=f"Item {i}")
            for i in range(count)
        ]
    return [case for _, case in made]


async def act(db, actor, case, action, at):
    async with db.transaction() as s:
        await engine.execute(s, actor=actor, case_id=case.id, action=action, now=at)


async def state(db, case):
    async with db.session() as s:
        ctx = await load_case(s, case_id=case.id)
        return ctx.states[""], ctx.case.status


async def log_of(db, case):
    async with db.session() as s:
        rows = await s.scalars(select(Activity).where(Activity.case_id == case.id).order_by(Activity.seq))
        return [(a.kind, a.action, a.actor_id) for a in rows]


async def due(db, at, limit=100):
    return await run_due_timers(db, now=at, limit=limit)


async def test_a_timer_fires_once_at_its_time_and_not_before(db, make_actor):
    admin = await make_actor("root", admin=True)
    clock = SettableClock()
    first, other = await items(db, admin, LEAVE, 2)
    submitted = clock.now()
    await act(db, admin, first, "submit", submitted)
    async with db.session() as s:
        timer = await s.scalar(
            select(EnabledAction).where(EnabledAction.case_id == first.id, EnabledAction.action == "expire")
        )
    assert timer.fire_at == submitted + timedelta(seconds=HOUR)

    assert (await due(db, clock.advance(HOUR - 1))).fired == []
    assert await state(db, first) == ("waiting", "ACTIVE")

    run = await due(db, clock.advance(1))
    assert [(e.case_id, e.action, e.actor_id) for e in run.fired] == [(first.id, "expire", SYSTEM_ID)]
    assert run.fired[0].data["timer"] == {"enabledActionId": timer.id, "fireAt": timer.fire_at.isoformat()}
    assert run.fired[0].at == clock.now()
    assert await state(db, first) == ("expired", "COMPLETED")
    assert await state(db, other) == ("draft", "ACTIVE")  # never submitted: no timer

    assert (await due(db, clock.advance(10 * HOUR))).fired == []
    assert (await log_of(db, first)).count(("action_executed", "expire", SYSTEM_ID)) == 1


async def test_disabled_then_enabled_again_restarts_the_clock(db, make_actor):
    admin = await make_actor("root", admin=True)
    clock = SettableClock()
    (case,) = await items(db, admin, LEAVE, 1)
    t0 = clock.now()
    await act(db, admin, case, "submit", t0)
    await act(db, admin, case, "recall", t0 + timedelta(seconds=HOUR - 600))  # the timer is canceled
    resubmitted = t0 + timedelta(seconds=HOUR - 60)
    await act(db, admin, case, "submit", resubmitted)

    assert (await due(db, t0 + timedelta(seconds=HOUR + 1))).fired == []  # the first clock would have fired
    assert await state(db, case) == ("waiting", "ACTIVE")
    async with db.session() as s:
        rows = (await s.scalars(select(EnabledAction).where(EnabledAction.action == "expire"))).all()
    assert sorted((r.status, r.fire_at) for r in rows) == [
        ("CANCELED", t0 + timedelta(seconds=HOUR)),
        ("ENABLED", resubmitted + timedelta(seconds=HOUR)),
    ]
    run = await due(db, resubmitted + timedelta(seconds=HOUR))
    assert [e.action for e in run.fired] == ["expire"]
    assert await state(db, case) == ("expired", "COMPLETED")


async def test_a_user_action_with_a_timeout_fires_if_nobody_acts(db, make_actor):
    admin = await make_actor("root", admin=True)
    clock = SettableClock()
    idle, handled = await items(db, admin, REVIEW, 2)
    await act(db, admin, handled, "reject", clock.advance(HOUR))

    run = await due(db, clock.advance(WEEK))
    assert [(e.case_id, e.action) for e in run.fired] == [(idle.id, "approve")]
    assert await state(db, idle) == ("approved", "COMPLETED")
    assert await state(db, handled) == ("rejected", "COMPLETED")
    assert ("action_executed", "approve", SYSTEM_ID) not in await log_of(db, handled)


async def test_auto_actions_and_timeouts_of_zero_fire_at_case_creation(db, make_actor):
    admin = await make_actor("root", admin=True)
    (case,) = await items(db, admin, TRIAGE, 1)
    assert await state(db, case) == ("queued", "ACTIVE")
    assert [entry for entry in await log_of(db, case) if entry[0] == "action_executed"] == [
        ("action_executed", "start", admin.user_id),
        ("action_executed", "triage", SYSTEM_ID),
        ("action_executed", "enqueue", SYSTEM_ID),
    ]


async def test_timers_of_a_case_that_is_not_active_wait_until_it_is(db, make_actor):
    admin = await make_actor("root", admin=True)
    clock = SettableClock()
    paused, running = await items(db, admin, LEAVE, 2)
    for case in (paused, running):
        await act(db, admin, case, "submit", clock.now())
    async with db.transaction() as s:  # as suspending does (the lifecycle verbs own the transition)
        await s.execute(update(Case).where(Case.id == paused.id).values(status="SUSPENDED"))
    run = await due(db, clock.advance(2 * HOUR))
    assert [e.case_id for e in run.fired] == [running.id]
    async with db.session() as s:
        assert await timers.next_fire_at(s) is None  # a sweeper does not wake for the suspended one
    async with db.transaction() as s:
        await s.execute(update(Case).where(Case.id == paused.id).values(status="ACTIVE"))
    run = await due(db, clock.now())
    assert [e.case_id for e in run.fired] == [paused.id]


async def test_a_timer_that_a_rule_refuses_is_postponed_and_the_others_still_fire(db, make_actor):
    admin = await make_actor("root", admin=True)
    clock = SettableClock()
    # ORDERED: the second item may not end while the first is open, so its timer is refused.
    _open_first, second = await items(db, admin, LEAVE, 2, mode="ORDERED")
    (elsewhere,) = await items(db, admin, LEAVE, 1)
    await act(db, admin, second, "submit", clock.now())
    await act(db, admin, elsewhere, "submit", clock.advance(1))

    run = await due(db, clock.advance(HOUR))
    assert [e.case_id for e in run.fired] == [elsewhere.id] and run.failed == 1
    assert await state(db, second) == ("waiting", "ACTIVE")
    async with db.session() as s:
        failed = await s.scalar(select(Activity).where(Activity.kind == "timer_failed"))
        retry_at = await timers.next_fire_at(s)
    assert failed.case_id == second.id and failed.data["code"] == "PREVIOUS_ITEMS_OPEN"
    assert retry_at == clock.now() + timers.RETRY_AFTER
    assert (await due(db, clock.now())).fired == []  # not retried at once


async def test_the_limit_bounds_a_run_and_says_more_are_due(db, make_actor):
    admin = await make_actor("root", admin=True)
    clock = SettableClock()
    cases = await items(db, admin, LEAVE, 3)
    for i, case in enumerate(cases):
        await act(db, admin, case, "submit", clock.now() + timedelta(seconds=i))
    run = await due(db, clock.advance(2 * HOUR), limit=2)
    assert [e.case_id for e in run.fired] == [cases[0].id, cases[1].id] and run.more  # oldest first
    run = await due(db, clock.now(), limit=2)
    assert [e.case_id for e in run.fired] == [cases[2].id] and not run.more


async def test_a_timer_firing_costs_a_fixed_few_statements(db, make_actor, count_statements):
    """Bench T1 is bound by what each firing costs (one transaction per timer): pin its
    statements. A timer that ends its case (its instance completed, a user action canceled, the
    state and the case's status changed, two log entries) and a run of two such timers: the
    second costs exactly FIRING_STATEMENTS more, and no table is written twice per firing."""
    admin = await make_actor("root", admin=True)
    clock = SettableClock()
    cases = await items(db, admin, LEAVE, 3)
    for case in cases:
        await act(db, admin, case, "submit", clock.now())
    clock.advance(HOUR)
    counts, statements = [], []
    for limit in (1, 2):
        with count_statements() as counter:
            run = await due(db, clock.now(), limit=limit)
        assert [e.action for e in run.fired] == ["expire"] * limit
        counts.append(counter.count)
        statements = counter.statements
    postgres = db.engine.dialect.name == "postgresql"
    assert counts[1] - counts[0] == (FIRING_STATEMENTS_POSTGRES if postgres else FIRING_STATEMENTS), statements
    assert [await state(db, case) for case in cases] == [("expired", "COMPLETED")] * 3
    assert not [s for s in statements if s.startswith("SELECT case_state")]  # its state was read with the case
    if postgres:  # each firing's rows written by the statement that reads its chain's head
        writes = [s for s in statements if s.startswith("WITH ") and "caseway_chain_head" in s]
        assert len(writes) == 2 and all("caseway_chain_head" in s for s in writes), statements
        for table in ("workflow_case", "case_state", "enabled_action"):
            assert all(f"UPDATE {table} " in s for s in writes), table
        assert not [s for s in statements if s.startswith("UPDATE ")], statements
        assert len([s for s in statements if s.startswith("INSERT INTO activity")]) == 2  # both entries at once
        return
    for table in ("workflow_case", "case_state", "enabled_action"):
        assert len([s for s in statements if s.startswith(f"UPDATE {table} ")]) == 2, table  # one per firing
    assert len([s for s in statements if s.startswith("INSERT INTO activity")]) == 2  # both entries at once


# The claim (with the case, item and subproject), the case's facts, one UPDATE per table written
# (the instance completed and the user action canceled together), the chain's head (with the
# seqs of the entries), one insert of the two log entries (action_executed, case_completed), and
# the state visit left and the one entered (engine/history/visits.py).
FIRING_STATEMENTS = 9
# PostgreSQL: the claim, the facts, the rows written and then the chain's head with the seqs in
# one statement (engine/history/folded_writes.py), the insert of the two entries, and the state
# visits (the one left and the one entered, one statement).
FIRING_STATEMENTS_POSTGRES = 5


async def test_a_user_action_that_moves_its_case_reads_nothing_back(db, make_actor, count_statements):
    """The firing path a timer shares with a user's action (executeAction, bench W1): the case
    locked and its facts read, then each table written once, the instance canceled or enabled
    with the one completed; neither the state nor the case is read again."""
    admin = await make_actor("root", admin=True)
    clock = SettableClock()
    (case,) = await items(db, admin, LEAVE, 1)
    with count_statements() as counter:
        await act(db, admin, case, "submit", clock.now())  # draft -> waiting: recall, expire enabled
    assert await state(db, case) == ("waiting", "ACTIVE")
    selects = [s for s in counter.statements if s.startswith("SELECT")]
    assert [s.split()[1] for s in selects[:2]] == ["workflow_case.id,", "enabled_action.id,"]  # lock, facts
    assert not [s for s in counter.statements if s.startswith("SELECT case_state")]
    if db.engine.dialect.name == "postgresql":
        # The rows written ride along with the log entry: its insert reads the chain's head too;
        # then the state visits (the one left, the one entered: engine/history/visits.py).
        assert counter.count == 4, counter.statements
        written = counter.statements[2]
        assert written.startswith("WITH ") and "INSERT INTO activity" in written, written
        for table in ("workflow_case", "case_state", "enabled_action"):
            assert f"UPDATE {table} " in written, table
        assert written.count("INSERT INTO enabled_action") == 1  # recall and expire enabled at once
        return
    for table in ("workflow_case", "case_state", "enabled_action"):
        assert len([s for s in counter.statements if s.startswith(f"UPDATE {table} ")]) == 1, table
    assert len(counter.starting("INSERT INTO enabled_action")) == 1  # both new instances at once
    # with the entry's insert, which reads the chain's head, and the state visit left and the one entered
    assert counter.count == 9, counter.statements


# Three timers enabled at once, the soonest neither first nor last in the spec's order.
REMINDERS = {
    "short_name": "reminders",
    "states": {"open": {}, "done": {"terminal": True}},
    "actions": {
        "start": {"trigger": "init", "new_state": "open"},
        "a_middle": {"trigger": "time", "enabled_states": ["open"], "timeout_seconds": 20},
        "b_soonest": {"trigger": "time", "enabled_states": ["open"], "timeout_seconds": 10},
        "c_latest": {"trigger": "time", "enabled_states": ["open"], "timeout_seconds": 30, "new_state": "done"},
    },
}


async def test_a_transaction_tells_the_sweepers_its_soonest_timer(db, make_actor):
    """Whoever commits tells the sweepers the earliest timer the transaction wrote, and they sleep
    until then: told a later one, a timer would fire late (at the next poll)."""
    owner = await make_actor("owner")
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=REMINDERS)
        sub = await new_subproject(s, owner, workflow="reminders")
        _, case = await engine.create_workflow_item(s, actor=owner, subproject_id=sub.id, display_name="Remind me")
        written = timers.written_timer(s)
        fire_at = {
            ea.action: ea.fire_at
            for ea in await s.scalars(select(EnabledAction).where(EnabledAction.case_id == case.id))
            if ea.fire_at is not None
        }
    assert sorted(fire_at, key=fire_at.get) == ["b_soonest", "a_middle", "c_latest"]
    assert written == fire_at["b_soonest"]
