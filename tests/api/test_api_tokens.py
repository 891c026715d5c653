"""Service users and API tokens (issue 45, point 3), through the public API: a service user has no
password and cannot log in; a token's secret is shown once and never listed; who may make, list
and revoke them; their bounds; revocation and expiry end them at once; lastUsedAt is written at
most once a minute; scopes hold over HTTP, multipart uploads and WebSocket; the log names the
token an entry came through (``Activity.via``), on both read roads, and its hash covers it.
(Every mutation against every scope: tests/api/test_token_scopes.py.)"""

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import httpx
import pytest
import websockets
from sqlalchemy import func, select, text, update

from engine.clock import SettableClock
from engine.people import api_tokens
from models import Activity, ApiToken, Database, utcnow
from server.app import create_app
from server.settings import Settings
from tests.fixtures.api import GraphQLClient
from tests.fixtures.builders import bug_item
from tests.fixtures.database import BACKEND
from tests.fixtures.documents import (
    ADD_DOCUMENT,
    CREATE_API_TOKEN,
    CREATE_PROJECT,
    CREATE_USER,
    LOGIN,
    VERIFY_INTACT,
    VIEWER,
)
from tests.fixtures.live import WsClient
from tests.fixtures.uploads import multipart

API_TOKENS = """query($u: ID) { apiTokens(userId: $u) { id name scopes createdAt lastUsedAt expiresAt } }"""
REVOKE_API_TOKEN = (
    """mutation($id: ID!) { revokeApiToken(input: {id: $id}) { id userErrors { code message field } } }"""
)
SERVICE_USER = """query($id: ID!) { node(id: $id) { ... on User { login kind } } }"""
COMMENT_WITH_VIA = """mutation($input: ExecuteActionInput!) {
  executeAction(input: $input) { activity { seq actor { login } via } userErrors { code message } } }"""
ITEM_LOG_WITH_VIA = """query($id: ID!) { node(id: $id) { ... on WorkflowItem {
  case { log(first: 50) { edges { node { kind comment via actor { login kind } } } } }
  history(first: 50) { edges { node { kind comment via } } } } } }"""
LIVE_PROJECT_VIA = """subscription($p: ID, $after: String) { activity(projectId: $p, after: $after) { kind via } }"""
FIRST_SEQ = """query($id: ID!) { node(id: $id) { ... on Project { history(first: 1) { edges { cursor } } } } }"""


async def _service_user(gql, admin: str, login: str = "ci-bot") -> str:
    made = (await gql(CREATE_USER, {"input": {"login": login, "kind": "SERVICE"}}, token=admin))["createUser"]
    assert made["userErrors"] == [], made
    return made["user"]["id"]


async def _api_token(gql, token: str, user_id: str, name: str, scopes: list[str], **more) -> dict:
    wanted = {"userId": user_id, "name": name, "scopes": scopes, **more}
    return (await gql(CREATE_API_TOKEN, {"input": wanted}, token=token))["createApiToken"]


async def _count(db: Database, *where) -> int:
    async with db.session() as s:
        return int(await s.scalar(select(func.count()).select_from(ApiToken).where(*where)) or 0)


