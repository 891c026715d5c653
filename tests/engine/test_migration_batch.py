"""engine/migration/migration_batch.py: the set-based real run leaves every case exactly as the engine's
transitions would (engine/migration/migration_moves.py, the path it stands in for), costs the same few
statements whatever the batch's size, and falls back to moving case by case when the database
refuses the batch."""

from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

import engine
from engine.migration import migration, migration_batch
from models import Activity, Case, CaseState, EnabledAction, TaskAssignment, Workflow, WorkflowItem
from tests.fixtures.versions import PERMIT_V1, permit_v2

T0 = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
LATER = T0 + timedelta(minutes=30)
ROLES = {"clerk": {"callbacks": ["creation_user"]}, "reviewer": {"callbacks": ["creation_user"]}}


async def permit_subproject(db, owner, name, *, drafts, in_review):
    """A subproject of permit v1 cases: ``drafts`` in `draft`, ``in_review`` submitted at T0."""
    async with db.transaction() as s:
        project = await engine.create_project(s, actor=owner, display_name=name)
        sub = await engine.create_subproject(
            s,
            actor=owner,
            project_id=project.id,
            display_name=name,
            currency="EUR",
            workflow="permit",
            workflow_version=1,
        )
    for n in range(drafts + in_review):
        async with db.transaction() as s:
            _, case = await engine.create_workflow_item(s, actor=owner, subproject_id=sub.id, display_name=f"I{n}")
            if n >= drafts:
                await engine.execute(s, actor=owner, action="submit", case_id=case.id, now=T0)
    return sub.id


async def define_versions(db):
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=PERMIT_V1 | {"roles": ROLES})
        await engine.define_workflow(s, actor=None, spec=permit_v2() | {"roles": ROLES})


async def migrate(db, owner, sub, policy, **kwargs):
    async with db.transaction() as s:
        return await migration.migrate_cases(
            s,
            actor=owner,
            workflow="permit",
            to_version=2,
            state_map=[("review", "checking")],
            timer_policy=policy,
            subproject_id=sub,
            now=LATER,
            **kwargs,
        )


async def picture(db, sub):
    """Every case of the subproject as a user would see it, ids aside, in item-name order."""
    async with db.session() as s:
        cases = (
            await s.execute(
                select(WorkflowItem.display_name, Case, Workflow.version)
                .join(Case, Case.object_id == WorkflowItem.id)
                .join(Workflow, Workflow.id == Case.workflow_id)
                .where(WorkflowItem.subproject_id == sub)
                .order_by(WorkflowItem.display_name)
            )
        ).all()
        seen = []
        for name, case, version in cases:
            states = dict(
                (await s.execute(select(CaseState.scope, CaseState.state).where(CaseState.case_id == case.id))).all()
            )
            instances = sorted(
                (
                    ea.action,
                    ea.status,
                    ea.trigger,
                    ea.assigned_role,
                    ea.fire_at,
                    _instant(ea.enabled_at),
                    ea.completed_at,
                )
                for ea in await s.scalars(select(EnabledAction).where(EnabledAction.case_id == case.id))
            )
            tasks = sorted(
                (
                    await s.execute(
                        select(TaskAssignment.party_id, EnabledAction.action)
                        .join(EnabledAction, EnabledAction.id == TaskAssignment.enabled_action_id)
                        .where(TaskAssignment.case_id == case.id)
                    )
                ).all()
            )
            log = [
                (entry.kind, entry.data)
                for entry in await s.scalars(
                    select(Activity).where(Activity.case_id == case.id, Activity.kind == "case_migrated")
                )
            ]
            seen.append((name, version, case.version, case.status, states, instances, tasks, log))
        return seen


def _instant(at):
    """T0 and LATER as they are; the wall clock's instants (an item's creation) as one."""
    return at if at in (T0, LATER) else "created"


