"""Deputies (issue 38, point 1) at their edges, over HTTP: executeAction picks a deputy's instance
of an action enabled several times as myTasks lists them (their own first, then on behalf), and a
disabled absent user or deputy lends nothing, decided when read and executed like the period."""

import pytest

from engine.people import deputies
from tests.fixtures.builders import bug_item
from tests.fixtures.child_workflows import case_of, define, new_item
from tests.fixtures.deputies import (
    DEPUTIES_OF,
    EXECUTE_AS_DEPUTY,
    HEARD,
    HOUR,
    T0,
    name_deputy,
    resolve,
    subproject_of,
    tasks,
    visible,
)
from tests.fixtures.documents import CREATE_ITEM, SET_DISABLED

pytestmark = pytest.mark.usefixtures("clock")

# One vote instance per voter, each its voter's alone.
VOTE = {
    "short_name": "absent_vote",
    "roles": {"author": {"callbacks": ["creation_user"]}, "voters": {}},
    "states": {"open": {}, "done": {"terminal": True}},
    "actions": {
        "poll": {
            "trigger": "dynamic",
            "enabled_states": ["open"],
            "new_state": "done",
            "timeout_seconds": 30 * 24 * 3600,
            "for_each": [{"role": "voters", "mapping": "per_user"}],
            "children": {"vote": {}},
        }
    },
}


async def vote(gql, token, item):
    done = await gql(EXECUTE_AS_DEPUTY, {"input": {"workflowItemId": item["id"], "action": "vote"}}, token=token)
    return done["executeAction"]


async def voters_left(gql, token, item):
    case = await case_of(gql, token, item)
    return sorted(
        a["login"] for e in case["enabledActions"] if e["action"]["shortName"] == "vote" for a in e["assignees"]
    )


async def test_without_enabled_action_id_a_deputy_performs_their_own_instance_then_the_absent_users(gql, make_user):
    """Bob votes himself and stands in for u1, dora for u2. In one case dora votes first, in the
    other bob twice: whatever order the instances are read in, each vote is the right one."""
    _, root = await make_user("root", admin=True)
    _, alice = await make_user("alice")
    u1_id, u1 = await make_user("u1")
    u2_id, u2 = await make_user("u2")
    bob_id, bob = await make_user("bob")
    dora_id, dora = await make_user("dora")
    _, carol = await make_user("carol")
    await define(gql, root, VOTE)
    assert (await name_deputy(gql, u1, bob_id, until=T0 + HOUR))["userErrors"] == []
    assert (await name_deputy(gql, u2, dora_id, until=T0 + HOUR))["userErrors"] == []
    first, second = [await new_item(gql, alice, "absent_vote", voters=[u1_id, bob_id, u2_id]) for _ in range(2)]
    listed = sorted((a, str(behalf)) for a, _, behalf in await tasks(gql, bob))
    assert listed == [("vote", "None")] * 2 + [("vote", "{'login': 'u1'}")] * 2

    async def votes(token, item, behalf, left):
        done = await vote(gql, token, item)
        assert done["userErrors"] == []
        assert done["activity"]["onBehalfOf"] == behalf and done["activity"]["action"] == "vote"
        assert await voters_left(gql, alice, item) == left

    await votes(dora, first, {"login": "u2"}, ["bob", "u1"])
    await votes(bob, first, None, ["u1"])  # his own first
    await votes(bob, first, {"login": "u1"}, [])
    await votes(bob, second, None, ["u1", "u2"])
    await votes(bob, second, {"login": "u1"}, ["u2"])
    # Nothing of u2's is bob's, and carol stands in for nobody: neither may vote.
    assert (await vote(gql, bob, second))["userErrors"][0]["code"] == "NOT_ALLOWED"
    assert (await vote(gql, carol, second))["userErrors"][0]["code"] == "NOT_FOUND"
    await votes(dora, second, {"login": "u2"}, [])


async def test_a_deputy_of_two_absent_voters_must_still_name_the_instance(gql, make_user):
    _, root = await make_user("root", admin=True)
    _, alice = await make_user("alice")
    u1_id, u1 = await make_user("u1")
    u2_id, u2 = await make_user("u2")
    u3_id, _ = await make_user("u3")
    bob_id, bob = await make_user("bob")
    await define(gql, root, VOTE)
    item = await new_item(gql, alice, "absent_vote", voters=[u1_id, u2_id, u3_id])
    for absent in (u1, u2):
        assert (await name_deputy(gql, absent, bob_id, until=T0 + HOUR))["userErrors"] == []
    [error] = (await vote(gql, bob, item))["userErrors"]
    assert (error["code"], error["field"]) == ("AMBIGUOUS_ACTION", ["enabledActionId"])
    case = await case_of(gql, alice, item)
    lent = {e["assignees"][0]["login"]: e["id"] for e in case["enabledActions"] if e["action"]["shortName"] == "vote"}
    assert lent["u1"] in error["message"] and lent["u2"] in error["message"] and lent["u3"] not in error["message"]
    assert await voters_left(gql, alice, item) == ["u1", "u2", "u3"]


