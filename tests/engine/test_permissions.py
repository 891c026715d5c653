"""engine/people/permissions.py on its own: which intents each kind of resource has, what a new child
copies from its parent, and the refusal a check gives (NOT_FOUND to whoever may not see the
resource, NOT_ALLOWED to whoever may)."""

import pytest

import engine
from engine.errors import DomainError
from engine.people import permissions
from tests.fixtures.engine import new_subproject


@pytest.mark.parametrize(
    ("prefix", "has", "lacks"),
    [
        ("prj", {"project.view", "project.createSubproject", "project.close"}, {"subproject.view"}),
        ("sub", {"subproject.createWorkflowItem", "subproject.reorderWorkflowItems"}, {"project.view"}),
        ("wfi", {"workflowItem.view", "workflowItem.assign"}, {"workflowItem.close"}),
    ],
)
def test_each_kind_of_resource_has_its_own_intents(prefix, has, lacks):
    from models import new_id

    intents = set(permissions.intents_for(new_id(prefix)))
    assert has <= intents and not lacks & intents
    assert permissions.intents_for(permissions.GLOBAL) == permissions.GLOBAL_INTENTS


async def test_a_new_child_copies_its_parents_grants_mapped_to_its_kind(db, make_actor):
    owner, viewer, builder = await make_actor("owner"), await make_actor("viewer"), await make_actor("builder")
    async with db.transaction() as s:
        project = await engine.create_project(s, actor=owner, display_name="P")
        await permissions.grant_raw(s, resource_id=project.id, intent="project.view", party_id=viewer.user_id)
        await permissions.grant_raw(
            s, resource_id=project.id, intent="project.createSubproject", party_id=builder.user_id
        )
        sub = await engine.create_subproject(
            s, actor=owner, project_id=project.id, display_name="S", currency="EUR", workflow="bug"
        )
        grants = await permissions.grants_of(s, sub.id)
    assert grants["subproject.view"] == sorted([owner.user_id, viewer.user_id])
    # createSubproject has no counterpart on a subproject: the builder gets nothing there.
    assert builder.user_id not in {p for parties in grants.values() for p in parties}
    assert set(grants) == set(permissions.SUBPROJECT_INTENTS)  # the creator holds every intent


@pytest.mark.parametrize(
    ("who", "code"),
    [("viewer", "NOT_ALLOWED"), ("stranger", "NOT_FOUND"), ("player", "NOT_ALLOWED")],
)
async def test_a_refused_check_tells_only_those_who_see_the_item_that_it_exists(db, make_actor, who, code):
    owner = await make_actor("owner")
    actors = {name: await make_actor(name) for name in ("viewer", "stranger", "player")}
    async with db.transaction() as s:
        sub = await new_subproject(s, owner, workflow="bug")
        item, _ = await engine.create_workflow_item(
            s, actor=owner, subproject_id=sub.id, display_name="I", assignee_id=actors["player"].user_id
        )
        await permissions.grant_raw(
            s, resource_id=item.id, intent="workflowItem.view", party_id=actors["viewer"].user_id
        )
    async with db.session() as s:
        with pytest.raises(DomainError) as refused:
            await permissions.require(
                s, actor=actors[who], resource_id=item.id, intent="workflowItem.update", what="workflow item"
            )
        assert refused.value.code == code
        await permissions.require(s, actor=owner, resource_id=item.id, intent="workflowItem.update", what="item")
