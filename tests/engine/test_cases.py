"""The engine driven directly (no HTTP): the built-in bug tracker and the execution rules."""

import pytest
from sqlalchemy import func, select

import engine
from engine.cases.context import load_case
from engine.errors import DomainError, DomainErrors
from models import Activity, Case
from tests.fixtures.builders import bug_case, enabled, run, state_of


async def test_bug_workflow_end_to_end(db, make_actor):
    submitter, dev = await make_actor("sam"), await make_actor("dev")
    _, (case,) = await bug_case(db, submitter, dev)
    assert (await state_of(db, case.id))[:2] == ("open", "ACTIVE")
    assert await enabled(db, case.id) == ["comment", "edit", "resolve"]
    await run(db, dev, case.id, "resolve", comment="fixed in 1.2", resolution="fixed")
    assert (await state_of(db, case.id))[0] == "resolved"
    assert await enabled(db, case.id) == ["close", "comment", "edit", "reopen", "resolve"]
    await run(db, submitter, case.id, "close")
    assert (await state_of(db, case.id))[:2] == ("closed", "COMPLETED")
    assert await enabled(db, case.id) == ["comment", "edit", "reopen"]
    await run(db, submitter, case.id, "reopen")
    assert (await state_of(db, case.id))[:2] == ("open", "ACTIVE")
    assert await enabled(db, case.id) == ["comment", "edit", "resolve"]
    async with db.session() as s:
        log = (await s.scalars(select(Activity).where(Activity.case_id == case.id).order_by(Activity.seq))).all()
    executed = [(a.action, a.data.get("to")) for a in log if a.kind == "action_executed"]
    assert executed == [("open", "open"), ("resolve", "resolved"), ("close", "closed"), ("reopen", "open")]
    resolve = next(a for a in log if a.action == "resolve")
    assert resolve.comment == "fixed in 1.2" and resolve.data["resolution"] == "fixed"
    assert [a.kind for a in log if a.kind.startswith("case_")] == ["case_completed", "case_reopened"]


async def test_enabled_versus_assigned(db, make_actor):
    submitter, dev, stranger = await make_actor("sam"), await make_actor("dev"), await make_actor("eve")
    _, (case,) = await bug_case(db, submitter, dev)
    async with db.session() as s:
        dev_actions = sorted(ea.action for ea in await engine.get_user_actions(s, case_id=case.id, actor=dev))
        assert dev_actions == ["comment", "edit", "resolve"]
        assert sorted(ea.action for ea in await engine.get_user_actions(s, case_id=case.id, actor=submitter)) == [
            "comment",
            "edit",
        ]  # resolve is the assignee's
        assert await engine.get_user_actions(s, case_id=case.id, actor=stranger) == []
        resolve = next(ea for ea in await engine.get_enabled_actions(s, case_id=case.id) if ea.action == "resolve")
        assert resolve.assigned_role == "assignee"  # assigned in "open"
    with pytest.raises(DomainError) as refused:
        await run(db, submitter, case.id, "resolve", resolution="fixed")
    assert refused.value.code == "NOT_ALLOWED"
    await run(db, dev, case.id, "resolve", resolution="fixed")
    async with db.session() as s:
        resolve = next(ea for ea in await engine.get_enabled_actions(s, case_id=case.id) if ea.action == "resolve")
        assert resolve.assigned_role is None  # merely enabled in "resolved": nobody is expected to act
        close = next(ea for ea in await engine.get_enabled_actions(s, case_id=case.id) if ea.action == "close")
        assert close.assigned_role == "submitter"


async def test_an_instance_that_stays_enabled_takes_the_assignment_of_the_new_state(db, make_actor):
    """resolve is merely enabled in "resolved" and assigned in "open": reopening keeps the same
    instance (its timer would keep running) and makes it the assignee's again."""
    submitter, dev = await make_actor("sam"), await make_actor("dev")
    _, (case,) = await bug_case(db, submitter, dev)
    await run(db, dev, case.id, "resolve", resolution="fixed")

    async def resolve_instance():
        async with db.session() as s:
            return next(ea for ea in await engine.get_enabled_actions(s, case_id=case.id) if ea.action == "resolve")

    before = await resolve_instance()
    assert before.assigned_role is None
    await run(db, submitter, case.id, "reopen")
    after = await resolve_instance()
    assert (after.id, after.assigned_role) == (before.id, "assignee")
    async with db.session() as s:
        assert "resolve" in [ea.action for ea in await engine.get_user_actions(s, case_id=case.id, actor=dev)]
        assert "resolve" not in [ea.action for ea in await engine.get_user_actions(s, case_id=case.id, actor=submitter)]


async def test_default_assignment_is_lazy_and_first_non_empty_callback_wins(db, make_actor):
    owner, dev, later = await make_actor("owner"), await make_actor("dev"), await make_actor("later")
    spec = {
        "short_name": "two_step",
        "roles": {
            "worker": {"callbacks": ["subproject_validator", "item_assignee"]},
            "checker": {"callbacks": ["item_assignee"]},
        },
        "states": {"work": {}, "check": {}, "done": {"terminal": True}},
        "actions": {
            "finish": {"assigned_role": "worker", "assigned_states": ["work"], "new_state": "check"},
            "accept": {"assigned_role": "checker", "assigned_states": ["check"], "new_state": "done"},
        },
    }
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=spec)
    _, (case,) = await bug_case(db, owner, dev, workflow="two_step")
    async with db.session() as s:
        ctx = await load_case(s, case_id=case.id)
        # no validator, so the second callback answered; checker is not needed yet
        assert ctx.roles == {"worker": {dev.user_id}}
    async with db.transaction() as s:
        await engine.assign_workflow_item(s, actor=owner, id=ctx.item.id, assignee_id=later.user_id)
    await run(db, dev, case.id, "finish")
    async with db.session() as s:
        ctx = await load_case(s, case_id=case.id)
        assert ctx.roles["checker"] == {later.user_id}  # resolved when needed, from the item as it is now
    await run(db, later, case.id, "accept")


