"""Child workflows at scale and under races (issue 21): reading 100 voters costs the statements of
3, and two votes that each complete the quorum, sent at once, fire the parent once."""

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from models import GroupMember, User, new_id
from server.app import create_app
from server.settings import Settings
from tests.fixtures.api import GraphQLClient
from tests.fixtures.builders import build_tree
from tests.fixtures.child_workflows import EXECUTE_ID, case_of, define, new_item, run, tip, voters
from tests.fixtures.database import BACKEND
from tests.fixtures.documents import CREATE_ITEM

READ_VOTES = """query($id: ID!) { node(id: $id) { ... on WorkflowItem { case {
  enabledActions { id action { shortName } assignees { ... on User { login } } parent { id action { shortName } } }
  scopes { state { shortName } status parent { id action { shortName } assignees { ... on User { login } } } } } } }
  myTasks { totalCount edges { node { action { shortName } assignees { ... on User { login } }
    parent { assignees { ... on User { login } } } case { id } } } } }"""


async def add_voters(db, group_id: str, count: int, start: int) -> None:
    """Voters as rows: a token each is not needed, and 100 password hashes would dominate."""
    async with db.transaction() as s:
        for n in range(start, start + count):
            user = User(id=new_id("usr"), login=f"bulk{n}", display_name=f"Bulk {n}", password_hash="-")
            s.add(user)
            await s.flush()
            s.add(GroupMember(group_id=group_id, user_id=user.id))


async def test_reading_votes_costs_the_same_statements_for_3_voters_as_for_100(db, gql, make_user, count_statements):
    _, admin = await make_user("root", admin=True)
    _, alice = await make_user("alice")
    group_id, tokens = await voters(gql, make_user, admin, 1)
    await add_voters(db, group_id, 2, 2)
    await define(gql, admin, tip(group_id))
    few = await new_item(gql, alice, "tip_vote")
    _, sub, _ = await build_tree(gql, alice, items=0, workflow="tip_vote")
    await add_voters(db, group_id, 97, 4)
    many = (await gql(CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": "Big"}}, token=alice))[
        "createWorkflowItem"
    ]["workflowItem"]

    async def read(item):
        with count_statements() as counted:
            data = await gql(READ_VOTES, {"id": item["id"]}, token=tokens["voter1"])
        return data, counted

    await read(few)  # the workflow definition is read once per process
    small, small_count = await read(few)
    large, large_count = await read(many)
    assert len(small["node"]["case"]["scopes"]) == 4 and len(large["node"]["case"]["scopes"]) == 101
    assert len(large["node"]["case"]["enabledActions"]) == 2 * 100 + 1
    assert all(s["parent"]["assignees"][0]["login"] for s in large["node"]["case"]["scopes"][1:])
    assert large["myTasks"]["totalCount"] == 4  # voter1's approve and reject, in each case
    assert large_count.count == small_count.count, large_count.statements


@pytest.fixture
async def second_client(db) -> AsyncIterator[GraphQLClient]:
    """A second HTTP client of its own server: its requests run beside ``gql``'s, each in its
    own transaction."""
    app = create_app(Settings(database_url=db.url), db=db)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test") as http:
        yield GraphQLClient(http)


@pytest.mark.skipif(
    BACKEND != "postgres",
    reason="SQLite's single writer runs the two votes one after the other: there is no race to lose there",
)
async def test_two_votes_that_each_complete_the_quorum_fire_the_parent_once(gql, second_client, make_user):
    _, admin = await make_user("root", admin=True)
    _, alice = await make_user("alice")
    group_id, tokens = await voters(gql, make_user, admin, 3)
    await define(gql, admin, tip(group_id))
    _, sub, _ = await build_tree(gql, alice, items=0, workflow="tip_vote")
    for trial in range(20):
        made = await gql(CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": f"T{trial}"}}, token=alice)
        item = made["createWorkflowItem"]["workflowItem"]
        assert (await gql(EXECUTE_ID, run(item, "approve"), token=tokens["voter1"]))["executeAction"][
            "userErrors"
        ] == []
        two, three = await asyncio.gather(
            gql(EXECUTE_ID, run(item, "approve"), token=tokens["voter2"]),
            second_client(EXECUTE_ID, run(item, "approve"), token=tokens["voter3"]),
        )
        outcomes = sorted(
            (p["executeAction"]["userErrors"] or [{"code": None}])[0]["code"] or "OK" for p in (two, three)
        )
        assert outcomes == ["ACTION_NOT_ENABLED", "OK"], (trial, two, three)
        case = await case_of(gql, alice, item)
        assert case["state"]["shortName"] == "accepted"
        assert [e["node"]["action"] for e in case["log"]["edges"]].count("all_votes") == 1, trial
