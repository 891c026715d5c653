"""insights' ``byRole`` (issue 49, found by review): an execution counts once, under one role of
the party whose right it used, as that party plays roles in the case now, itself or through a
group: the action's own role first, else the first it plays in the workflow's order; null when it
plays none. So a role filled by a group counts its members' executions, someone playing two roles
is not counted twice, a deputy's execution counts under the absent player's role, and the counts
add up to ``executed``; the same on SQLite and PostgreSQL."""

from datetime import timedelta

import engine
from engine.people import deputies, identity
from models import utcnow
from tests.fixtures.insights import T0, reviewed_subproject
from tests.fixtures.jobs import token_of

ACTIONS_BY_ROLE = """query($input: InsightsInput!) { insights(input: $input) {
  actions { action { shortName } executed byRole { role count } } userErrors { code message field } } }"""


async def _case(db, owner, sub_id, reviewers, steps, *, start):
    """A case of ``sub_id`` whose reviewer role is ``reviewers`` (party ids), moved by
    ``steps``: (seconds after its start, the actor, the action)."""
    async with db.transaction() as s:
        _, case = await engine.create_workflow_item(
            s, actor=owner, subproject_id=sub_id, display_name="Request", assignments={"reviewer": reviewers}, now=start
        )
    for offset, actor, action in steps:
        async with db.transaction() as s:
            await engine.execute(s, actor=actor, case_id=case.id, action=action, now=start + timedelta(seconds=offset))


async def test_by_role_counts_each_execution_once_under_the_role_it_was_made_as(db, gql, make_actor):
    owner = await make_actor("owner", admin=True)  # creates every case: the author
    rita, dave = await make_actor("rita"), await make_actor("dave")
    root = await make_actor("root", admin=True)  # plays no role: an admin's executions count under none
    async with db.transaction() as s:
        group = await identity.create_group(s, actor=owner, name="reviewers")
        await identity.add_group_member(s, actor=owner, group_id=group.id, user_id=rita.user_id)
        rita = await identity.actor_for(s, user_id=rita.user_id, login="rita", is_admin=False)  # now with her group
        await deputies.set_deputy(s, actor=rita, deputy_id=dave.user_id, until=utcnow() + timedelta(hours=1))
    author = owner
    sub = await reviewed_subproject(db, owner)
    # The reviewer is a group: rita approves as one of its members.
    await _case(db, author, sub.id, [group.id], [(10, author, "submit"), (20, rita, "approve")], start=T0)
    # The author reviews too: each of her executions counts once, as the action's own role.
    await _case(
        db,
        author,
        sub.id,
        [author.user_id],
        [(10, author, "submit"), (15, author, "note"), (20, author, "send_back"), (30, author, "submit")],
        start=T0 + timedelta(hours=1),
    )
    # dave stands in for rita: his approval counts under the role she plays (through her group).
    await _case(
        db,
        author,
        sub.id,
        [group.id],
        [(10, author, "submit"), (20, dave, "approve"), (30, root, "note")],
        start=T0 + timedelta(hours=2),
    )
    token = await token_of(db, owner.user_id)
    window = {"workflow": "reviewed", "from": T0.isoformat(), "to": (T0 + timedelta(days=1)).isoformat()}
    answer = (await gql(ACTIONS_BY_ROLE, {"input": window}, token=token))["insights"]
    assert answer["userErrors"] == []
    actions = {a["action"]["shortName"]: (a["executed"], a["byRole"]) for a in answer["actions"]}
    assert actions == {
        "start": (3, [{"role": "author", "count": 3}]),  # the INIT action: the first role in the workflow's order
        "submit": (4, [{"role": "author", "count": 4}]),
        "send_back": (1, [{"role": "reviewer", "count": 1}]),
        "approve": (2, [{"role": "reviewer", "count": 2}]),
        "note": (2, [{"role": "author", "count": 1}, {"role": None, "count": 1}]),  # allowed: author first
    }
    for executed, by_role in actions.values():
        assert sum(r["count"] for r in by_role) == executed