async def test_a_service_user_has_no_password_and_cannot_log_in(gql, make_user):
    _, admin = await make_user("root", admin=True)
    bot = await _service_user(gql, admin)
    assert (await gql(SERVICE_USER, {"id": bot}, token=admin))["node"] == {"login": "ci-bot", "kind": "SERVICE"}

    refused = (await gql(LOGIN, {"login": "ci-bot", "password": "anything-at-all"}))["login"]
    unknown = (await gql(LOGIN, {"login": "no-such-bot", "password": "anything-at-all"}))["login"]
    assert refused["token"] is None
    # Answered as an unknown login is: nobody without credentials learns that ci-bot exists.
    assert refused["userErrors"] == unknown["userErrors"]
    assert [e["code"] for e in refused["userErrors"]] == ["INVALID_CREDENTIALS"]
    # A service user with a password, and a person without one, are refused and not made.
    with_password = {"login": "bot2", "kind": "SERVICE", "password": "password123"}
    without = {"login": "person2"}
    for wanted, message in (
        (with_password, "A service user has no password: it uses API tokens."),
        (without, "A password has at least 8 characters."),
    ):
        made = (await gql(CREATE_USER, {"input": wanted}, token=admin))["createUser"]
        assert made == {
            "user": None,
            "userErrors": [{"code": "INVALID_INPUT", "message": message, "field": ["password"]}],
        }
        assert (await gql(LOGIN, {"login": wanted["login"], "password": "password123"}))["login"]["userErrors"][0][
            "code"
        ] == "INVALID_CREDENTIALS"


async def test_the_secret_is_shown_once_and_never_listed(db, gql, make_user):
    _, admin = await make_user("root", admin=True)
    bot = await _service_user(gql, admin)
    expires = (datetime.now(UTC) + timedelta(days=30)).replace(microsecond=0)
    made = await _api_token(gql, admin, bot, "erp import", ["EXECUTE", "READ"], expiresAt=expires.isoformat())
    assert made["userErrors"] == []
    secret, token = made["token"], made["apiToken"]
    assert secret.startswith("cw_") and len(secret) > 40
    assert token["name"] == "erp import" and token["scopes"] == ["READ", "EXECUTE"]
    assert token["lastUsedAt"] is None and datetime.fromisoformat(token["expiresAt"]) == expires

    assert (await gql(VIEWER, token=secret))["viewer"] == {"login": "ci-bot"}
    for who in (admin, secret):  # the admin, and the token itself, list it; without the secret
        listed = await gql.raw(API_TOKENS, {"u": bot}, token=who)
        assert [t["id"] for t in listed["data"]["apiTokens"]] == [token["id"]]
        assert secret not in json.dumps(listed) and secret[3:20] not in json.dumps(listed)
    fields = (await gql('{ __type(name: "ApiToken") { fields { name } } }', token=admin))["__type"]["fields"]
    assert {f["name"] for f in fields} == {"id", "name", "scopes", "createdAt", "lastUsedAt", "expiresAt"}
    async with db.session() as s:  # stored as its hash alone
        stored = (await s.execute(select(ApiToken.__table__).where(ApiToken.id == token["id"]))).one()
    assert secret not in repr(tuple(stored))


async def test_who_may_make_list_and_revoke_tokens(db, gql, make_user):
    _, admin = await make_user("root", admin=True)
    alice_id, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")

    own = await _api_token(gql, alice, alice_id, "script", ["WRITE"])
    assert own["userErrors"] == []
    for target, code in ((bob_id, "NOT_ALLOWED"), ("usr_nobody", "NOT_FOUND")):
        refused = await _api_token(gql, alice, target, "sneaky", ["READ"])
        assert refused["token"] is None and [e["code"] for e in refused["userErrors"]] == [code]
    assert await _count(db, ApiToken.name.is_not(None)) == 1

    # Bob sees none of alice's tokens and cannot revoke them: as if they did not exist.
    assert (await gql(API_TOKENS, {"u": alice_id}, token=bob))["apiTokens"] == []
    assert (await gql(API_TOKENS, {"u": None}, token=alice))["apiTokens"][0]["name"] == "script"
    hidden = (await gql(REVOKE_API_TOKEN, {"id": own["apiToken"]["id"]}, token=bob))["revokeApiToken"]
    assert hidden["id"] is None and [e["code"] for e in hidden["userErrors"]] == ["NOT_FOUND"]
    # A login's session token is no API token: revokeApiToken does not know it.
    async with db.session() as s:
        session_token = await s.scalar(select(ApiToken.id).where(ApiToken.user_id == bob_id, ApiToken.name.is_(None)))
    not_api = (await gql(REVOKE_API_TOKEN, {"id": session_token}, token=bob))["revokeApiToken"]
    assert [e["code"] for e in not_api["userErrors"]] == ["NOT_FOUND"]
    assert (await gql(VIEWER, token=own["token"]))["viewer"] == {"login": "alice"}

    # The admin revokes it; it is no longer listed and no longer works; revoking again: not found.
    revoked = (await gql(REVOKE_API_TOKEN, {"id": own["apiToken"]["id"]}, token=admin))["revokeApiToken"]
    assert revoked == {"id": own["apiToken"]["id"], "userErrors": []}
    assert (await gql(API_TOKENS, {"u": alice_id}, token=admin))["apiTokens"] == []
    assert [
        e["code"]
        for e in (await gql(REVOKE_API_TOKEN, {"id": own["apiToken"]["id"]}, token=alice))["revokeApiToken"][
            "userErrors"
        ]
    ] == ["NOT_FOUND"]


