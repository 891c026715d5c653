"""Reminders, escalation and due dates (engine/cases/reminders.py, engine/spec/reminder_specs.py), driven
through the engine with a clock the test moves: the assignees are reminded every so often while
the action waits, at most max times; the role is told once when it has waited too long; nothing
is sent for work done, nor while the case is suspended; an item's due date tells its assignees
when it comes and when it is past; the spec keys are checked."""

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

import engine
from engine import DomainError
from engine.clock import SettableClock
from engine.spec import workflows
from models import Activity, Notification, Reminder, utcnow
from server.timer_runs import run_due_timers
from tests.fixtures.engine import new_subproject

HOUR = 3600
CHASE = {
    "short_name": "chase",
    "roles": {"boss": {}, "clerk": {}},
    "states": {"open": {}, "done": {"terminal": True}},
    "actions": {
        "start": {"trigger": "init", "new_state": "open"},
        "approve": {
            "assigned_role": "boss",
            "assigned_states": ["open"],
            "new_state": "done",
            "reminders": {"every": HOUR, "max": 2},
            "escalate": {"after": 3 * HOUR, "to_role": "clerk"},
        },
    },
}


async def chase_case(db, owner, boss, clerk):
    """A case of CHASE whose approval waits for ``boss``; when it was enabled."""
    async with db.transaction() as s:
        await workflows.define_workflow(s, actor=None, spec=CHASE)
        sub = await new_subproject(s, owner, workflow="chase")
        _, case = await engine.create_workflow_item(
            s,
            actor=owner,
            subproject_id=sub.id,
            display_name="Budget",
            assignments={"boss": [boss.user_id], "clerk": [clerk.user_id]},
        )
        enabled_at = await s.scalar(select(Reminder.fire_at).where(Reminder.id.like("remind:%")))
    return case, enabled_at - timedelta(seconds=HOUR)


async def told(db, case_id) -> list[tuple[str, Any, Any, list[str]]]:
    """The reminder entries of the case: (kind, which, of, who was notified, by login order)."""
    async with db.session() as s:
        entries = (
            await s.scalars(
                select(Activity)
                .where(Activity.case_id == case_id, Activity.kind.in_(("action_reminded", "action_escalated")))
                .order_by(Activity.seq)
            )
        ).all()
        found = []
        for entry in entries:
            heard = await s.execute(
                select(Notification.recipient_id, Notification.level).where(Notification.activity_id == entry.id)
            )
            found.append((entry.kind, entry.data.get("reminder"), entry.actor_id, sorted(heard.all())))
    return found


async def test_assignees_are_reminded_at_most_max_times_and_the_role_is_told_once(db, make_actor):
    owner = await make_actor("owner")
    boss, clerk = await make_actor("boss"), await make_actor("clerk")
    case, enabled = await chase_case(db, owner, boss, clerk)
    clock = SettableClock(enabled)

    assert (await run_due_timers(db, now=clock.advance(HOUR - 1), limit=10)).fired == []
    first = await run_due_timers(db, now=clock.advance(1), limit=10)
    assert [(e.kind, e.action, e.data["reminder"], e.data["of"]) for e in first.fired] == [
        ("action_reminded", "approve", 1, 2)
    ]
    await run_due_timers(db, now=clock.advance(HOUR), limit=10)
    await run_due_timers(db, now=clock.advance(HOUR / 2), limit=10)  # 2.5 h: nothing is due
    escalated = await run_due_timers(db, now=clock.advance(HOUR / 2), limit=10)  # 3 h
    assert [(e.kind, e.data["toRole"], e.data["waitedSeconds"]) for e in escalated.fired] == [
        ("action_escalated", "clerk", 3 * HOUR)
    ]
    assert (await run_due_timers(db, now=clock.advance(24 * HOUR), limit=10)).fired == []
    assert await told(db, case.id) == [
        ("action_reminded", 1, "system", [(boss.user_id, "ASSIGNED")]),
        ("action_reminded", 2, "system", [(boss.user_id, "ASSIGNED")]),
        ("action_escalated", None, "system", [(clerk.user_id, "ASSIGNED")]),
    ]
    async with db.session() as s:
        assert (await s.scalars(select(Reminder.id))).all() == []  # all spent


async def test_nothing_is_sent_for_work_done_nor_while_the_case_is_suspended(db, make_actor):
    owner = await make_actor("owner", admin=True)
    boss, clerk = await make_actor("boss"), await make_actor("clerk")
    done, enabled = await chase_case(db, owner, boss, clerk)
    waiting, _ = await chase_case(db, owner, boss, clerk)
    clock = SettableClock(enabled)
    async with db.transaction() as s:
        await engine.execute(s, actor=boss, case_id=done.id, action="approve", now=clock.advance(HOUR / 2))
        await engine.suspend_case(s, actor=owner, case_id=waiting.id, now=clock.now())
    assert (await run_due_timers(db, now=clock.advance(5 * HOUR), limit=10)).fired == []
    assert await told(db, done.id) == [] and await told(db, waiting.id) == []
    async with db.transaction() as s:
        await engine.resume_case(s, actor=owner, case_id=waiting.id, now=clock.now())
    resumed = await run_due_timers(db, now=clock.now(), limit=10)
    assert sorted(e.kind for e in resumed.fired if e.case_id == waiting.id) == ["action_escalated", "action_reminded"]
    async with db.session() as s:  # the approved case's rows were dropped when they came due
        assert not [r for r in (await s.scalars(select(Reminder))).all() if r.case_id == done.id]


