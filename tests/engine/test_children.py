"""engine/cases/children.py through the engine API: enabling a parent starts its children (a
``parallel`` parent all of them at once, each ``workflow`` child its own FSM in its initial
state); a child's completion settles its parent, which fires once, as the system, when its
condition holds (by default: every member done), its entry saying why; a per_role dynamic
parent makes one instance for the whole role."""

import pytest
from sqlalchemy import select

import engine
from engine.errors import DomainError
from engine.people import permissions
from models import Activity, CaseState, EnabledAction
from tests.fixtures.builders import run, state_of
from tests.fixtures.child_workflows import REVIEW
from tests.fixtures.engine import new_subproject


@pytest.fixture
async def review(db, make_actor):
    lawyer = await make_actor("lawyer")
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=REVIEW)
        sub = await new_subproject(s, lawyer, workflow="rev_op")
        _, case = await engine.create_workflow_item(s, actor=lawyer, subproject_id=sub.id, display_name="Contract")
    return lawyer, case


async def tree(db, case_id):
    """{action: (status, parent action or None, its FSM state or None)} of the case's instances."""
    async with db.session() as s:
        rows = (await s.scalars(select(EnabledAction).where(EnabledAction.case_id == case_id))).all()
        states = dict(
            (await s.execute(select(CaseState.scope, CaseState.state).where(CaseState.case_id == case_id))).all()
        )
    by_id = {row.id: row for row in rows}
    return {
        row.action: (row.status, by_id[row.parent_id].action if row.parent_id else None, states.get(row.id))
        for row in rows
    }


async def test_a_parallel_parent_starts_every_child_and_each_workflow_child_its_fsm(db, review):
    _, case = review
    assert await tree(db, case.id) == {
        "rev_and_op": ("ENABLED", None, None),
        "review_wr": ("ENABLED", "rev_and_op", "rev_open"),  # started in its init child's state
        "opinion_wr": ("ENABLED", "rev_and_op", "opi_open"),
        "review": ("ENABLED", "review_wr", None),
        "opinion": ("ENABLED", "opinion_wr", None),
    }


async def test_the_parent_fires_once_as_the_system_when_its_last_child_is_done(db, review):
    lawyer, case = review
    await run(db, lawyer, case.id, "review")
    after_one = await tree(db, case.id)
    assert after_one["review_wr"] == ("COMPLETED", "rev_and_op", "rev_done")  # its FSM finished: done
    assert after_one["rev_and_op"][0] == "ENABLED" and (await state_of(db, case.id))[0] == "open"
    await run(db, lawyer, case.id, "opinion")
    done = await tree(db, case.id)
    assert done["rev_and_op"][0] == "COMPLETED"
    assert (done["review_wr"][0], done["opinion_wr"][0]) == ("COMPLETED", "COMPLETED")
    assert (await state_of(db, case.id))[:2] == ("done", "COMPLETED")
    async with db.session() as s:
        fired = (
            await s.scalars(select(Activity).where(Activity.case_id == case.id, Activity.action == "rev_and_op"))
        ).all()
    assert len(fired) == 1 and fired[0].actor_id == "system"
    assert fired[0].data["condition"] == {"all": "done", "count": 2, "of": 2}
    assert fired[0].data["children"] == {"completed": 2, "canceled": 0}  # both reviews, done before the parent fired


async def test_a_per_role_dynamic_parent_makes_one_instance_for_the_whole_role(db, make_actor):
    owner, second = await make_actor("owner"), await make_actor("second")
    spec = {
        "short_name": "sign_off",
        "roles": {"board": {"static_parties": [owner.user_id, second.user_id]}},
        "states": {"open": {}, "signed": {"terminal": True}},
        "actions": {
            "collect": {
                "trigger": "dynamic",
                "enabled_states": ["open"],
                "new_state": "signed",
                "for_each": {"role": "board", "mapping": "per_role"},
                "children": {"sign": {}},
            }
        },
    }
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=spec)
        sub = await new_subproject(s, owner, workflow="sign_off")
        _, case = await engine.create_workflow_item(s, actor=owner, subproject_id=sub.id, display_name="Minutes")
    async with db.session() as s:
        signs = (
            await s.scalars(
                select(EnabledAction).where(EnabledAction.case_id == case.id, EnabledAction.action == "sign")
            )
        ).all()
    assert [(i.assigned_role, i.assignee_party_id, i.status) for i in signs] == [("board", None, "ENABLED")]
    outsider = await make_actor("outsider")  # may view the item, plays no role
    async with db.transaction() as s:
        await permissions.grant_raw(
            s, resource_id=case.object_id, intent="workflowItem.view", party_id=outsider.user_id
        )
    with pytest.raises(DomainError) as refused:
        await run(db, outsider, case.id, "sign")
    assert refused.value.code == "NOT_ALLOWED"
    await run(db, second, case.id, "sign")  # any board member may take it (was NOT_ALLOWED: only the
    # spec's assigned role was asked, and a per_role child's role is its instance's)
    assert (await state_of(db, case.id))[:2] == ("signed", "COMPLETED")
