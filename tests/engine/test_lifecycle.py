"""The case lifecycle driven through the engine: suspend, resume, cancel, and the sweeper's side
(resume_due_suspensions, next_suspension_end) with an injected clock."""

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

import engine
from engine.cases import lifecycle
from engine.errors import DomainError
from models import Activity, Case, WorkflowItem
from tests.fixtures.builders import bug_case, enabled, run, state_of

T0 = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)  # the injected clock: every verb takes now=


async def refused(coro):
    with pytest.raises(DomainError) as error:
        await coro
    return error.value


async def change(db, verb, actor, case_id, **kwargs):
    async with db.transaction() as s:
        return await verb(s, actor=actor, case_id=case_id, **kwargs)


async def entries(db, case_id, prefix="case_"):
    async with db.session() as s:
        rows = (await s.scalars(select(Activity).where(Activity.case_id == case_id).order_by(Activity.seq))).all()
    return [(a.kind, a.actor_id, a.comment, a.data) for a in rows if a.kind.startswith(prefix)]


async def test_suspend_stops_actions_and_resume_restarts_them(db, make_actor):
    sam, dev = await make_actor("sam"), await make_actor("dev")
    _, (case,) = await bug_case(db, sam, dev)
    result = await change(db, lifecycle.suspend_case, sam, case.id, comment="waiting for the vendor", now=T0)
    assert (result.case.status, result.case.version, result.case.suspended_until) == ("SUSPENDED", 1, None)
    assert result.activity.kind == "case_suspended" and result.activity.seq is not None
    assert (await state_of(db, case.id))[1:] == ("SUSPENDED", 1)

    for actor, action in ((dev, "resolve"), (sam, "comment")):
        error = await refused(run(db, actor, case.id, action))
        assert (error.code, error.message) == ("CASE_NOT_ACTIVE", "The case is suspended; no action can run.")
    assert await enabled(db, case.id) == ["comment", "edit", "resolve"]  # kept for the resume

    resumed = await change(db, lifecycle.resume_case, sam, case.id, comment="vendor answered", now=T0)
    assert (resumed.case.status, resumed.case.version) == ("ACTIVE", 2)
    await run(db, dev, case.id, "resolve", resolution="fixed")
    assert await state_of(db, case.id) == ("resolved", "ACTIVE", 3)
    assert await entries(db, case.id) == [
        ("case_suspended", sam.user_id, "waiting for the vendor", {"from": "ACTIVE", "to": "SUSPENDED", "until": None}),
        ("case_resumed", sam.user_id, "vendor answered", {"from": "SUSPENDED", "to": "ACTIVE", "until": None}),
    ]


async def test_a_suspension_until_a_time_ends_at_that_time_and_not_before(db, make_actor):
    sam, dev = await make_actor("sam"), await make_actor("dev")
    _, (early, late, forever) = await bug_case(db, sam, dev, items=3)
    at = T0 + timedelta(hours=2)
    await change(db, lifecycle.suspend_case, sam, late.id, until=at + timedelta(hours=1), now=T0)
    await change(db, lifecycle.suspend_case, sam, early.id, until=at, now=T0)
    await change(db, lifecycle.suspend_case, sam, forever.id, now=T0)
    async with db.session() as s:
        assert await lifecycle.next_suspension_end(s) == at  # the earliest, whatever the order of suspending
        assert (await s.get(Case, early.id)).suspended_until == at

    async with db.transaction() as s:
        assert await lifecycle.resume_due_suspensions(s, now=at - timedelta(seconds=1), limit=10) == []
    assert (await state_of(db, early.id))[1] == "SUSPENDED"

    async with db.transaction() as s:
        resumed = await lifecycle.resume_due_suspensions(s, now=at, limit=10)  # due at exactly its time
    assert [c.id for c in resumed] == [early.id]
    assert (await state_of(db, early.id))[1:] == ("ACTIVE", 2)
    assert (await state_of(db, late.id))[1] == "SUSPENDED" and (await state_of(db, forever.id))[1] == "SUSPENDED"
    (suspended, resumed_entry) = await entries(db, early.id)
    assert suspended[3] == {"from": "ACTIVE", "to": "SUSPENDED", "until": at.isoformat()}
    assert resumed_entry == (
        "case_resumed",
        engine.SYSTEM.user_id,
        None,
        {"from": "SUSPENDED", "to": "ACTIVE", "until": at.isoformat()},
    )
    async with db.session() as s:
        assert (await s.get(Case, early.id)).suspended_until is None
        assert await lifecycle.next_suspension_end(s) == at + timedelta(hours=1)  # the indefinite one never counts
    await run(db, dev, early.id, "resolve", resolution="fixed")  # actions run again

    async with db.transaction() as s:
        assert [c.id for c in await lifecycle.resume_due_suspensions(s, now=at + timedelta(days=1))] == [late.id]
    async with db.transaction() as s:
        assert await lifecycle.resume_due_suspensions(s, now=at + timedelta(days=400)) == []
        assert await lifecycle.next_suspension_end(s) is None


