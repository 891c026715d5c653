"""DYNAMIC instances over GraphQL (issue 21): per_member, per_role and the cartesian product of
several roles make one instance per party; each is its party's alone; executeAction picks the
caller's own instance or asks for enabledActionId (AMBIGUOUS_ACTION)."""

from tests.fixtures.child_workflows import (
    EXECUTE_ID,
    case_of,
    define,
    new_item,
    run,
    tasks,
    tip_item,
)
from tests.fixtures.documents import ADD_MEMBER, CREATE_GROUP


async def test_an_admin_must_name_the_instance_when_several_are_enabled(gql, make_user):
    item, alice, admin, _ = await tip_item(gql, make_user)
    ambiguous = (await gql(EXECUTE_ID, run(item, "approve"), token=admin))["executeAction"]
    [error] = ambiguous["userErrors"]
    assert (error["code"], error["field"]) == ("AMBIGUOUS_ACTION", ["enabledActionId"])
    case = await case_of(gql, alice, item)
    ids = [e["id"] for e in case["enabledActions"] if e["action"]["shortName"] == "approve"]
    assert all(i in error["message"] for i in ids) and "3 times" in error["message"]
    named = (await gql(EXECUTE_ID, run(item, "approve", enabledActionId=ids[0]), token=admin))["executeAction"]
    assert named["userErrors"] == []
    assert (await case_of(gql, alice, item))["version"] == 1


def sign_off(*for_each) -> dict:
    """A dynamic parent without states: one sign_off instance per entry of for_each's product."""
    return {
        "short_name": "sign",
        "roles": {"author": {"callbacks": ["creation_user"]}, "voters": {}, "reviewers": {}},
        "states": {"open": {}, "done": {"terminal": True}},
        "actions": {
            "sign": {
                "trigger": "dynamic",
                "enabled_states": ["open"],
                "new_state": "done",
                # a role may be left empty, and the parent would then never fire: its timer does
                "timeout_seconds": 30 * 24 * 3600,
                "for_each": [{"role": r, "mapping": m} for r, m in for_each],
                "children": {"sign_off": {"allowed_roles": ["author"]}},
            }
        },
    }


async def test_per_member_and_per_role_make_one_instance_per_member(gql, make_user):
    _, admin = await make_user("root", admin=True)
    _, alice = await make_user("alice")
    group = (await gql(CREATE_GROUP, {"name": "board"}, token=admin))["createGroup"]["group"]
    u1_id, u1 = await make_user("u1")
    await gql(ADD_MEMBER, {"g": group["id"], "u": u1_id}, token=admin)
    u3_id, u3 = await make_user("u3")
    r_id, _ = await make_user("rita")
    await define(gql, admin, sign_off(("voters", "per_member"), ("reviewers", "per_role")))
    item = await new_item(gql, alice, "sign", voters=[group["id"], u3_id], reviewers=[r_id])
    case = await case_of(gql, alice, item)
    assert sorted(str(e["assignees"]) for e in case["enabledActions"]) == sorted(
        [str([{"name": "board"}]), str([{"login": "u3"}])]
    )
    assert await tasks(gql, u1) == ["sign_off"] and await tasks(gql, u3) == ["sign_off"]
    first = (await gql(EXECUTE_ID, run(item, "sign_off"), token=u1))["executeAction"]  # the board's instance
    assert first["userErrors"] == [] and first["case"]["state"]["shortName"] == "open"
    assert await tasks(gql, u3) == ["sign_off"] and await tasks(gql, u1) == []
    last = (await gql(EXECUTE_ID, run(item, "sign_off"), token=u3))["executeAction"]
    assert last["userErrors"] == [] and last["case"]["state"]["shortName"] == "done"


async def test_two_per_user_roles_make_their_cartesian_product(gql, make_user):
    _, admin = await make_user("root", admin=True)
    _, alice = await make_user("alice")
    u1_id, u1 = await make_user("u1")
    u2_id, u2 = await make_user("u2")
    r1_id, _ = await make_user("r1")
    r2_id, _ = await make_user("r2")
    await define(gql, admin, sign_off(("voters", "per_user"), ("reviewers", "per_user")))
    item = await new_item(gql, alice, "sign", voters=[u1_id, u2_id], reviewers=[r1_id, r2_id])
    case = await case_of(gql, alice, item)
    mine = [e["id"] for e in case["enabledActions"] if e["assignees"] == [{"login": "u1"}]]
    assert len(case["enabledActions"]) == 4 and len(mine) == 2  # (u1, r1), (u1, r2), (u2, r1), (u2, r2)
    ambiguous = (await gql(EXECUTE_ID, run(item, "sign_off"), token=u1))["executeAction"]
    [error] = ambiguous["userErrors"]
    assert error["code"] == "AMBIGUOUS_ACTION" and all(i in error["message"] for i in mine)
    assert not any(e["id"] in error["message"] for e in case["enabledActions"] if e["id"] not in mine)
    chosen = (await gql(EXECUTE_ID, run(item, "sign_off", enabledActionId=mine[1]), token=u1))["executeAction"]
    assert chosen["userErrors"] == []
    # one left for u1: picked without naming it
    assert (await gql(EXECUTE_ID, run(item, "sign_off"), token=u1))["executeAction"]["userErrors"] == []
    assert await tasks(gql, u1) == [] and await tasks(gql, u2) == ["sign_off", "sign_off"]


async def test_a_parent_and_its_scope_rows_are_not_executed_by_hand(gql, make_user):
    item, alice, admin, tokens = await tip_item(gql, make_user)
    for token in (admin, tokens["voter1"]):
        refused = (await gql(EXECUTE_ID, run(item, "all_votes"), token=token))["executeAction"]
        assert [e["code"] for e in refused["userErrors"]] == ["ACTION_NOT_ENABLED"]
    assert (await case_of(gql, alice, item))["version"] == 0


async def test_a_dynamic_parent_that_would_create_too_many_instances_is_refused_and_changes_nothing(
    gql, make_user, monkeypatch
):
    from engine.cases import children
    from tests.fixtures.builders import build_tree
    from tests.fixtures.documents import CREATE_ITEM

    monkeypatch.setattr(children, "MAX_INSTANCES", 2)  # the bound, made small: 3 voters exceed it
    _, admin = await make_user("root", admin=True)
    _, alice = await make_user("alice")
    voters = [(await make_user(f"v{i}"))[0] for i in range(3)]
    await define(gql, admin, sign_off(("voters", "per_user")))
    _, sub, _ = await build_tree(gql, alice, items=0, workflow="sign")
    fields = {"subprojectId": sub["id"], "displayName": "Case", "assignments": [{"role": "voters", "partyIds": voters}]}
    refused = (await gql(CREATE_ITEM, {"input": fields}, token=alice))["createWorkflowItem"]
    [error] = refused["userErrors"]
    assert error["code"] == "TOO_MANY_INSTANCES" and "3 instances; at most 2" in error["message"]
    assert refused["workflowItem"] is None
    two = {**fields, "assignments": [{"role": "voters", "partyIds": voters[:2]}]}
    made = (await gql(CREATE_ITEM, {"input": two}, token=alice))["createWorkflowItem"]
    assert made["userErrors"] == []  # at the bound: created
    case = await case_of(gql, alice, made["workflowItem"])
    assert len(case["enabledActions"]) == 2
    count = """query($id: ID!) { node(id: $id) { ... on Subproject { workflowItems(first: 5) { totalCount } } } }"""
    assert (await gql(count, {"id": sub["id"]}, token=alice))["node"]["workflowItems"]["totalCount"] == 1