async def test_bounds_refuse_with_a_sentence_and_change_nothing(db, gql, make_user):
    alice_id, alice = await make_user("alice")
    now = datetime.now(UTC)
    cases = [
        ({"name": " "}, "INVALID_INPUT", "name must not be empty.", "name"),
        ({"name": "n" * 65}, "INVALID_INPUT", "name is longer than 64 characters.", "name"),
        ({"scopes": []}, "INVALID_INPUT", "Give at least one scope: READ, EXECUTE or WRITE.", "scopes"),
        (
            {"expiresAt": (now - timedelta(minutes=1)).isoformat()},
            "INVALID_INPUT",
            "expiresAt must be in the future.",
            "expiresAt",
        ),
        (
            {"expiresAt": (now + timedelta(days=367)).isoformat()},
            "INVALID_INPUT",
            "A token lives at most 366 days: expiresAt is too far ahead.",
            "expiresAt",
        ),
    ]
    for change, code, message, field in cases:
        wanted = {"name": "ok", "scopes": ["READ"], **change}
        made = await _api_token(gql, alice, alice_id, **wanted)
        assert made == {
            "token": None,
            "apiToken": None,
            "userErrors": [{"code": code, "message": message, "field": [field]}],
        }
    assert await _count(db, ApiToken.name.is_not(None)) == 0

    # The default lifetime: 90 days.
    first = await _api_token(gql, alice, alice_id, "first", ["READ"])
    lifetime = datetime.fromisoformat(first["apiToken"]["expiresAt"]) - datetime.fromisoformat(
        first["apiToken"]["createdAt"]
    )
    assert lifetime == api_tokens.DEFAULT_LIFETIME == timedelta(days=90)
    again = await _api_token(gql, alice, alice_id, "first", ["READ"])
    assert again["userErrors"] == [
        {"code": "ALREADY_EXISTS", "message": "alice already has an API token named 'first'.", "field": ["name"]}
    ]
    for n in range(api_tokens.MAX_TOKENS_PER_USER - 1):
        assert (await _api_token(gql, alice, alice_id, f"t{n}", ["READ"]))["userErrors"] == []
    over = await _api_token(gql, alice, alice_id, "one too many", ["READ"])
    assert over["userErrors"] == [
        {
            "code": "INVALID_INPUT",
            "message": "A user has at most 50 API tokens: revoke one (expired ones count too) first.",
            "field": ["userId"],
        }
    ]
    assert await _count(db, ApiToken.name.is_not(None)) == 50
    # Revoking one makes room.
    assert (await gql(REVOKE_API_TOKEN, {"id": first["apiToken"]["id"]}, token=alice))["revokeApiToken"][
        "userErrors"
    ] == []
    assert (await _api_token(gql, alice, alice_id, "one too many", ["READ"]))["userErrors"] == []


