"""Every server process forgets a remembered token as soon as who it stands for changes, even
when the change is made with plain SQL (PostgreSQL triggers and NOTIFY, migration 0006)."""

import asyncio

import httpx
import pytest
from sqlalchemy import insert, update

from models import ApiToken, GroupMember
from tests.fixtures.database import BACKEND
from tests.fixtures.documents import CREATE_GROUP, CREATE_PROJECT, GRANT, PROJECT_COUNT

pytestmark = pytest.mark.skipif(BACKEND != "postgres", reason="the notifications exist on PostgreSQL only")


async def _ask(server, query: str, token: str) -> dict:
    async with httpx.AsyncClient(base_url=server.http, timeout=30) as client:
        response = await client.post("/graphql", json={"query": query}, headers={"Authorization": f"Bearer {token}"})
    return response.json()


async def _until(check, *, within: float) -> None:
    """Wait for ``check()`` to hold; fail after ``within`` seconds."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    while not await check():
        assert loop.time() - started < within, "the change did not reach the server in time"
        await asyncio.sleep(0.05)


async def test_a_change_made_with_plain_sql_reaches_every_process(live_server, second_live_server, db, make_user):
    _, admin = await make_user("root", admin=True)
    alice_id, alice = await make_user("alice")
    carol_id, carol = await make_user("carol")
    project = (await live_server.gql(CREATE_PROJECT, {"input": {"displayName": "P"}}, token=alice))["createProject"]
    group = (await live_server.gql(CREATE_GROUP, {"name": "auditors"}, token=admin))["createGroup"]["group"]
    await live_server.gql(GRANT, {"r": project["project"]["id"], "i": "project.view", "p": group["id"]}, token=alice)
    servers = (live_server, second_live_server)
    for server in servers:  # both processes remember both tokens (for 10 s by default)
        assert (await _ask(server, PROJECT_COUNT, alice))["data"]["projects"]["totalCount"] == 1
        assert (await _ask(server, PROJECT_COUNT, carol))["data"]["projects"]["totalCount"] == 0

    async with db.transaction() as s:
        await s.execute(update(ApiToken).values(revoked=True).where(ApiToken.user_id == alice_id))
        await s.execute(insert(GroupMember).values(group_id=group["id"], user_id=carol_id))

    async def alice_refused(server) -> bool:
        body = await _ask(server, PROJECT_COUNT, alice)
        return bool(body.get("errors")) and body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"

    async def carol_sees_the_project(server) -> bool:
        return (await _ask(server, PROJECT_COUNT, carol))["data"]["projects"]["totalCount"] == 1

    # Well within the cache's 10 s: the notification, not the expiry, made both processes forget.
    for server in servers:
        await _until(lambda: alice_refused(server), within=3)  # noqa: B023 (awaited at once)
        await _until(lambda: carol_sees_the_project(server), within=3)  # noqa: B023