async def test_concurrent_sweepers_resume_each_due_case_once(db, make_actor):
    """Two sweepers, each one case per transaction (FOR UPDATE SKIP LOCKED on PostgreSQL)."""
    sam, dev = await make_actor("sam"), await make_actor("dev")
    _, cases = await bug_case(db, sam, dev, items=6)
    for i, case in enumerate(cases):
        await change(db, lifecycle.suspend_case, sam, case.id, until=T0 + timedelta(minutes=i + 1), now=T0)

    async def sweeper() -> list[str]:
        done = []
        while True:
            async with db.transaction() as s:
                resumed = await lifecycle.resume_due_suspensions(s, now=T0 + timedelta(hours=1), limit=1)
            if not resumed:
                return done
            done += [c.id for c in resumed]

    first, second = await asyncio.gather(sweeper(), sweeper())
    assert sorted(first + second) == sorted(c.id for c in cases)
    for case in cases:
        assert [e[0] for e in await entries(db, case.id)] == ["case_suspended", "case_resumed"]


async def test_cancel_is_final(db, make_actor):
    sam, dev = await make_actor("sam"), await make_actor("dev")
    sub, (canceled, suspended_then_canceled, open_) = await bug_case(db, sam, dev, items=3)
    result = await change(db, lifecycle.cancel_case, sam, canceled.id, comment="duplicate of #2", now=T0)
    assert (result.case.status, result.case.version) == ("CANCELED", 1)
    assert await enabled(db, canceled.id) == []  # no task list shows them, no timer fires them
    assert await entries(db, canceled.id) == [
        (
            "case_canceled",
            sam.user_id,
            "duplicate of #2",
            {"from": "ACTIVE", "to": "CANCELED", "canceled": ["comment", "edit", "resolve"]},
        )
    ]
    error = await refused(run(db, dev, canceled.id, "resolve"))
    assert (error.code, error.message) == ("CASE_NOT_ACTIVE", "The case is canceled; no action can run.")
    for verb, message in (
        (lifecycle.resume_case, "The case is canceled, which is final; it cannot be resumed."),
        (lifecycle.suspend_case, "The case is canceled, which is final."),
        (lifecycle.cancel_case, "The case is already canceled."),
    ):
        error = await refused(change(db, verb, sam, canceled.id, now=T0))
        assert (error.code, error.message) == ("CASE_NOT_ACTIVE", message)
    assert await state_of(db, canceled.id) == ("open", "CANCELED", 1)  # nothing changed

    await change(db, lifecycle.suspend_case, sam, suspended_then_canceled.id, until=T0 + timedelta(hours=1), now=T0)
    await change(db, lifecycle.cancel_case, sam, suspended_then_canceled.id, now=T0)
    async with db.transaction() as s:  # its end of suspension is gone with it
        assert await lifecycle.next_suspension_end(s) is None
        assert await lifecycle.resume_due_suspensions(s, now=T0 + timedelta(days=1)) == []

    # A canceled item is closed: it does not hold its subproject open; an open one does.
    error = await refused(change_subproject(db, sam, sub.id))
    assert error.code == "OPEN_CHILDREN" and "1 open workflow item" in error.message
    await change(db, lifecycle.cancel_case, sam, open_.id, now=T0)
    closed = await change_subproject(db, sam, sub.id)
    assert closed.status == "CLOSED"


async def change_subproject(db, actor, subproject_id):
    async with db.transaction() as s:
        return await engine.close_subproject(s, actor=actor, id=subproject_id)


async def test_a_suspended_item_holds_its_subproject_open(db, make_actor):
    sam, dev = await make_actor("sam"), await make_actor("dev")
    sub, (case,) = await bug_case(db, sam, dev)
    await change(db, lifecycle.suspend_case, sam, case.id, now=T0)
    assert (await refused(change_subproject(db, sam, sub.id))).code == "OPEN_CHILDREN"


