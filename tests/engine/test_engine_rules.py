"""Rules the engine used to break (issue 20, point 7), and specs it used to accept but could not
run (point 8), driven through the engine API."""

import pytest
from sqlalchemy import select

import engine
from engine import registry
from engine.cases.context import load_case
from engine.errors import DomainError
from engine.people import identity, permissions
from engine.spec import workflows
from models import Activity
from tests.fixtures.builders import bug_case, make_admin_actor, run, state_of


async def closed_bug(db, sam, dev):
    """A bug resolved by dev and closed by sam: its case is COMPLETED, in the terminal state."""
    sub, (case,) = await bug_case(db, sam, dev)
    await run(db, dev, case.id, "resolve", resolution="fixed")
    await run(db, sam, case.id, "close")
    return sub, case


async def test_a_closed_item_of_a_closed_subproject_cannot_be_reopened(db, make_actor):
    sam, dev = await make_actor("sam"), await make_actor("dev")
    sub, case = await closed_bug(db, sam, dev)
    async with db.transaction() as s:
        await engine.close_subproject(s, actor=sam, id=sub.id)
    before = await state_of(db, case.id)
    with pytest.raises(DomainError) as refused:
        await run(db, sam, case.id, "reopen")
    assert refused.value.code == "RESOURCE_CLOSED" and "subproject is closed" in refused.value.message
    assert await state_of(db, case.id) == before == ("closed", "COMPLETED", before[2])
    # what keeps the item closed still runs: a comment on a closed bug
    await run(db, sam, case.id, "comment", comment="for the record")
    assert (await state_of(db, case.id))[:2] == ("closed", "COMPLETED")


async def test_a_closed_item_of_an_open_subproject_can_be_reopened(db, make_actor):
    sam, dev = await make_actor("sam"), await make_actor("dev")
    _, case = await closed_bug(db, sam, dev)
    await run(db, sam, case.id, "reopen")
    assert (await state_of(db, case.id))[:2] == ("open", "ACTIVE")


async def test_default_assignees_obey_allowed_parties(db, make_actor):
    owner, inside, outside, member = (
        await make_actor("owner"),
        await make_actor("inside"),
        await make_actor("outside"),
        await make_actor("member"),
    )
    async with db.transaction() as s:
        admin = await make_admin_actor(s)
        group = await identity.create_group(s, actor=admin, name="approvers")
        await identity.add_group_member(s, actor=admin, group_id=group.id, user_id=member.user_id)

    @registry.register_assignee("rules_mixed")
    async def mixed(ctx, role):  # a plugin that knows nothing of the role's allowed parties
        return [outside.user_id, inside.user_id, member.user_id]

    @registry.register_assignee("rules_outsider")
    async def outsider(ctx, role):
        return [outside.user_id]

    spec = {
        "short_name": "guarded",
        "roles": {
            "approver": {"callbacks": ["rules_mixed"], "allowed_parties": [inside.user_id, group.id]},
            "fallback": {"callbacks": ["rules_outsider", "creation_user"], "allowed_parties": [owner.user_id]},
            "nobody": {"callbacks": ["rules_outsider"], "allowed_parties": [inside.user_id]},
        },
        "states": {"open": {}, "done": {"terminal": True}},
        "actions": {
            "approve": {"assigned_role": "approver", "assigned_states": ["open"], "new_state": "done"},
            "note": {"allowed_roles": ["fallback", "nobody"], "always_enabled": True},
        },
    }
    async with db.transaction() as s:
        await workflows.define_workflow(s, actor=None, spec=spec)
    _, (case,) = await bug_case(db, owner, owner, workflow="guarded")
    async with db.session() as s:
        ctx = await load_case(s, case_id=case.id)
        assigned = (
            await s.scalars(select(Activity).where(Activity.case_id == case.id, Activity.kind == "role_assigned"))
        ).all()
    # the outsider is dropped; a member of an allowed group stays
    assert ctx.roles == {"approver": {inside.user_id, member.user_id}, "fallback": {owner.user_id}}
    by_role = {e.data["role"]: (e.data["partyIds"], e.data["by"]) for e in assigned}
    assert by_role == {
        "approver": ([inside.user_id, member.user_id], "rules_mixed"),
        "fallback": ([owner.user_id], "creation_user"),  # the refused callback counted as empty
    }  # and "nobody" stays empty: its only callback named no allowed party


async def history_of(db, resource_id):
    async with db.session() as s:
        rows = (
            await s.scalars(
                select(Activity)
                .where(Activity.kind.in_(["permission_granted", "permission_revoked"]))
                .where(
                    (Activity.project_id == resource_id)
                    | (Activity.subproject_id == resource_id)
                    | (Activity.workflow_item_id == resource_id)
                )
                .order_by(Activity.seq)
            )
        ).all()
    return [(e.kind, e.actor_id, e.data) for e in rows]


