"""Logins are throttled per login name and per client address, run their password hash outside
every database lock, and tokens end at once, over HTTP and WebSocket, on logout, revocation and
disabling (issue 19, finding 5)."""

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import timedelta

import httpx
import pytest
import websockets
from sqlalchemy import func, select

import resolvers.login
from engine.clock import SYSTEM_CLOCK
from engine.people import passwords, throttle
from models import Database, LoginAttempt, utcnow
from server.app import create_app
from server.settings import Settings
from tests.fixtures.api import GraphQLClient
from tests.fixtures.documents import CREATE_PROJECT, LOGIN, SET_DISABLED, VIEWER
from tests.fixtures.live import LiveServer, WsClient

LOGOUT = """mutation($everywhere: Boolean!) {
  logout(input: {everywhere: $everywhere}) { revokedTokens userErrors { code message field } } }"""
REVOKE_TOKEN = """mutation($input: RevokeTokenInput!) {
  revokeToken(input: $input) { revokedTokens userErrors { code message field } } }"""
NOTIFICATION_LEVELS = "subscription { notifications { level } }"
# Small numbers so a lockout takes a few requests: 2 free failures, then 0.25 s, 0.5 s, 1 s, 1 s;
# the 7th attempt at one login from one address is refused for 60 s, the 11th from one address.
THROTTLE = {
    "login_free_failures": 2,
    "login_max_delay": 1.0,
    "login_lockout_failures": 6,
    "login_address_lockout_failures": 10,
    "login_lockout_seconds": 60,
}