async def test_failures_change_nothing(db, make_actor):
    submitter, dev, stranger = await make_actor("sam"), await make_actor("dev"), await make_actor("eve")
    _, (case,) = await bug_case(db, submitter, dev)
    before = await state_of(db, case.id)
    async with db.session() as s:
        log_before = await s.scalar(select(func.count()).select_from(Activity))
    attempts = [
        (dev, "close", {}, "ACTION_NOT_ENABLED"),
        (dev, "fly", {}, "UNKNOWN_ACTION"),
        (dev, "resolve", {"expected_version": 99}, "VERSION_CONFLICT"),
        (stranger, "resolve", {}, "NOT_FOUND"),
        (dev, "resolve", {"resolution": "fixedd"}, "INVALID_INPUT"),
    ]
    for actor, action, kwargs, code in attempts:
        with pytest.raises(DomainError) as error:
            await run(db, actor, case.id, action, **kwargs)
        assert error.value.code == code, (action, kwargs)
    assert await state_of(db, case.id) == before
    async with db.session() as s:
        assert await s.scalar(select(func.count()).select_from(Activity)) == log_before


async def test_reassignment_with_allowed_parties(db, make_actor):
    owner, dev, other = await make_actor("owner"), await make_actor("dev"), await make_actor("other")
    spec = {
        "short_name": "triage",
        "roles": {"fixer": {"allowed_parties": [dev.user_id]}},
        "states": {"new": {}, "done": {"terminal": True}},
        "actions": {"fix": {"assigned_role": "fixer", "assigned_states": ["new"], "new_state": "done"}},
    }
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=spec)
    _, (case,) = await bug_case(db, owner, owner, workflow="triage")
    async with db.transaction() as s:
        with pytest.raises(DomainError) as error:
            await engine.reassign(s, actor=owner, case_id=case.id, role="fixer", party_ids=[other.user_id])
        assert error.value.code == "PARTY_NOT_ALLOWED"
    async with db.transaction() as s:
        updated = await engine.reassign(s, actor=owner, case_id=case.id, role="fixer", party_ids=[dev.user_id])
        assert updated.version == 1
    async with db.transaction() as s:
        with pytest.raises(DomainError) as error:  # dev plays no role that may reassign, holds no grant
            await engine.reassign(s, actor=other, case_id=case.id, role="fixer", party_ids=[dev.user_id])
        assert error.value.code == "NOT_FOUND"
    await run(db, dev, case.id, "fix")
    assert (await state_of(db, case.id))[1] == "COMPLETED"


async def test_spec_validation_reports_every_problem(db):
    spec = {
        "short_name": "broken",
        "roles": {"r": {"callbacks": ["nope"]}},
        "states": {"a": {}},
        "actions": {
            "i1": {"trigger": "init", "new_state": "a"},
            "i2": {"trigger": "init"},
            "go": {"enabled_states": ["zzz"], "assigned_role": "ghost", "new_state": "b"},
        },
    }
    async with db.transaction() as s:
        with pytest.raises(DomainErrors) as error:
            await engine.define_workflow(s, actor=None, spec=spec)
    fields = {tuple(e.field or []) for e in error.value.errors}
    assert ("spec", "roles", "r", "callbacks") in fields
    assert ("spec", "actions") in fields  # two INIT actions
    assert ("spec", "actions", "i2", "new_state") in fields  # INIT without new state
    assert ("spec", "actions", "go", "enabled_states") in fields
    assert ("spec", "actions", "go", "assigned_role") in fields
    assert ("spec", "actions", "go", "new_state") in fields
    assert {e.code for e in error.value.errors} == {"INVALID_SPEC"}


async def test_define_export_round_trip_and_versions(db, make_actor):
    async with db.transaction() as s:
        bug = await engine.latest_workflow(s, short_name="bug")
        clone_spec = {**bug.spec, "short_name": "bug2"}
        clone = await engine.define_workflow(s, actor=None, spec=clone_spec)
        assert clone.spec == clone_spec and clone.version == 1
        again = await engine.define_workflow(s, actor=None, spec={**clone_spec, "pretty_name": "Bug v2"})
        assert again.version == 2
        explicit = await engine.define_workflow(
            s,
            actor=None,
            spec={
                **clone_spec,
                "actions": {
                    **clone_spec["actions"],
                    "comment": {**clone_spec["actions"]["comment"], "trigger": "user"},
                },
            },
        )
        assert explicit.spec == clone_spec  # defaults are omitted from the export


async def test_running_cases_stay_on_their_version(db, make_actor):
    owner = await make_actor("owner")
    _, (case,) = await bug_case(db, owner, owner)
    async with db.transaction() as s:
        bug = await engine.latest_workflow(s, short_name="bug")
        spec = dict(bug.spec)
        spec["actions"] = {k: v for k, v in spec["actions"].items() if k != "edit"}
        v2 = await engine.define_workflow(s, actor=None, spec=spec)
        assert v2.version == bug.version + 1
    assert "edit" in await enabled(db, case.id)
    async with db.session() as s:
        assert (await s.get(Case, case.id)).workflow_id == bug.id