async def test_grants_and_revocations_are_logged_once(db, make_actor):
    owner, bob = await make_actor("owner"), await make_actor("bob")
    async with db.transaction() as s:
        project = await engine.create_project(s, actor=owner, display_name="P")
        await permissions.grant(s, actor=owner, resource_id=project.id, intent="project.view", party_id=bob.user_id)
    async with db.transaction() as s:  # already held: nothing changes, nothing is logged
        await permissions.grant(s, actor=owner, resource_id=project.id, intent="project.view", party_id=bob.user_id)
    async with db.transaction() as s:
        await permissions.revoke(s, actor=owner, resource_id=project.id, intent="project.view", party_id=bob.user_id)
    async with db.transaction() as s:  # no longer held: nothing to revoke
        await permissions.revoke(s, actor=owner, resource_id=project.id, intent="project.view", party_id=bob.user_id)
    view = {"intent": "project.view", "partyId": bob.user_id}
    assert await history_of(db, project.id) == [
        ("permission_granted", owner.user_id, view),
        ("permission_revoked", owner.user_id, view),
    ]
    async with db.transaction() as s:
        await permissions.grant(
            s, actor=owner, resource_id=project.id, intent="project.createSubproject", party_id=bob.user_id
        )
        # a new subproject copies the project's grants (bob's included): not a grant by anyone
        sub = await engine.create_subproject(s, actor=owner, project_id=project.id, display_name="S", currency="EUR")
    assert await history_of(db, sub.id) == []
    entries = await history_of(db, project.id)
    assert entries[-1] == (
        "permission_granted",
        owner.user_id,
        {"intent": "project.createSubproject", "partyId": bob.user_id},
    )


async def test_an_unknown_action_is_named_as_such(db, make_actor):
    sam, dev = await make_actor("sam"), await make_actor("dev")
    _, (case,) = await bug_case(db, sam, dev)
    with pytest.raises(DomainError) as unknown:
        await run(db, dev, case.id, "fly")
    assert unknown.value.code == "UNKNOWN_ACTION" and unknown.value.field == ["action"]
    assert unknown.value.message == (
        "The workflow 'bug' has no action 'fly'; its actions: open, comment, edit, resolve, close, reopen."
    )
    with pytest.raises(DomainError) as not_now:
        await run(db, dev, case.id, "close")  # exists, not enabled in "open"
    assert not_now.value.code == "ACTION_NOT_ENABLED"


@pytest.mark.parametrize(
    ("count", "ending"),
    [(20, "a18, a19."), (21, "a19 and 1 more."), (25, "a19 and 5 more.")],  # 20 named at most
)
async def test_the_unknown_action_message_is_bounded(db, make_actor, count, ending):
    owner = await make_actor("owner")
    spec = {
        "short_name": "wide",
        "states": {"open": {}, "done": {"terminal": True}},
        "actions": {f"a{i:02}": {"always_enabled": True} for i in range(count)},
    }
    spec["actions"]["a00"]["new_state"] = "done"
    async with db.transaction() as s:
        await workflows.define_workflow(s, actor=None, spec=spec)
    _, (case,) = await bug_case(db, owner, owner, workflow="wide")
    with pytest.raises(DomainError) as unknown:
        await run(db, owner, case.id, "x" * 500)
    message = unknown.value.message
    assert message.endswith(ending) and "a20" not in message and len(message) < 300


CHILD_SPECS = [  # each mistake in a parent's keys: (action, key the error names, words of its message)
    ({"trigger": "parallel", "enabled_states": ["open"]}, "children", "Parallel action 'poll' needs children"),
    ({"trigger": "dynamic", "enabled_states": ["open"], "children": {"c": {}}}, "for_each", "needs for_each"),
    ({"enabled_states": ["open"], "children": {"yes": {"always_enabled": True}}}, "children", "it is a user action"),
    ({"enabled_states": ["open"], "states": {"voting": {}}}, "states", "only workflow, parallel and dynamic"),
    ({"enabled_states": ["open"], "for_each": {"role": "voter"}}, "for_each", "only workflow, parallel"),
]


@pytest.mark.parametrize(("action", "key", "words"), CHILD_SPECS)
async def test_mistakes_in_child_workflow_keys_are_refused(db, action, key, words):
    """Child workflows run (issue 21); a spec that misuses their keys is refused, naming the key
    (the full table, over GraphQL: tests/api/test_child_workflows_api.py)."""
    spec = {"short_name": "nested", "states": {"open": {}}, "actions": {"poll": action}}
    with pytest.raises(DomainError) as refused:
        async with db.transaction() as s:
            await workflows.define_workflow(s, actor=None, spec=spec)
    errors = [(e.code, e.field, e.message) for e in refused.value.errors]
    assert errors[0][:2] == ("INVALID_SPEC", ["spec", "actions", "poll", key]), errors
    assert words in errors[0][2], errors
    async with db.session() as s:
        with pytest.raises(DomainError):
            await workflows.latest_workflow(s, short_name="nested")  # nothing was defined
