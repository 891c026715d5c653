"""Roles through groups, privileges, pick lists, and assignee callbacks from plugins."""

import pytest

import engine
from engine import registry
from engine.errors import DomainError
from engine.people import identity, permissions
from tests.fixtures.builders import bug_case, make_admin_actor, run
from tests.fixtures.engine import new_subproject


async def test_group_plays_a_role_and_privileges_permit(db, make_actor):
    owner, carol, dave = await make_actor("owner"), await make_actor("carol"), await make_actor("dave")
    async with db.transaction() as s:
        admin = await make_admin_actor(s)
        group = await identity.create_group(s, actor=admin, name="reviewers")
        await identity.add_group_member(s, actor=admin, group_id=group.id, user_id=carol.user_id)
        sub = await new_subproject(s, owner, workflow="approval", validator_id=group.id)
        item, case = await engine.create_workflow_item(s, actor=owner, subproject_id=sub.id, display_name="Buy")
    await run(db, owner, case.id, "submit")
    async with db.session() as s:
        carol_now = await identity.actor_by_login(s, "carol")  # party_ids include the group
        assert [ea.action for ea in await engine.get_user_actions(s, case_id=case.id, actor=carol_now)] == [
            "comment",
            "start_review",
        ]
    await run(db, carol_now, case.id, "start_review")
    result = await run(db, carol_now, case.id, "reject", resolution="too_expensive")
    assert result.case.status == "COMPLETED" and result.activity.data["resolution"] == "too_expensive"
    # dave plays no role; a privilege on the item would let him comment, but approval's actions list none.
    async with db.transaction() as s:
        await permissions.grant_raw(s, resource_id=item.id, intent="workflowItem.view", party_id=dave.user_id)
    with pytest.raises(DomainError) as error:
        await run(db, dave, case.id, "comment")
    assert error.value.code == "NOT_ALLOWED"


async def test_privileges_allow_an_action(db, make_actor):
    owner, dave = await make_actor("owner"), await make_actor("dave")
    spec = {
        "short_name": "memo",
        "roles": {"author": {"callbacks": ["creation_user"]}},
        "states": {"open": {}, "filed": {"terminal": True}},
        "actions": {
            "annotate": {"allowed_roles": ["author"], "privileges": ["workflowItem.update"], "always_enabled": True},
            "file": {"allowed_roles": ["author"], "enabled_states": ["open"], "new_state": "filed"},
        },
    }
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=spec)
    _, (case,) = await bug_case(db, owner, owner, workflow="memo")
    async with db.transaction() as s:
        from models import Case

        item_id = (await s.get(Case, case.id)).object_id
        for intent in ("workflowItem.view", "workflowItem.update"):
            await permissions.grant_raw(s, resource_id=item_id, intent=intent, party_id=dave.user_id)
    result = await run(db, dave, case.id, "annotate", comment="seen")
    assert result.activity.comment == "seen"


async def test_pick_list_prefers_players_in_other_cases(db, make_actor):
    owner, dev, dev2 = await make_actor("owner"), await make_actor("dev"), await make_actor("dev2")
    await bug_case(db, owner, dev, items=2)
    _, (other,) = await bug_case(db, owner, dev2)
    async with db.session() as s:
        from models import Case

        assert await engine.pick_list(s, actor=owner, case=await s.get(Case, other.id), role="assignee") == [
            dev.user_id
        ]


async def test_pick_list_names_the_most_frequent_players_first_ties_by_id(db, make_actor):
    """Five candidates who played "assignee" in 3, 2, 1, 1 and 0 other bug cases: the list
    is ordered by how often, then by party id; one who never played is not named."""
    owner = await make_actor("owner")
    devs = [await make_actor(f"dev{i}") for i in range(5)]
    for dev, times in zip(devs, (3, 2, 1, 1, 0), strict=True):
        if times:
            await bug_case(db, owner, dev, items=times)
    _, (target,) = await bug_case(db, owner, owner)
    ties = sorted([devs[2].user_id, devs[3].user_id])
    async with db.session() as s:
        from models import Case

        case = await s.get(Case, target.id)
        assert await engine.pick_list(s, actor=owner, case=case, role="assignee") == [
            devs[0].user_id,
            devs[1].user_id,
            *ties,
        ]
        assert await engine.pick_list(s, actor=owner, case=case, role="assignee", limit=2) == [
            devs[0].user_id,
            devs[1].user_id,
        ]


async def test_pick_list_ranks_the_players_of_the_newest_cases_only(db, make_actor):
    """dev0 played "assignee" in three older cases, dev1 in two newer ones: ranked from the
    two newest other cases, dev0 (the most frequent over all) is not named at all."""
    owner, dev0, dev1 = await make_actor("owner"), await make_actor("dev0"), await make_actor("dev1")
    await bug_case(db, owner, dev0, items=3)
    await bug_case(db, owner, dev1, items=2)
    _, (target,) = await bug_case(db, owner, owner)
    async with db.session() as s:
        from models import Case

        case = await s.get(Case, target.id)
        assert await engine.pick_list(s, actor=owner, case=case, role="assignee", recent=2) == [dev1.user_id]
        assert await engine.pick_list(s, actor=owner, case=case, role="assignee", recent=5) == [
            dev0.user_id,
            dev1.user_id,
        ]


async def test_plugin_assignee_callback(db, make_actor):
    owner, boss = await make_actor("owner"), await make_actor("boss")

    @registry.register_assignee("the_boss")
    async def the_boss(ctx, role):  # what a plugin's entry point would provide
        return [boss.user_id]

    spec = {
        "short_name": "escalate",
        "roles": {"approver": {"callbacks": ["the_boss"]}},
        "states": {"open": {}, "done": {"terminal": True}},
        "actions": {"approve": {"assigned_role": "approver", "assigned_states": ["open"], "new_state": "done"}},
    }
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=spec)
    _, (case,) = await bug_case(db, owner, owner, workflow="escalate")
    assert (await run(db, boss, case.id, "approve")).case.status == "COMPLETED"
