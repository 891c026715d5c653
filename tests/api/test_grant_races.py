"""The last party that may grant permissions on a resource keeps that intent: under
concurrent changes (PostgreSQL; SQLite's single writer serializes them), and counting a group
only while it has a member who may act (issue 19, finding 3)."""

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from models import Database
from server.app import create_app
from server.settings import Settings
from tests.fixtures.api import GraphQLClient
from tests.fixtures.database import BACKEND
from tests.fixtures.documents import ADD_MEMBER, CREATE_GROUP, CREATE_PROJECT, GRANT, REVOKE, SET_DISABLED

GRANTER = "project.intent.grantPermission"
REMOVE_MEMBER = """mutation($g: ID!, $u: ID!) {
  removeGroupMember(input: {groupId: $g, userId: $u}) {
    group { members { login } } userErrors { code message field } } }"""
GRANTERS = """query($id: ID!) { node(id: $id) { ... on Project {
  permissions { intent parties { ... on User { login } ... on Group { name } } } } } }"""
TRIALS = 20

_ONE_WRITER = pytest.mark.skipif(BACKEND != "postgres", reason="SQLite's single writer serializes the changes")


def on_postgres(test):
    """A race that only PostgreSQL runs: marked `postgres`, skipped on SQLite."""
    return pytest.mark.postgres(_ONE_WRITER(test))


@pytest.fixture
async def two_clients(db: Database) -> AsyncIterator[tuple[GraphQLClient, GraphQLClient]]:
    """Two HTTP clients of one server: their requests run at once, each in its own transaction."""
    app = create_app(Settings(database_url=db.url), db=db)
    async with (
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test") as one,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test") as two,
    ):
        yield GraphQLClient(one), GraphQLClient(two)


async def granters(gql, project_id: str, token: str) -> list[str]:
    grants = (await gql(GRANTERS, {"id": project_id}, token=token))["node"]["permissions"]
    return sorted(p.get("login") or p["name"] for g in grants if g["intent"] == GRANTER for p in g["parties"])


async def new_project(gql, token: str, name: str) -> str:
    result = await gql(CREATE_PROJECT, {"input": {"displayName": name}}, token=token)
    return result["createProject"]["project"]["id"]


async def grant(gql, project_id: str, party_id: str, token: str, intent: str = GRANTER) -> None:
    result = await gql(GRANT, {"r": project_id, "i": intent, "p": party_id}, token=token)
    assert result["grantPermission"]["userErrors"] == []


def codes(*payloads) -> list[str | None]:
    """Per payload: None if it succeeded, else its first error code."""
    return [p["userErrors"][0]["code"] if p["userErrors"] else None for p in payloads]


@on_postgres
async def test_two_concurrent_revokes_of_the_last_two_granters_leave_one(two_clients, make_user):
    one, two = two_clients
    alice_id, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    for trial in range(TRIALS):
        project = await new_project(one, alice, f"P{trial}")
        await grant(one, project, bob_id, alice)  # bob may grant, and revoke
        await grant(one, project, bob_id, alice, intent="project.intent.revokePermission")
        assert await granters(one, project, alice) == ["alice", "bob"]

        bob_revokes_alice, alice_revokes_bob = await asyncio.gather(
            one(REVOKE, {"r": project, "i": GRANTER, "p": alice_id}, token=bob),
            two(REVOKE, {"r": project, "i": GRANTER, "p": bob_id}, token=alice),
        )
        outcome = codes(bob_revokes_alice["revokePermission"], alice_revokes_bob["revokePermission"])
        assert sorted(outcome, key=str) == ["LAST_GRANT_HOLDER", None], (trial, outcome)
        survivor = "bob" if outcome[0] is None else "alice"
        assert await granters(one, project, alice) == [survivor], trial


@on_postgres
async def test_a_revoke_and_the_removal_of_the_other_granters_last_member_race_safely(two_clients, make_user):
    """alice and a group whose only member is bob may grant: revoking alice and removing bob
    at the same moment must not both succeed."""
    one, two = two_clients
    _, admin = await make_user("root", admin=True)
    alice_id, alice = await make_user("alice")
    bob_id, _ = await make_user("bob")
    for trial in range(TRIALS):
        group = (await one(CREATE_GROUP, {"name": f"granters{trial}"}, token=admin))["createGroup"]["group"]["id"]
        await one(ADD_MEMBER, {"g": group, "u": bob_id}, token=admin)
        project = await new_project(one, alice, f"P{trial}")
        await grant(one, project, group, alice)

        revoked, removed = await asyncio.gather(
            one(REVOKE, {"r": project, "i": GRANTER, "p": alice_id}, token=alice),
            two(REMOVE_MEMBER, {"g": group, "u": bob_id}, token=admin),
        )
        outcome = codes(revoked["revokePermission"], removed["removeGroupMember"])
        assert sorted(outcome, key=str) == ["LAST_GRANT_HOLDER", None], (trial, outcome)


