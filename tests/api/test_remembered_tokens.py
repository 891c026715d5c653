"""A bearer token is read from the database once, then remembered for a few seconds, and
forgotten as soon as who it stands for changes (server/actor_cache.py)."""

from datetime import timedelta

import httpx
from sqlalchemy import update

from engine.people import identity
from models import ApiToken, utcnow
from server import actor_cache
from server.app import create_app
from server.settings import Settings
from tests.fixtures.api import GraphQLClient
from tests.fixtures.database import BACKEND
from tests.fixtures.documents import ADD_MEMBER, CREATE_GROUP, CREATE_PROJECT, GRANT, PROJECT_COUNT, VIEWER

REMOVE_MEMBER_BRIEF = """mutation($g: ID!, $u: ID!) {
  removeGroupMember(input: {groupId: $g, userId: $u}) { group { id } userErrors { code } } }"""


def _reads_tokens(statements: list[str]) -> list[str]:
    return [s for s in statements if "api_token" in s]


async def _a_group_that_may_view_a_project_and_carol(gql, make_user):
    """An admin's token, a group that may view alice's project, and carol (id, token), not in it."""
    _, admin = await make_user("root", admin=True)
    _, alice = await make_user("alice")
    carol_id, carol = await make_user("carol")
    project = (await gql(CREATE_PROJECT, {"input": {"displayName": "P"}}, token=alice))["createProject"]["project"]
    group = (await gql(CREATE_GROUP, {"name": "auditors"}, token=admin))["createGroup"]["group"]
    await gql(GRANT, {"r": project["id"], "i": "project.view", "p": group["id"]}, token=alice)
    return admin, group, carol_id, carol


async def test_a_token_is_read_once_then_remembered(gql, make_user, count_statements):
    _, token = await make_user("alice")
    with count_statements() as first:
        assert (await gql(VIEWER, token=token))["viewer"] == {"login": "alice"}
    with count_statements() as again:
        assert (await gql(VIEWER, token=token))["viewer"] == {"login": "alice"}
    assert len(_reads_tokens(first.statements)) == 1
    assert _reads_tokens(again.statements) == [] and again.count == first.count - 1, again.statements
    # An unknown token is asked about every time, and refused every time.
    for _ in range(2):
        with count_statements() as unknown:
            body = await gql.raw(VIEWER, token="cw_not_a_token")
        assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
        assert len(_reads_tokens(unknown.statements)) == 1


async def test_a_group_change_reaches_a_remembered_viewer_at_once(gql, make_user):
    admin, group, carol_id, carol = await _a_group_that_may_view_a_project_and_carol(gql, make_user)
    assert (await gql(PROJECT_COUNT, token=carol))["projects"]["totalCount"] == 0  # carol is remembered

    added = await gql(ADD_MEMBER, {"g": group["id"], "u": carol_id}, token=admin)
    assert added["addGroupMember"]["userErrors"] == []
    assert (await gql(PROJECT_COUNT, token=carol))["projects"]["totalCount"] == 1
    removed = await gql(REMOVE_MEMBER_BRIEF, {"g": group["id"], "u": carol_id}, token=admin)
    assert removed["removeGroupMember"]["userErrors"] == []
    assert (await gql(PROJECT_COUNT, token=carol))["projects"]["totalCount"] == 0


async def test_a_token_changed_behind_the_servers_back_stops_working_within_the_cache_lifetime(db, make_user):
    """Without a notification (SQLite, or another process's change before it is heard), a
    remembered token is read again once ``auth_cache_seconds`` have passed: the cache's clock is
    moved on rather than waited for."""
    alice_id, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    app = create_app(Settings(database_url=db.url, auth_cache_seconds=60), db=db)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test") as http:
        gql = GraphQLClient(http)
        for token in (alice, bob):
            assert (await gql(VIEWER, token=token))["viewer"] is not None
        async with db.transaction() as s:
            await s.execute(update(ApiToken).values(revoked=True).where(ApiToken.user_id == alice_id))
            await s.execute(
                update(ApiToken).values(expires_at=utcnow() - timedelta(seconds=1)).where(ApiToken.user_id == bob_id)
            )
        if BACKEND == "sqlite":  # nothing tells this process: still remembered within the lifetime
            assert (await gql(VIEWER, token=alice))["viewer"] == {"login": "alice"}
        real_clock = app.state.actor_cache.clock
        app.state.actor_cache.clock = lambda: real_clock() + 60  # the lifetime has passed
        for token in (alice, bob):
            body = await gql.raw(VIEWER, token=token)
            assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_a_remembered_token_that_expires_is_refused_at_once(db, make_user, monkeypatch):
    """The token expires an hour from now and is remembered for an hour; then the clock the
    cache and the token check read moves two hours on (no request has to beat a deadline)."""
    alice_id, alice = await make_user("alice")
    app = create_app(Settings(database_url=db.url, auth_cache_seconds=3600), db=db)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test") as http:
        gql = GraphQLClient(http)
        async with db.transaction() as s:
            await s.execute(
                update(ApiToken).values(expires_at=utcnow() + timedelta(hours=1)).where(ApiToken.user_id == alice_id)
            )
        assert (await gql(VIEWER, token=alice))["viewer"] == {"login": "alice"}  # now remembered
        later = utcnow() + timedelta(hours=2)
        monkeypatch.setattr(actor_cache, "utcnow", lambda: later)
        monkeypatch.setattr(identity, "utcnow", lambda: later)
        body = await gql.raw(VIEWER, token=alice)
        assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_a_token_read_while_its_groups_change_is_not_remembered_stale(gql, make_user, monkeypatch):
    """The group change commits while carol's token is being read: what was read may predate
    it, so it serves that one request and is not remembered for the next."""
    admin, group, carol_id, carol = await _a_group_that_may_view_a_project_and_carol(gql, make_user)
    read_token = identity.check_token
    pending = [carol]

    async def change_during_the_read(connection, token, **kwargs):
        actor = await read_token(connection, token, **kwargs)
        if token in pending:
            pending.clear()
            await gql(ADD_MEMBER, {"g": group["id"], "u": carol_id}, token=admin)
        return actor

    monkeypatch.setattr(identity, "check_token", change_during_the_read)
    assert (await gql(PROJECT_COUNT, token=carol))["projects"]["totalCount"] == 0  # read before the change
    assert (await gql(PROJECT_COUNT, token=carol))["projects"]["totalCount"] == 1