async def disable(gql, root, user_id, disabled=True):
    done = (await gql(SET_DISABLED, {"u": user_id, "disabled": disabled}, token=root))["disableUser"]
    assert done["userErrors"] == [] and done["user"]["disabled"] is disabled


async def test_a_disabled_absent_user_lends_nothing_until_enabled_again(gql, make_user):
    _, root = await make_user("root", admin=True)
    _, owner = await make_user("owner")
    alice_id, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    item = await bug_item(gql, owner, alice_id)
    assert (await name_deputy(gql, alice, bob_id, until=T0 + 2 * HOUR))["userErrors"] == []
    assert await tasks(gql, bob) == [("resolve", "Crash", {"login": "alice"})]

    await disable(gql, root, alice_id)
    assert await tasks(gql, bob) == []
    assert not await visible(gql, bob, item["id"])
    assert (await resolve(gql, bob, item["id"], "for a disabled user"))["userErrors"][0]["code"] == "NOT_FOUND"
    assert await visible(gql, owner, item["id"])

    await disable(gql, root, alice_id, disabled=False)  # within the period: lending again
    assert await tasks(gql, bob) == [("resolve", "Crash", {"login": "alice"})]
    done = await resolve(gql, bob, item["id"], "for alice, enabled again")
    assert done["userErrors"] == [] and done["activity"]["onBehalfOf"] == {"login": "alice"}


async def test_a_disabled_deputy_gets_nothing_and_acts_for_nobody(gql, make_user):
    _, root = await make_user("root", admin=True)
    _, owner = await make_user("owner")
    alice_id, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    item = await bug_item(gql, owner, alice_id)
    assert (await name_deputy(gql, alice, bob_id, until=T0 + 2 * HOUR))["userErrors"] == []
    subproject = await subproject_of(gql, owner, item["id"])

    async def assign_alice(name):
        made = await gql(
            CREATE_ITEM,
            {"input": {"subprojectId": subproject, "displayName": name, "assigneeId": alice_id}},
            token=owner,
        )
        assert made["createWorkflowItem"]["userErrors"] == []

    async def heard():
        return sorted(
            n["node"]["activity"]["workflowItem"]["displayName"]
            for n in (await gql(HEARD, token=bob))["notifications"]["edges"]
        )

    await disable(gql, root, bob_id)
    await assign_alice("Leak")  # alice is notified; bob, disabled, gets no copy
    refused = await gql.raw(
        EXECUTE_AS_DEPUTY, {"input": {"workflowItemId": item["id"], "action": "resolve"}}, token=bob
    )
    assert refused["data"] is None and refused["errors"]  # bob's token no longer works at all
    assert await visible(gql, owner, item["id"])

    await disable(gql, root, bob_id, disabled=False)  # within the period: lending again
    await assign_alice("Hang")
    assert await heard() == ["Hang"]
    assert sorted(i for _, i, _ in await tasks(gql, bob)) == ["Crash", "Hang", "Leak"]
    done = await resolve(gql, bob, item["id"], "for alice, bob enabled again")
    assert done["userErrors"] == [] and done["activity"]["onBehalfOf"] == {"login": "alice"}


async def test_one_deputy_stands_in_for_a_bounded_number_of_users(gql, make_user, monkeypatch):
    """User.deputyFor lists every open deputyship of its user, so a deputy holds at most
    MAX_STANDING_IN of them (here lowered to 2): the next absent user naming them is refused
    and nothing is written."""
    monkeypatch.setattr(deputies, "MAX_STANDING_IN", 2)
    bob_id, bob = await make_user("bob")
    absent = [await make_user(f"absent{i}") for i in range(3)]
    for _, token in absent[:2]:
        assert (await name_deputy(gql, token, bob_id, until=T0 + HOUR))["userErrors"] == []
    over = await name_deputy(gql, absent[2][1], bob_id, until=T0 + HOUR)
    assert over["deputyship"] is None
    assert [(e["code"], e["field"]) for e in over["userErrors"]] == [("TOO_MANY_DEPUTIES", ["deputyId"])]
    standing_in = (await gql(DEPUTIES_OF, {"id": bob_id}, token=bob))["node"]["deputyFor"]
    assert sorted(d["user"]["login"] for d in standing_in) == ["absent0", "absent1"]