@pytest.mark.parametrize("policy", ["KEEP", "RESTART"])
async def test_the_set_based_run_leaves_each_case_as_the_transitions_would(db, make_actor, policy):
    owner = await make_actor("owner", admin=True)
    await define_versions(db)
    batched = await permit_subproject(db, owner, "batched", drafts=2, in_review=3)
    one_by_one = await permit_subproject(db, owner, "one_by_one", drafts=2, in_review=3)
    settled = []
    real_settle = migration_batch.settle

    def spy(*args):
        move = real_settle(*args)
        settled.append(move is not None)
        return move

    with mock.patch.object(migration_batch, "settle", spy):
        result = await migrate(db, owner, batched, policy)
    assert (result.migrated, settled) == (5, [True] * 5)  # every case written set-based
    with mock.patch.object(migration_batch, "settle", lambda *args: None):
        assert (await migrate(db, owner, one_by_one, policy)).migrated == 5
    expected = await picture(db, one_by_one)
    assert await picture(db, batched) == expected
    # And what they show: a submitted case is in `checking`, `decide` canceled for `approve`.
    _, version, _, status, states, instances, tasks, log = expected[-1]
    assert (version, status, states) == (2, "ACTIVE", {"": "checking"})
    due = T0 + timedelta(hours=2) if policy == "KEEP" else LATER + timedelta(hours=4)
    assert ("expire", "ENABLED", "time", None, due, T0, None) in instances
    assert ("decide", "CANCELED", "user", "reviewer", None, T0, LATER) in instances
    assert ("approve", "ENABLED", "user", "reviewer", None, LATER, None) in instances
    assert [action for _, action in tasks] == ["approve", "reject"]
    assert log[0][1]["canceled"] == ["decide"] and log[0][1]["enabled"] == ["approve"]


async def test_a_batch_costs_the_same_statements_whatever_its_size(db, make_actor, count_statements):
    owner = await make_actor("owner", admin=True)
    await define_versions(db)
    small = await permit_subproject(db, owner, "small", drafts=1, in_review=2)
    large = await permit_subproject(db, owner, "large", drafts=4, in_review=8)
    counts = []
    for sub, size in ((small, 3), (large, 12)):
        with count_statements() as counter:
            assert (await migrate(db, owner, sub, "KEEP")).migrated == size
        # The log writer's reads of the chains' heads are its own (engine/history/activity.py: one round
        # trip for them all on PostgreSQL, one per item on SQLite); the rest is the migration's.
        counts.append(len([text for text in counter.statements if "FROM activity" not in text]))
    # 22: two of them close and open the moved cases' state visits (engine/history/visits.py).
    assert counts[0] == counts[1] <= 22


async def test_a_batch_the_database_refuses_moves_case_by_case(db, make_actor):
    owner = await make_actor("owner", admin=True)
    await define_versions(db)
    sub = await permit_subproject(db, owner, "refused", drafts=1, in_review=2)
    real_write = migration_batch._write

    async def failing(session, *args):
        await real_write(session, *args)  # written and logged, then refused: all of it must go
        raise IntegrityError("INSERT", {}, Exception("refused"))

    with mock.patch.object(migration_batch, "_write", failing):
        result = await migrate(db, owner, sub, "KEEP")
    assert (result.migrated, result.refused) == (3, 0)
    pictures = await picture(db, sub)
    assert [(states, len(log)) for _, _, _, _, states, _, _, log in pictures] == [
        ({"": "draft"}, 1),
        ({"": "checking"}, 1),
        ({"": "checking"}, 1),
    ]
    assert all(case_version == 2 for _, _, case_version, *_ in pictures[1:])


async def test_a_batch_moves_its_plain_cases_set_based_and_the_others_through_the_transitions(db, make_actor):
    """v2 approves a case in `checking` at once (an AUTO action): the submitted cases must go
    through the transitions (it fires), the drafts are written set-based, all in one call."""
    owner = await make_actor("owner", admin=True)
    v2 = permit_v2() | {"roles": ROLES}
    v2["actions"]["fast_track"] = {"trigger": "auto", "enabled_states": ["checking"], "new_state": "approved"}
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=PERMIT_V1 | {"roles": ROLES})
    sub = await permit_subproject(db, owner, "mixed", drafts=2, in_review=2)
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=v2)
    settled = []
    real_settle = migration_batch.settle

    def spy(*args):
        move = real_settle(*args)
        settled.append(move is not None)
        return move

    with mock.patch.object(migration_batch, "settle", spy):
        result = await migrate(db, owner, sub, "KEEP")
    assert (result.migrated, result.refused, sorted(settled)) == (4, 0, [False, False, True, True])
    async with db.session() as s:
        fired = set(await s.scalars(select(Activity.action).where(Activity.kind == "action_executed")))
    assert "fast_track" in fired
    seen = [
        (states, status, [kind for kind, _ in log]) for _, _, _, status, states, _, _, log in await picture(db, sub)
    ]
    assert seen == [
        ({"": "draft"}, "ACTIVE", ["case_migrated"]),
        ({"": "draft"}, "ACTIVE", ["case_migrated"]),
        ({"": "approved"}, "COMPLETED", ["case_migrated"]),
        ({"": "approved"}, "COMPLETED", ["case_migrated"]),
    ]