class FakeTime:
    """The login throttle's clock and wait: time moves only when a test moves it."""

    def __init__(self) -> None:
        self.now = utcnow().replace(microsecond=0)
        self.waits: list[float] = []

    def clock(self):  # type: ignore[no-untyped-def]
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def fake_time(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    time = FakeTime()
    monkeypatch.setattr(SYSTEM_CLOCK, "now", time.clock)
    monkeypatch.setattr(resolvers.login, "sleep", time.sleep)
    return time


@pytest.fixture
async def server_with(db: Database) -> AsyncIterator[Callable[..., Callable[[str], GraphQLClient]]]:
    """``server_with(**settings)``: a throttled server; ``(address)`` gives a client of it from
    that address (the ASGI scope's client, which ``request.client.host`` reads)."""
    clients: list[httpx.AsyncClient] = []

    def server(**settings: object) -> Callable[[str], GraphQLClient]:
        app = create_app(Settings(database_url=db.url, **{**THROTTLE, **settings}), db=db)

        def at(address: str) -> GraphQLClient:
            transport = httpx.ASGITransport(app=app, client=(address, 40000))
            clients.append(httpx.AsyncClient(transport=transport, base_url="http://caseway.test"))
            return GraphQLClient(clients[-1])

        return at

    yield server
    for client in clients:
        await client.aclose()


@pytest.fixture
def client_at(server_with) -> Callable[[str], GraphQLClient]:  # type: ignore[no-untyped-def]
    """``client_at("203.0.113.7")``: a client of one throttled server, from that address."""
    return server_with()


@pytest.fixture
def held_hashes(monkeypatch: pytest.MonkeyPatch) -> Iterator["HeldHashes"]:
    hashes = HeldHashes()
    monkeypatch.setattr(passwords, "verify_password", hashes.verify)
    yield hashes
    hashes.release.set()


class HeldHashes:
    """A password hash that waits for the test's ``release`` and records what it checked."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.checked: list[str] = []  # the stored hashes checked, in order
        self._real = passwords.verify_password

    def verify(self, password: str, stored: str) -> bool:
        self.checked.append(stored)
        self.release.wait(timeout=30)
        return self._real(password, stored)


async def log_in(client: GraphQLClient, login: str, password: str) -> dict:
    return (await client(LOGIN, {"login": login, "password": password}))["login"]


def code_of(payload: dict) -> str | None:
    return payload["userErrors"][0]["code"] if payload["userErrors"] else None


def locked_message(until) -> str:  # type: ignore[no-untyped-def]
    return f"Too many failed logins; try again in 60 seconds (after {until:%Y-%m-%d %H:%M:%S} UTC)."


async def until(condition: Callable[[], bool], *, within: float = 10) -> None:
    """Wait for ``condition()`` to hold; fail after ``within`` seconds."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    while not condition():
        assert loop.time() - started < within, "the condition did not hold in time"
        await asyncio.sleep(0.01)


async def test_a_guesser_locks_itself_out_not_the_user(client_at, fake_time, make_user):
    """The lockout is keyed on (login, address) and on the address: failures at alice from A
    lock A out of alice, even with the right password, while alice logs in from B (delayed:
    the login name's own count only slows its answers)."""
    await make_user("alice")
    await make_user("bob")
    guesser = client_at("198.51.100.7")
    guesses = [await log_in(guesser, "alice", f"guess-{i}") for i in range(6)]
    assert [code_of(g) for g in guesses] == ["INVALID_CREDENTIALS"] * 6
    assert fake_time.waits == [0.25, 0.5, 1.0, 1.0]  # the first two were free

    for _ in range(2):  # the right password from the guesser's address does not help
        refused = await log_in(client_at("198.51.100.7"), "alice", "password123")
        assert refused["token"] is None
        assert refused["userErrors"] == [
            {
                "code": "TOO_MANY_ATTEMPTS",
                "message": locked_message(fake_time.now + timedelta(seconds=60)),
                "field": ["login"],
            }
        ]
    assert fake_time.waits == [0.25, 0.5, 1.0, 1.0]  # refused at once, not checked

    assert (await log_in(client_at("192.0.2.1"), "alice", "password123"))["user"] == {"login": "alice"}
    assert fake_time.waits == [0.25, 0.5, 1.0, 1.0, 1.0]  # delayed by alice's count, not refused
    # The guesser's address is locked out of alice only (8 attempts: below the address's 10).
    assert code_of(await log_in(guesser, "alice", "password123")) == "TOO_MANY_ATTEMPTS"
    assert (await log_in(guesser, "bob", "password123"))["user"] == {"login": "bob"}

    fake_time.now += timedelta(seconds=61)  # the lock is over, and the failures forgotten
    assert (await log_in(guesser, "alice", "password123"))["user"] == {"login": "alice"}
    assert code_of(await log_in(guesser, "alice", "wrong")) == "INVALID_CREDENTIALS"
    assert fake_time.waits == [0.25, 0.5, 1.0, 1.0, 1.0, 1.0]  # bob's came after 9 from the address


async def test_an_ipv6_guesser_counts_as_its_64(client_at, fake_time, make_user):
    """Rotating addresses inside one IPv6 /64 is one address: six guesses from six addresses of
    2001:db8:1:2::/64 lock that /64 out of alice; alice logs in from another /64."""
    await make_user("alice")
    for i in range(6):
        guess = await log_in(client_at(f"2001:db8:1:2::{i + 1:x}"), "alice", f"guess-{i}")
        assert code_of(guess) == "INVALID_CREDENTIALS"
    assert code_of(await log_in(client_at("2001:db8:1:2:ffff::9"), "alice", "password123")) == "TOO_MANY_ATTEMPTS"
    assert (await log_in(client_at("2001:db8:1:3::1"), "alice", "password123"))["user"] == {"login": "alice"}


async def test_a_success_forgets_the_logins_failures(client_at, fake_time, make_user):
    await make_user("alice")
    for i in range(3):  # from three addresses: only the login's counter reaches 3
        assert code_of(await log_in(client_at(f"198.51.100.{i}"), "alice", "wrong")) == "INVALID_CREDENTIALS"
    assert fake_time.waits == [0.25]
    assert (await log_in(client_at("198.51.100.9"), "alice", "password123"))["token"].startswith("cw_")
    assert fake_time.waits == [0.25, 0.5]  # the success waited too: it came after 3 failures
    assert code_of(await log_in(client_at("198.51.100.10"), "alice", "wrong")) == "INVALID_CREDENTIALS"
    assert fake_time.waits == [0.25, 0.5]  # counted from zero again


async def test_failures_from_one_address_lock_the_address_for_every_login(client_at, fake_time, make_user):
    await make_user("alice")
    guesser = client_at("203.0.113.7")
    for i in range(10):  # ten login names, known or not
        assert code_of(await log_in(guesser, f"nobody{i}", "wrong")) == "INVALID_CREDENTIALS"
    assert code_of(await log_in(guesser, "alice", "password123")) == "TOO_MANY_ATTEMPTS"
    assert (await log_in(client_at("192.0.2.1"), "alice", "password123"))["user"] == {"login": "alice"}


async def test_forgotten_counters_are_deleted_a_few_at_a_time(client_at, fake_time, db, monkeypatch):
    """Made-up login names each add counters; a later attempt that starts a counter deletes at
    most CLEANUP_BATCH forgotten ones (found by the index on last_failure_at), not all of them."""
    monkeypatch.setattr(throttle, "CLEANUP_BATCH", 4)

    async def counters() -> int:
        async with db.session() as session:
            return await session.scalar(select(func.count()).select_from(LoginAttempt))

    for i in range(5):  # a login, a pair and an address counter each
        assert code_of(await log_in(client_at(f"198.51.100.{i}"), f"nobody{i}", "wrong")) == "INVALID_CREDENTIALS"
    assert await counters() == 15
    fake_time.now += timedelta(seconds=61)
    assert code_of(await log_in(client_at("192.0.2.1"), "someone", "wrong")) == "INVALID_CREDENTIALS"
    assert await counters() == 15 - 4 + 3
    assert code_of(await log_in(client_at("192.0.2.2"), "someone else", "wrong")) == "INVALID_CREDENTIALS"
    assert await counters() == 15 - 8 + 6


async def test_a_burst_of_concurrent_guesses_cannot_pass_the_lockout(client_at, fake_time, make_user, held_hashes):
    """Twenty wrong passwords at once, then the right one while their hashes are held: each
    attempt is charged before its password is checked, by one upsert that returns the new
    count, so only the first six are checked and the rest, the right password included, are
    refused at once. A real race on both databases: on SQLite the upserts are serialized
    in-process (one writer), on PostgreSQL they queue on the counters' rows; reading the count
    first and recording the failure after the hash let every guess through."""
    await make_user("alice")
    guesser = client_at("203.0.113.7")
    burst = [asyncio.create_task(log_in(guesser, "alice", f"guess-{i}")) for i in range(20)]
    await until(lambda: sum(task.done() for task in burst) == 20 - 6)
    right = await asyncio.wait_for(log_in(guesser, "alice", "password123"), 10)
    assert right["token"] is None
    assert code_of(right) == "TOO_MANY_ATTEMPTS"
    held_hashes.release.set()

    codes = [code_of(answer) for answer in await asyncio.gather(*burst)]
    assert sorted(codes) == ["INVALID_CREDENTIALS"] * 6 + ["TOO_MANY_ATTEMPTS"] * 14
    assert len(held_hashes.checked) == 6


async def test_password_checks_beyond_the_bound_are_refused_at_once(server_with, fake_time, make_user, held_hashes):
    """Two password checks may be pending; a third login is refused at once, without hashing,
    and succeeds once the others are done."""
    await make_user("alice")
    await make_user("bob")
    client_at = server_with(login_max_password_checks=2)
    pending = [
        asyncio.create_task(log_in(client_at("198.51.100.1"), "bob", "password123")),
        asyncio.create_task(log_in(client_at("198.51.100.2"), "carol", "wrong")),
    ]
    await until(lambda: passwords.pending_password_checks() == 2)
    busy = await asyncio.wait_for(log_in(client_at("198.51.100.3"), "alice", "password123"), 10)
    assert busy == {
        "token": None,
        "user": None,
        "userErrors": [
            {
                "code": "TOO_MANY_ATTEMPTS",
                "message": "The server is busy checking other logins; try again in a few seconds.",
                "field": ["login"],
            }
        ],
    }
    held_hashes.release.set()
    bob, carol = await asyncio.gather(*pending)
    assert (bob["user"], code_of(carol)) == ({"login": "bob"}, "INVALID_CREDENTIALS")
    assert len(held_hashes.checked) == 2  # alice's was never hashed
    assert passwords.pending_password_checks() == 0
    assert (await log_in(client_at("198.51.100.3"), "alice", "password123"))["user"] == {"login": "alice"}


async def test_a_request_may_log_in_once(gql, make_user, count_statements):
    await make_user("alice")
    aliases = """mutation { a: login(input: {login: "alice", password: "x1"}) { token }
      b: login(input: {login: "alice", password: "x2"}) { token } }"""
    fragments = """fragment Guess on Mutation { c: login(input: {login: "alice", password: "x3"}) { token } }
      mutation { ...Guess d: login(input: {login: "alice", password: "x4"}) { token } }"""
    for document in (aliases, fragments):
        with count_statements() as counted:
            body = await gql.raw(document)
        assert body.get("data") is None
        assert [e["extensions"]["code"] for e in body["errors"]] == ["TOO_MANY_LOGINS"]
        assert counted.count == 0  # refused before anything ran
    # One login, spread twice, is one field: it runs once and is allowed.
    once = """fragment Me on Mutation { login(input: {login: "alice", password: "password123"}) { token } }
      mutation { ...Me ...Me }"""
    assert (await gql(once))["login"]["token"].startswith("cw_")


async def test_the_password_hash_holds_no_database_lock(gql, make_user, monkeypatch):
    """While a login's hash runs, a write completes (on SQLite writes are serialized in the
    process: a hash inside the write transaction would make this write wait for it)."""
    _, alice = await make_user("alice")
    hashing, release = threading.Event(), threading.Event()
    real_verify = passwords.verify_password

    def slow_verify(password: str, stored: str) -> bool:
        hashing.set()
        release.wait(timeout=30)
        return real_verify(password, stored)

    monkeypatch.setattr(passwords, "verify_password", slow_verify)
    login = asyncio.create_task(gql(LOGIN, {"login": "alice", "password": "password123"}))
    try:
        assert await asyncio.to_thread(hashing.wait, 10)
        created = await asyncio.wait_for(gql(CREATE_PROJECT, {"input": {"displayName": "P"}}, token=alice), 10)
        assert created["createProject"]["userErrors"] == []
        assert not login.done()  # the hash was still in progress during the write
    finally:
        release.set()
    assert (await login)["login"]["user"] == {"login": "alice"}


async def test_logout_revokes_this_token_at_once(gql, make_user):
    _, made = await make_user("alice")
    first = (await gql(LOGIN, {"login": "alice", "password": "password123"}))["login"]["token"]
    second = (await gql(LOGIN, {"login": "alice", "password": "password123"}))["login"]["token"]
    third = (await gql(LOGIN, {"login": "alice", "password": "password123"}))["login"]["token"]
    for token in (first, second, third):  # each is remembered by the server
        assert (await gql(VIEWER, token=token))["viewer"] == {"login": "alice"}

    assert (await gql(LOGOUT, {"everywhere": False}, token=first))["logout"] == {
        "revokedTokens": 1,
        "userErrors": [],
    }
    assert (await gql.raw(VIEWER, token=first))["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert (await gql(VIEWER, token=second))["viewer"] == {"login": "alice"}

    assert (await gql(LOGOUT, {"everywhere": True}, token=second))["logout"]["revokedTokens"] == 3
    for token in (second, third, made):
        assert (await gql.raw(VIEWER, token=token))["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    body = await gql.raw(LOGOUT, {"everywhere": False}, token=first)  # a revoked token cannot log out
    assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_an_admin_revokes_a_users_tokens_or_one_token(gql, make_user):
    _, admin = await make_user("root", admin=True)
    bob_id, bob = await make_user("bob")
    _, carol = await make_user("carol")
    other_bob = (await gql(LOGIN, {"login": "bob", "password": "password123"}))["login"]["token"]
    for token in (bob, other_bob, carol):
        assert (await gql(VIEWER, token=token))["viewer"] is not None

    refused = (await gql(REVOKE_TOKEN, {"input": {"userId": bob_id}}, token=carol))["revokeToken"]
    assert refused == {
        "revokedTokens": 0,
        "userErrors": [{"code": "NOT_ALLOWED", "message": "Only an admin may revoke tokens.", "field": None}],
    }
    revoked = (await gql(REVOKE_TOKEN, {"input": {"token": carol}}, token=admin))["revokeToken"]
    assert revoked == {"revokedTokens": 1, "userErrors": []}
    assert (await gql.raw(VIEWER, token=carol))["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert (await gql(VIEWER, token=bob))["viewer"] == {"login": "bob"}

    revoked = (await gql(REVOKE_TOKEN, {"input": {"userId": bob_id}}, token=admin))["revokeToken"]
    assert revoked == {"revokedTokens": 2, "userErrors": []}
    for token in (bob, other_bob):
        assert (await gql.raw(VIEWER, token=token))["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"

    for bad, code, field in (
        ({"token": "cw_never_issued"}, "NOT_FOUND", ["token"]),
        ({"userId": "usr_nope"}, "NOT_FOUND", ["userId"]),
        ({}, "INVALID_INPUT", ["token"]),
        ({"token": carol, "userId": bob_id}, "INVALID_INPUT", ["token"]),
    ):
        (error,) = (await gql(REVOKE_TOKEN, {"input": bad}, token=admin))["revokeToken"]["userErrors"]
        assert (error["code"], error["field"]) == (code, field), bad


async def test_a_disabled_user_cannot_log_in_nor_use_a_token_until_enabled(gql, make_user):
    root_id, admin = await make_user("root", admin=True)
    bob_id, bob = await make_user("bob")
    assert (await gql(VIEWER, token=bob))["viewer"] == {"login": "bob"}  # remembered

    refused = (await gql(SET_DISABLED, {"u": root_id, "disabled": True}, token=bob))["disableUser"]
    assert refused["userErrors"][0]["code"] == "NOT_ALLOWED"
    myself = (await gql(SET_DISABLED, {"u": root_id, "disabled": True}, token=admin))["disableUser"]
    assert myself["userErrors"] == [
        {"code": "NOT_ALLOWED", "message": "You may not disable yourself.", "field": ["userId"]}
    ]

    disabled = (await gql(SET_DISABLED, {"u": bob_id, "disabled": True}, token=admin))["disableUser"]
    assert disabled == {"user": {"login": "bob", "disabled": True}, "userErrors": []}
    assert (await gql.raw(VIEWER, token=bob))["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    login = (await gql(LOGIN, {"login": "bob", "password": "password123"}))["login"]
    assert (login["token"], login["userErrors"][0]["code"]) == (None, "INVALID_CREDENTIALS")

    enabled = (await gql(SET_DISABLED, {"u": bob_id, "disabled": False}, token=admin))["disableUser"]
    assert enabled == {"user": {"login": "bob", "disabled": False}, "userErrors": []}
    assert (await gql(VIEWER, token=bob))["viewer"] == {"login": "bob"}
    assert (await gql(LOGIN, {"login": "bob", "password": "password123"}))["login"]["token"].startswith("cw_")


# --- Over WebSocket: a live connection loses access at once, not at the next periodic re-check.


@pytest.fixture(scope="module")
def slow_recheck_server(database: Database) -> Iterator[LiveServer]:
    """Re-checks live connections only every hour unless told that something changed."""
    server = LiveServer(database.url, ws_auth_refresh="3600")
    yield server
    server.stop()


async def closed_code(ws: WsClient, *, within: float = 10) -> int:
    """Wait for the server to close the socket; its close code."""
    with pytest.raises(websockets.ConnectionClosed) as closed:
        while True:
            await asyncio.wait_for(ws.socket.recv(), within)
    return closed.value.rcvd.code


async def test_logout_revocation_and_disabling_close_live_connections_at_once(slow_recheck_server, db, make_user):
    server = slow_recheck_server
    _, admin = await make_user("root", admin=True)
    _, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    carol_id, carol = await make_user("carol")
    sockets = {}
    for name, token in (("alice", alice), ("bob", bob), ("carol", carol), ("admin", admin)):
        sockets[name] = await WsClient.connect(server.ws, token)
        await sockets[name].subscribe(NOTIFICATION_LEVELS)

    assert (await server.gql(LOGOUT, {"everywhere": False}, token=alice))["logout"]["revokedTokens"] == 1
    assert await closed_code(sockets["alice"]) == 4403
    revoked = await server.gql(REVOKE_TOKEN, {"input": {"userId": bob_id}}, token=admin)
    assert revoked["revokeToken"]["revokedTokens"] == 1
    assert await closed_code(sockets["bob"]) == 4403
    disabled = await server.gql(SET_DISABLED, {"u": carol_id, "disabled": True}, token=admin)
    assert disabled["disableUser"]["userErrors"] == []
    assert await closed_code(sockets["carol"]) == 4403

    # The admin's connection stays open.
    await sockets["admin"].socket.send(json.dumps({"type": "ping"}))
    assert json.loads(await asyncio.wait_for(sockets["admin"].socket.recv(), 10)) == {"type": "pong"}
    await sockets["admin"].close()
