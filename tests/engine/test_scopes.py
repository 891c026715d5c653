"""engine/cases/scopes.py through the engine API: a dynamic parent with ``states`` owns one scope row
per party (trigger ``scope``, assigned to that party), each with its own FSM state (a
``case_state`` row) and its own child instances; when the parent fires or is disabled, what
runs below it is closed: a scope row whose FSM reached a terminal state COMPLETED, everything
else CANCELED, and the parent's entry counts them."""

import pytest
from sqlalchemy import select

import engine
from engine.people import identity
from models import Activity, CaseState, EnabledAction
from tests.fixtures.builders import run, state_of
from tests.fixtures.child_workflows import tip
from tests.fixtures.engine import new_subproject


@pytest.fixture
async def ballot(db, make_actor):
    """The TIP vote among three users (through a group), each with a scope of their own: two
    thirds approving accept, more than a third rejecting reject, the submitter may withdraw."""
    admin, submitter = await make_actor("admin", admin=True), await make_actor("submitter")
    voters = [await make_actor(name) for name in ("v1", "v2", "v3")]
    async with db.transaction() as s:
        group = await identity.create_group(s, actor=admin, name="voters")
        for voter in voters:
            await identity.add_group_member(s, actor=admin, group_id=group.id, user_id=voter.user_id)
        await engine.define_workflow(s, actor=None, spec=tip(group.id))
        sub = await new_subproject(s, submitter, workflow="tip_vote")
        _, case = await engine.create_workflow_item(s, actor=submitter, subproject_id=sub.id, display_name="TIP 7")
        voters = [await identity.actor_for(s, user_id=v.user_id, login=v.login, is_admin=False) for v in voters]
    return submitter, voters, case


async def rows_of(db, case_id):
    async with db.session() as s:
        instances = (await s.scalars(select(EnabledAction).where(EnabledAction.case_id == case_id))).all()
        states = dict(
            (await s.execute(select(CaseState.scope, CaseState.state).where(CaseState.case_id == case_id))).all()
        )
    return instances, states


def scope_rows(instances):
    """{assignee: scope row} of the dynamic parent's per-party scopes."""
    return {i.assignee_party_id: i for i in instances if i.trigger == "scope"}


async def approve(db, case_id, voter):
    """The voter approves in their own scope (named by its enabled-action id)."""
    instances, _ = await rows_of(db, case_id)
    row = scope_rows(instances)[voter.user_id]
    instance = next(i for i in instances if i.scope == row.id and i.action == "approve")
    return await run(db, voter, case_id, "approve", enabled_action_id=instance.id)


def inside(instances, row):
    """{action: status} of the instances in one scope row's FSM."""
    return {i.action: i.status for i in instances if i.scope == row.id}


async def test_a_dynamic_parent_with_states_owns_a_scope_row_and_an_fsm_per_party(db, ballot):
    _, voters, case = ballot
    instances, states = await rows_of(db, case.id)
    (parent,) = [i for i in instances if i.action == "all_votes" and i.trigger != "scope"]
    rows = scope_rows(instances)
    assert sorted(rows) == sorted(v.user_id for v in voters)
    for voter in voters:
        row = rows[voter.user_id]
        assert (row.action, row.parent_id, row.scope, row.status) == ("all_votes", parent.id, parent.id, "ENABLED")
        assert row.assigned_role is None  # the party's own, not the whole role's
        assert states[row.id] == "voting"  # its own FSM, started in the child workflow's initial state
        assert inside(instances, row) == {"approve": "ENABLED", "reject": "ENABLED"}
        assert {i.assignee_party_id for i in instances if i.scope == row.id} == {voter.user_id}
    assert states[""] == "open" and parent.id not in states  # the parent itself keeps no state


async def test_one_partys_action_moves_only_that_partys_scope(db, ballot):
    _, (v1, v2, v3), case = ballot
    instances, _ = await rows_of(db, case.id)
    rows = scope_rows(instances)
    await approve(db, case.id, v1)
    instances, states = await rows_of(db, case.id)
    assert [states[rows[v.user_id].id] for v in (v1, v2, v3)] == ["approved", "voting", "voting"]
    assert inside(instances, rows[v1.user_id]) == {"approve": "COMPLETED", "reject": "CANCELED"}
    assert inside(instances, rows[v2.user_id]) == {"approve": "ENABLED", "reject": "ENABLED"}
    assert (await state_of(db, case.id))[0] == "open"  # 1 of 3: no condition holds yet


async def test_when_the_parent_fires_finished_scopes_complete_and_the_rest_is_canceled(db, ballot):
    _, (v1, v2, v3), case = ballot
    instances, _ = await rows_of(db, case.id)
    rows = scope_rows(instances)
    for voter in (v1, v2):
        last = await approve(db, case.id, voter)
    instances, _ = await rows_of(db, case.id)
    statuses = {i.id: i.status for i in instances}
    assert [statuses[rows[v.user_id].id] for v in (v1, v2, v3)] == ["COMPLETED", "COMPLETED", "CANCELED"]
    assert inside(instances, rows[v3.user_id]) == {"approve": "CANCELED", "reject": "CANCELED"}
    assert (await state_of(db, case.id))[:2] == ("accepted", "COMPLETED")
    async with db.session() as s:
        fired = await s.scalar(select(Activity).where(Activity.case_id == case.id, Activity.action == "all_votes"))
    assert fired.actor_id == "system" and fired.data["output"] == "yes"
    assert fired.data["children"] == {"completed": 2, "canceled": 1}  # v3's vote: its actions inside are not counted
    assert fired.data["condition"]["count"] == 2 and fired.data["condition"]["of"] == 3
    assert last.activity.action == "approve"


async def test_a_parent_disabled_by_another_action_closes_every_scope_below_it(db, ballot):
    submitter, (v1, v2, v3), case = ballot
    instances, _ = await rows_of(db, case.id)
    rows = scope_rows(instances)
    await approve(db, case.id, v1)
    withdrawn = await run(db, submitter, case.id, "withdraw")
    assert withdrawn.activity.data["canceled"] == ["all_votes"]
    # v1's scope had finished (approved): completed; v2's and v3's rows and their 4 instances: canceled.
    assert withdrawn.activity.data["closedChildren"] == 7
    instances, _ = await rows_of(db, case.id)
    statuses = {i.id: i.status for i in instances}
    assert [statuses[rows[v.user_id].id] for v in (v1, v2, v3)] == ["COMPLETED", "CANCELED", "CANCELED"]
    assert [i for i in instances if i.status == "ENABLED"] == []
    assert (await state_of(db, case.id))[:2] == ("rejected", "COMPLETED")