@on_postgres
async def test_a_revoke_and_disabling_the_other_granter_race_safely(two_clients, make_user):
    one, two = two_clients
    _, admin = await make_user("root", admin=True)
    alice_id, alice = await make_user("alice")
    for trial in range(TRIALS):
        bob_id, _ = await make_user(f"bob{trial}")
        project = await new_project(one, alice, f"P{trial}")
        await grant(one, project, bob_id, alice)

        revoked, disabled = await asyncio.gather(
            one(REVOKE, {"r": project, "i": GRANTER, "p": alice_id}, token=alice),
            two(SET_DISABLED, {"u": bob_id, "disabled": True}, token=admin),
        )
        outcome = codes(revoked["revokePermission"], disabled["disableUser"])
        assert sorted(outcome, key=str) == ["LAST_GRANT_HOLDER", None], (trial, outcome)


async def test_an_empty_group_does_not_count_as_a_granter(gql, make_user):
    _, admin = await make_user("root", admin=True)
    alice_id, alice = await make_user("alice")
    bob_id, _ = await make_user("bob")
    group = (await gql(CREATE_GROUP, {"name": "granters"}, token=admin))["createGroup"]["group"]["id"]
    project = await new_project(gql, alice, "P")
    await grant(gql, project, group, alice)

    refused = (await gql(REVOKE, {"r": project, "i": GRANTER, "p": alice_id}, token=alice))["revokePermission"]
    assert codes(refused) == ["LAST_GRANT_HOLDER"]
    assert await granters(gql, project, alice) == ["alice", "granters"]

    await gql(ADD_MEMBER, {"g": group, "u": bob_id}, token=admin)  # now the group has someone who may act
    allowed = (await gql(REVOKE, {"r": project, "i": GRANTER, "p": alice_id}, token=alice))["revokePermission"]
    assert codes(allowed) == [None]


async def test_a_groups_last_member_stays_while_the_group_is_the_last_granter(gql, make_user):
    _, admin = await make_user("root", admin=True)
    alice_id, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    carol_id, _ = await make_user("carol")
    group = (await gql(CREATE_GROUP, {"name": "granters"}, token=admin))["createGroup"]["group"]["id"]
    await gql(ADD_MEMBER, {"g": group, "u": bob_id}, token=admin)
    await gql(ADD_MEMBER, {"g": group, "u": carol_id}, token=admin)
    project = await new_project(gql, alice, "P")
    await grant(gql, project, group, alice)
    assert codes((await gql(REVOKE, {"r": project, "i": GRANTER, "p": alice_id}, token=alice))["revokePermission"]) == [
        None
    ]

    # carol may go: bob still may act for the group.
    removed = (await gql(REMOVE_MEMBER, {"g": group, "u": carol_id}, token=admin))["removeGroupMember"]
    assert codes(removed) == [None] and removed["group"]["members"] == [{"login": "bob"}]
    refused = (await gql(REMOVE_MEMBER, {"g": group, "u": bob_id}, token=admin))["removeGroupMember"]
    assert refused["group"] is None
    assert refused["userErrors"] == [
        {
            "code": "LAST_GRANT_HOLDER",
            "message": "This would leave a resource with nobody who may grant permissions on it; "
            "grant another party first.",
            "field": ["userId"],
        }
    ]
    assert project not in refused["userErrors"][0]["message"]  # the resource is not named
    assert await granters(gql, project, alice) == ["granters"]

    # Disabling bob would leave the group without anyone who may act: refused alike.
    disabled = (await gql(SET_DISABLED, {"u": bob_id, "disabled": True}, token=admin))["disableUser"]
    assert codes(disabled) == ["LAST_GRANT_HOLDER"] and disabled["user"] is None
    members = (await gql(ADD_MEMBER, {"g": group, "u": bob_id}, token=admin))["addGroupMember"]["group"]["members"]
    assert members == [{"login": "bob"}]  # bob is still in the group, and still enabled:
    assert (await gql("{ viewer { login disabled } }", token=bob))["viewer"] == {"login": "bob", "disabled": False}


async def test_a_disabled_user_does_not_count_as_a_granter(gql, make_user):
    _, admin = await make_user("root", admin=True)
    alice_id, alice = await make_user("alice")
    bob_id, _ = await make_user("bob")
    project = await new_project(gql, alice, "P")
    await grant(gql, project, bob_id, alice)

    disabled = (await gql(SET_DISABLED, {"u": bob_id, "disabled": True}, token=admin))["disableUser"]
    assert codes(disabled) == [None] and disabled["user"] == {"login": "bob", "disabled": True}
    refused = (await gql(REVOKE, {"r": project, "i": GRANTER, "p": alice_id}, token=alice))["revokePermission"]
    assert codes(refused) == ["LAST_GRANT_HOLDER"]

    enabled = (await gql(SET_DISABLED, {"u": bob_id, "disabled": False}, token=admin))["disableUser"]
    assert codes(enabled) == [None] and enabled["user"] == {"login": "bob", "disabled": False}
    allowed = (await gql(REVOKE, {"r": project, "i": GRANTER, "p": alice_id}, token=alice))["revokePermission"]
    assert codes(allowed) == [None]