async def test_a_due_date_tells_the_assignees_when_it_comes_and_when_it_is_past(db, make_actor):
    owner = await make_actor("owner")
    dev = await make_actor("dev")
    today = utcnow().date()
    async with db.transaction() as s:
        sub = await new_subproject(s, owner, workflow="simple")
        item, _ = await engine.create_workflow_item(
            s,
            actor=owner,
            subproject_id=sub.id,
            display_name="Report",
            assignee_id=dev.user_id,
            due_date=today + timedelta(days=3),
        )
        moved, _ = await engine.create_workflow_item(
            s,
            actor=owner,
            subproject_id=sub.id,
            display_name="Slides",
            assignee_id=dev.user_id,
            due_date=today + timedelta(days=3),
        )
        # Slides' due date moves a week later: its first dates tell no one.
        await engine.update_workflow_item(s, actor=owner, id=moved.id, due_date=today + timedelta(days=10))

    def start_of(day: date) -> datetime:
        return datetime.combine(day, datetime.min.time(), tzinfo=UTC)

    due_day = today + timedelta(days=3)
    assert (await run_due_timers(db, now=start_of(due_day) - timedelta(seconds=1), limit=10)).fired == []
    due = await run_due_timers(db, now=start_of(due_day), limit=10)
    assert [(e.kind, e.workflow_item_id, e.data) for e in due.fired] == [
        ("workflow_item_due", item.id, {"dueDate": due_day.isoformat()})
    ]
    late = await run_due_timers(db, now=start_of(due_day + timedelta(days=1)), limit=10)
    assert [(e.kind, e.workflow_item_id) for e in late.fired] == [("workflow_item_overdue", item.id)]
    async with db.session() as s:
        heard = await s.execute(
            select(Activity.kind, Notification.recipient_id, Notification.level)
            .join(Notification, Notification.activity_id == Activity.id)
            .where(Activity.kind.like("workflow_item_%due"))
            .order_by(Activity.seq)
        )
        assert heard.all() == [
            ("workflow_item_due", dev.user_id, "ASSIGNED"),
            ("workflow_item_overdue", dev.user_id, "ASSIGNED"),
        ]
    week = await run_due_timers(db, now=start_of(today + timedelta(days=11)), limit=10)
    assert [(e.kind, e.workflow_item_id) for e in week.fired] == [
        ("workflow_item_due", moved.id),
        ("workflow_item_overdue", moved.id),
    ]


def spec_with(action: dict[str, Any]) -> dict[str, Any]:
    return {
        "short_name": "keys",
        "roles": {"boss": {}},
        "states": {"open": {}, "done": {"terminal": True}},
        "actions": {"start": {"trigger": "init", "new_state": "open"}, "approve": {"new_state": "done", **action}},
    }


A = ["spec", "actions", "approve"]
BAD_KEYS = [
    ({"reminders": {"every": 30, "max": 2}}, [*A, "reminders", "every"], "between 60"),
    ({"reminders": {"every": HOUR, "max": 0}}, [*A, "reminders", "max"], "between 1 and 100"),
    ({"reminders": {"every": HOUR}}, [*A, "reminders"], "needs every (seconds) and max"),
    ({"reminders": {"every": HOUR, "max": 2, "to": "x"}}, [*A, "reminders", "to"], "Unknown key"),
    ({"reminders": [HOUR]}, [*A, "reminders"], "must be an object"),
    ({"escalate": {"after": HOUR, "to_role": "chief"}}, [*A, "escalate", "to_role"], "unknown role 'chief'"),
    ({"escalate": {"after": "1h", "to_role": "boss"}}, [*A, "escalate", "after"], "whole number"),
    ({"escalate": {"to_role": "boss"}}, [*A, "escalate"], "needs after (seconds) and to_role"),
    ({"trigger": "auto", "reminders": {"every": HOUR, "max": 1}}, [*A, "reminders"], "only a USER action"),
]


@pytest.mark.parametrize(("extra", "field", "words"), BAD_KEYS, ids=[w for _, _, w in BAD_KEYS])
async def test_the_keys_are_checked_when_the_workflow_is_defined(db, extra, field, words):
    action = {"assigned_role": "boss", "enabled_states": ["open"], **extra}
    with pytest.raises(DomainError) as raised:
        async with db.transaction() as s:
            await workflows.define_workflow(s, actor=None, spec=spec_with(action))
    errors = getattr(raised.value, "errors", [raised.value])
    assert (errors[0].code, errors[0].field) == ("INVALID_SPEC", field), [(e.field, e.message) for e in errors]
    assert words in errors[0].message


async def test_a_defined_workflow_keeps_its_keys(db):
    action = {
        "enabled_states": ["open"],
        "reminders": {"every": HOUR, "max": 3},
        "escalate": {"after": 60, "to_role": "boss"},
    }
    async with db.transaction() as s:
        workflow = await workflows.define_workflow(s, actor=None, spec=spec_with(action))
    assert workflow.spec["actions"]["approve"]["reminders"] == {"every": HOUR, "max": 3}
    assert workflow.spec["actions"]["approve"]["escalate"] == {"after": 60, "to_role": "boss"}