async def test_invalid_transitions_and_inputs_change_nothing(db, make_actor):
    sam, dev = await make_actor("sam"), await make_actor("dev")
    _, (case,) = await bug_case(db, sam, dev)
    error = await refused(change(db, lifecycle.resume_case, sam, case.id, now=T0))
    assert (error.code, error.message) == ("CASE_NOT_SUSPENDED", "The case is active, not suspended.")
    for until, message in (
        (T0, "until must be later than now; leave it out to suspend indefinitely."),
        (T0 - timedelta(days=1), "until must be later than now; leave it out to suspend indefinitely."),
        (T0 + timedelta(days=366), "until is more than a year ahead; leave it out to suspend indefinitely."),
    ):
        error = await refused(change(db, lifecycle.suspend_case, sam, case.id, until=until, now=T0))
        assert (error.code, error.message, error.field) == ("INVALID_INPUT", message, ["until"])
    error = await refused(change(db, lifecycle.suspend_case, sam, case.id, comment="x" * 5001, now=T0))
    assert (error.code, error.field) == ("INVALID_INPUT", ["comment"])
    error = await refused(change(db, lifecycle.suspend_case, sam, case.id, expected_version=7, now=T0))
    assert (error.code, error.field) == ("VERSION_CONFLICT", ["expectedVersion"])
    assert await state_of(db, case.id) == ("open", "ACTIVE", 0)
    assert await entries(db, case.id) == []

    # A naive until means UTC; a year ahead exactly is allowed.
    await change(
        db, lifecycle.suspend_case, sam, case.id, until=(T0 + timedelta(days=365)).replace(tzinfo=None), now=T0
    )
    async with db.session() as s:
        assert (await s.get(Case, case.id)).suspended_until == T0 + timedelta(days=365)
    error = await refused(change(db, lifecycle.suspend_case, sam, case.id, now=T0))
    assert (error.code, error.message) == ("CASE_NOT_ACTIVE", "The case is already suspended; resume it first.")
    await change(db, lifecycle.resume_case, sam, case.id, expected_version=1, now=T0)

    await run(db, dev, case.id, "resolve", resolution="fixed")
    await run(db, sam, case.id, "close")
    assert (await state_of(db, case.id))[1] == "COMPLETED"
    for verb, code, message in (
        (lifecycle.suspend_case, "CASE_NOT_ACTIVE", "The case is completed; only an active case can be suspended."),
        (lifecycle.cancel_case, "CASE_NOT_ACTIVE", "The case is completed; only an open case can be canceled."),
        (lifecycle.resume_case, "CASE_NOT_SUSPENDED", "The case is completed, not suspended."),
    ):
        error = await refused(change(db, verb, sam, case.id, now=T0))
        assert (error.code, error.message) == (code, message)


async def test_who_may_change_a_case(db, make_actor):
    """workflowItem.update (or admin); a role alone is not enough; hidden is missing."""
    sam, dev, eve = await make_actor("sam"), await make_actor("dev"), await make_actor("eve")
    root = await make_actor("root", admin=True)
    _, (case,) = await bug_case(db, sam, dev)
    error = await refused(change(db, lifecycle.suspend_case, dev, case.id, now=T0))  # plays "assignee"
    assert (error.code, error.message, error.field) == (
        "NOT_ALLOWED",
        "You may not do workflowItem.update on this workflow item.",
        ["caseId"],
    )
    missing = await refused(change(db, lifecycle.suspend_case, eve, "case_doesnotexist", now=T0))
    for verb in (lifecycle.suspend_case, lifecycle.resume_case, lifecycle.cancel_case):
        hidden = await refused(change(db, verb, eve, case.id, now=T0))
        assert (hidden.code, hidden.field) == (missing.code, missing.field) == ("NOT_FOUND", ["caseId"])
        assert hidden.message == missing.message.replace("case_doesnotexist", case.id)
    async with db.session() as s:
        item_id = (await s.get(Case, case.id)).object_id
    async with db.transaction() as s:
        error = await refused(lifecycle.cancel_case(s, actor=eve, workflow_item_id=item_id, now=T0))
    assert (error.code, error.field) == ("NOT_FOUND", ["workflowItemId"])

    async with db.transaction() as s:  # a grant of the intent is what counts
        await engine.people.permissions.grant(
            s, actor=sam, resource_id=item_id, intent="workflowItem.update", party_id=dev.user_id
        )
    await change(db, lifecycle.suspend_case, dev, case.id, now=T0)
    await change(db, lifecycle.resume_case, root, case.id, now=T0)
    assert [e[1] for e in await entries(db, case.id)] == [dev.user_id, root.user_id]
    async with db.session() as s:
        assert (await s.get(WorkflowItem, item_id)) is not None


async def test_resume_notifies_the_assignees_and_suspend_the_subscribers(db, make_actor):
    from models import Notification

    sam, dev, fan = await make_actor("sam"), await make_actor("dev"), await make_actor("fan")
    _, (case,) = await bug_case(db, sam, dev)
    async with db.transaction() as s:
        item_id = (await s.get(Case, case.id)).object_id
        for intent in ("workflowItem.view", "workflowItem.viewHistory"):
            await engine.people.permissions.grant(
                s, actor=sam, resource_id=item_id, intent=intent, party_id=fan.user_id
            )
        await engine.notify.notifications.subscribe(s, actor=fan, level="CASE", target_id=item_id)
    await change(db, lifecycle.suspend_case, sam, case.id, now=T0)
    await change(db, lifecycle.resume_case, sam, case.id, now=T0)

    async with db.session() as s:
        rows = (
            await s.execute(
                select(Notification.recipient_id, Notification.level, Activity.kind)
                .join(Activity, Activity.id == Notification.activity_id)
                .where(Activity.kind.like("case_%"))
            )
        ).all()
    assert sorted(rows) == sorted(
        [
            (fan.user_id, "CASE", "case_suspended"),
            (fan.user_id, "CASE", "case_resumed"),
            (dev.user_id, "ASSIGNED", "case_resumed"),  # "resolve" is dev's again
        ]
    )