async def test_a_token_may_not_make_tokens_which_would_outlive_its_revocation(gql, make_user):
    """Nothing links a token to one it made: were it allowed, revoking a leaked token would leave
    the tokens made with it working. A WRITE token is refused, whatever the expiry asked."""
    alice_id, alice = await make_user("alice")
    soon = datetime.now(UTC) + timedelta(days=2)
    parent = await _api_token(gql, alice, alice_id, "parent", ["WRITE"], expiresAt=soon.isoformat())
    for expires in (soon - timedelta(days=1), None):
        extra = {} if expires is None else {"expiresAt": expires.isoformat()}
        child = await _api_token(gql, parent["token"], alice_id, "child", ["READ"], **extra)
        assert [e["code"] for e in child["userErrors"]] == ["NOT_ALLOWED"]
        assert "not through another API token" in child["userErrors"][0]["message"]
    listed = await gql(API_TOKENS, {"u": alice_id}, token=alice)
    assert [t["name"] for t in listed["apiTokens"]] == ["parent"]


async def test_revoked_and_expired_tokens_are_refused_at_once_with_the_401_sentences(db, gql, make_user):
    alice_id, alice = await make_user("alice")
    revoked = await _api_token(gql, alice, alice_id, "gone", ["READ"])
    expired = await _api_token(gql, alice, alice_id, "old", ["READ"])
    for made in (revoked, expired):  # both remembered by the server now
        assert (await gql(VIEWER, token=made["token"]))["viewer"] == {"login": "alice"}

    assert (await gql(REVOKE_API_TOKEN, {"id": revoked["apiToken"]["id"]}, token=alice))["revokeApiToken"][
        "userErrors"
    ] == []
    body = await gql.raw(VIEWER, token=revoked["token"])
    assert body["errors"][0]["message"] == "The token was revoked (logged out): log in again."
    assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"

    async with db.transaction() as s:  # its time runs out (a new read of it: the server forgot it above)
        await s.execute(
            update(ApiToken)
            .where(ApiToken.id == expired["apiToken"]["id"])
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    body = await gql.raw(VIEWER, token=expired["token"])
    assert body["errors"][0]["message"] == "The token has expired: log in again."


async def test_a_mutation_outside_the_scope_says_so(gql, make_user):
    alice_id, alice = await make_user("alice")
    reader = await _api_token(gql, alice, alice_id, "dashboard reader", ["READ"])
    refused = (await gql(CREATE_PROJECT, {"input": {"displayName": "No"}}, token=reader["token"]))["createProject"]
    assert refused == {
        "project": None,
        "userErrors": [
            {
                "code": "TOKEN_SCOPE",
                "message": "This API token's scope is READ: createProject needs a token with WRITE.",
                "field": None,
            }
        ],
    }
    assert (await gql("{ projects { totalCount } }", token=alice))["projects"]["totalCount"] == 0
    writer = await _api_token(gql, alice, alice_id, "writer", ["WRITE"])
    made = (await gql(CREATE_PROJECT, {"input": {"displayName": "Yes"}}, token=writer["token"]))["createProject"]
    assert made["userErrors"] == []


@pytest.fixture
async def clocked(db: Database) -> AsyncIterator[tuple[GraphQLClient, SettableClock]]:
    """A server whose clock for lastUsedAt stands still until the test moves it."""
    app = create_app(Settings(database_url=db.url), db=db)
    clock = app.state.credentials.clock = SettableClock(datetime.now(UTC).replace(microsecond=0))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test") as http:
        yield GraphQLClient(http), clock


async def test_last_used_at_is_written_at_most_once_a_minute(clocked, make_user, count_statements):
    gql, clock = clocked
    alice_id, alice = await make_user("alice")
    made = await _api_token(gql, alice, alice_id, "poller", ["READ"])
    started = clock.now()

    def last_used(listed):
        return listed["apiTokens"][0]["lastUsedAt"]

    with count_statements() as first:
        assert (await gql(VIEWER, token=made["token"]))["viewer"] == {"login": "alice"}
    assert [s for s in first.statements if s.lstrip().upper().startswith("UPDATE")] != []
    assert datetime.fromisoformat(last_used(await gql(API_TOKENS, token=alice))) == started

    clock.advance(59)
    with count_statements() as within:
        for _ in range(5):
            await gql(VIEWER, token=made["token"])
    assert [s for s in within.statements if "UPDATE" in s.upper()] == [], within.statements
    assert datetime.fromisoformat(last_used(await gql(API_TOKENS, token=alice))) == started

    clock.advance(1)  # a minute after the last write
    await gql(VIEWER, token=made["token"])
    assert datetime.fromisoformat(last_used(await gql(API_TOKENS, token=alice))) == started + timedelta(minutes=1)


async def test_activity_names_the_token_on_both_read_roads_and_its_hash_covers_it(
    db, gql, make_user, differential_reads
):
    _, admin = await make_user("root", admin=True)
    _, alice = await make_user("alice")
    bot = await _service_user(gql, admin)
    item = await bug_item(gql, alice, bot)  # the bot is its assignee: it may comment
    executor = (await _api_token(gql, admin, bot, "nightly sync", ["EXECUTE"]))["token"]

    through_token = {"workflowItemId": item["id"], "action": "comment", "comment": "synced"}
    done = (await gql(COMMENT_WITH_VIA, {"input": through_token}, token=executor))["executeAction"]
    assert done["userErrors"] == [] and done["activity"]["via"] == "nightly sync"
    assert done["activity"]["actor"] == {"login": "ci-bot"}
    by_alice = {"workflowItemId": item["id"], "action": "comment", "comment": "by hand"}
    assert (await gql(COMMENT_WITH_VIA, {"input": by_alice}, token=alice))["executeAction"]["activity"]["via"] is None

    node = (await gql(ITEM_LOG_WITH_VIA, {"id": item["id"]}, token=admin))["node"]  # compiled, and resolved alike
    log = {e["node"]["comment"]: e["node"] for e in node["case"]["log"]["edges"] if e["node"]["comment"]}
    assert log["synced"] == {
        "kind": "action_executed",
        "comment": "synced",
        "via": "nightly sync",
        "actor": {"login": "ci-bot", "kind": "SERVICE"},
    }
    assert log["by hand"]["via"] is None
    assert {e["node"]["via"] for e in node["history"]["edges"]} == {None, "nightly sync"}

    assert (await gql(VERIFY_INTACT, {"id": item["id"]}, token=admin))["verifyHistory"]["report"]["intact"] is True
    async with db.transaction() as s:  # another name in the log: the chain no longer verifies
        await s.execute(update(Activity).where(Activity.via == "nightly sync").values(via="someone else"))
    assert (await gql(VERIFY_INTACT, {"id": item["id"]}, token=admin))["verifyHistory"]["report"]["intact"] is False


async def test_uploads_need_an_execute_token(gql, make_user):
    alice_id, alice = await make_user("alice")
    item = await bug_item(gql, alice, alice_id)
    reader = (await _api_token(gql, alice, alice_id, "reader", ["READ"]))["token"]
    executor = (await _api_token(gql, alice, alice_id, "uploader", ["EXECUTE"]))["token"]
    variables = {"input": {"workflowItemId": item["id"], "file": None}}
    answers = {}
    for name, token in (("reader", reader), ("uploader", executor)):
        response = await multipart(gql.http, ADD_DOCUMENT, variables, {"input.file": ("a.txt", b"abc")}, token=token)
        answers[name] = response.json()["data"]["addDocument"]
    assert [e["code"] for e in answers["reader"]["userErrors"]] == ["TOKEN_SCOPE"] and answers["reader"][
        "document"
    ] is None
    assert answers["uploader"]["userErrors"] == [] and answers["uploader"]["document"]["fileName"] == "a.txt"
    # The download takes the same token (GET /documents/{id}).
    download = await gql.http.get(
        f"/documents/{answers['uploader']['document']['id']}", headers={"Authorization": f"Bearer {reader}"}
    )
    assert download.status_code == 200 and download.content == b"abc"


async def test_over_websocket_a_read_token_subscribes_and_a_revoked_one_is_closed(gql, make_user, live_server):
    alice_id, alice = await make_user("alice")
    project = (await gql(CREATE_PROJECT, {"input": {"displayName": "Live"}}, token=alice))["createProject"]["project"]
    made = await _api_token(gql, alice, alice_id, "watcher", ["READ"])
    client = await WsClient.connect(live_server.ws, made["token"])
    try:
        created = (await gql(FIRST_SEQ, {"id": project["id"]}, token=alice))["node"]["history"]["edges"][0]["cursor"]
        subscription = await client.subscribe(LIVE_PROJECT_VIA, {"p": project["id"], "after": created})
        # A mutation over the same connection is outside the scope.
        await client.socket.send(
            json.dumps(
                {
                    "id": "m1",
                    "type": "subscribe",
                    "payload": {
                        "query": 'mutation { createProject(input: {displayName: "x"}) { userErrors { code } } }'
                    },
                }
            )
        )
        update_project = (
            """mutation($id: ID!) { updateProject(input: {id: $id, description: "d"}) { userErrors { code } } }"""
        )
        await gql(update_project, {"id": project["id"]}, token=alice)
        seen: dict[str, dict] = {}

        def both_arrived(message: dict) -> bool:
            if message.get("type") == "next":
                seen[message["id"]] = message["payload"]
            return len(seen) == 2

        await client.receive_until(both_arrived)
        assert seen["m1"]["data"]["createProject"]["userErrors"] == [{"code": "TOKEN_SCOPE"}]
        assert seen[subscription]["data"]["activity"]["via"] is None  # alice acted by her login

        revoked = (await gql(REVOKE_API_TOKEN, {"id": made["apiToken"]["id"]}, token=alice))["revokeApiToken"]
        assert revoked["userErrors"] == []
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(client.socket.recv(), timeout=15)
        assert closed.value.rcvd.code == 4403
        assert closed.value.rcvd.reason == "The token was revoked (logged out): log in again."
    finally:
        await client.close()


@pytest.mark.skipif(BACKEND != "postgres", reason="PostgreSQL's notifications")
async def test_noting_a_use_does_not_make_the_servers_forget_who_tokens_stand_for(db, gql, make_user):
    """Migration 0022: ``lastUsedAt``'s writes send no ``caseway_identity`` notification (every
    process would drop its remembered actors once a minute per token); a revocation still does.
    A notification of another channel, committed after the write, is the sentinel: PostgreSQL
    delivers notifications in commit order, so nothing may arrive before it."""
    alice_id, alice = await make_user("alice")
    made = await _api_token(gql, alice, alice_id, "poller", ["READ"])
    heard: asyncio.Queue[str] = asyncio.Queue()
    listener = await asyncpg.connect(db.url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        for channel in ("caseway_identity", "caseway_test_sentinel"):
            await listener.add_listener(channel, lambda _c, _p, name, _m: heard.put_nowait(name))
        async with db.transaction() as s:
            await api_tokens.note_use(s, token_id=made["apiToken"]["id"], at=utcnow())
        async with db.transaction() as s:
            await s.execute(text("SELECT pg_notify('caseway_test_sentinel', '')"))
        assert await asyncio.wait_for(heard.get(), 10) == "caseway_test_sentinel"
        assert (await gql(API_TOKENS, token=alice))["apiTokens"][0]["lastUsedAt"] is not None

        revoked = (await gql(REVOKE_API_TOKEN, {"id": made["apiToken"]["id"]}, token=alice))["revokeApiToken"]
        assert revoked["userErrors"] == []
        assert await asyncio.wait_for(heard.get(), 10) == "caseway_identity"
    finally:
        await listener.close()
