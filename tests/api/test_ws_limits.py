"""Bounded work over WebSocket (issue 19): a query or mutation sent over graphql-transport-ws
has the same time limit as over HTTP, one connection runs a bounded number at once, and a
message larger than the body limit is refused by the server."""

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import websockets
from sqlalchemy import select, text

from models import Database, Project
from server.app import create_app
from server.settings import Settings
from tests.fixtures.documents import CREATE_PROJECT, UPDATE_PROJECT
from tests.fixtures.live import LiveServer


class InProcessSocket:
    """A graphql-transport-ws client on the ASGI app in this event loop: the app shares the
    test's database (and, on SQLite, its write lock), so a test can hold a lock a WebSocket
    operation waits on, as tests/api/test_request_limits.py does over HTTP."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.to_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.from_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None

    async def open(self, token: str) -> None:
        scope = {
            "type": "websocket",
            "asgi": {"version": "3.0"},
            "scheme": "ws",
            "path": "/graphql",
            "raw_path": b"/graphql",
            "root_path": "",
            "query_string": b"",
            "headers": [(b"host", b"caseway.test"), (b"sec-websocket-protocol", b"graphql-transport-ws")],
            "subprotocols": ["graphql-transport-ws"],
            "client": ("127.0.0.1", 50000),
            "server": ("caseway.test", 80),
        }
        self.task = asyncio.create_task(self.app(scope, self.to_app.get, self.from_app.put))
        await self.to_app.put({"type": "websocket.connect"})
        accepted = await asyncio.wait_for(self.from_app.get(), 10)
        assert accepted["type"] == "websocket.accept", accepted
        await self.send({"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}})
        assert (await self.receive())["type"] == "connection_ack"

    async def send(self, message: dict[str, Any]) -> None:
        await self.to_app.put({"type": "websocket.receive", "text": json.dumps(message)})

    async def subscribe(self, op: str, query: str, variables: dict[str, Any]) -> None:
        await self.send({"id": op, "type": "subscribe", "payload": {"query": query, "variables": variables}})

    async def receive(self, within: float = 10) -> dict[str, Any]:
        message = await asyncio.wait_for(self.from_app.get(), within)
        assert message["type"] == "websocket.send", message
        return json.loads(message["text"])

    async def close(self) -> None:
        if self.task is not None and not self.task.done():
            await self.to_app.put({"type": "websocket.disconnect", "code": 1000})
            await asyncio.wait_for(self.task, 10)


@pytest.fixture
async def socket_on(db: Database) -> AsyncIterator[Any]:
    """An open WebSocket (as ``token``) on an app with some settings changed."""
    opened: list[InProcessSocket] = []

    async def make(token: str, **changes: object) -> InProcessSocket:
        socket = InProcessSocket(create_app(Settings(database_url=db.url, **changes), db=db))
        await socket.open(token)
        opened.append(socket)
        return socket

    yield make
    for socket in opened:
        await socket.close()


@asynccontextmanager
async def holding_the_project(db: Database, project_id: str) -> AsyncIterator[None]:
    """What makes an update of the project wait: SQLite, the process's write lock; PostgreSQL,
    the project's row."""
    async with db.transaction() as holding:
        if not db.is_sqlite:
            await holding.execute(text("SELECT id FROM project WHERE id = :id FOR UPDATE"), {"id": project_id})
        yield


async def display_name(db: Database, project_id: str) -> str:
    async with db.read_session() as session:
        return (await session.execute(select(Project.display_name).where(Project.id == project_id))).scalar_one()


async def a_project(gql, token: str) -> str:  # type: ignore[no-untyped-def]
    created = await gql(CREATE_PROJECT, {"input": {"displayName": "Before"}}, token=token)
    return created["createProject"]["project"]["id"]


def rename(project_id: str, name: str) -> dict[str, Any]:
    return {"input": {"id": project_id, "displayName": name}}


async def test_a_slow_operation_over_websocket_is_stopped_at_the_time_limit(socket_on, db, gql, make_user):
    """Over WebSocket a mutation waiting on a lock ran as long as the lock was held: it is
    stopped at the limit as over HTTP, answers TIMEOUT, and its change never lands."""
    _, token = await make_user("alice")
    project_id = await a_project(gql, token)
    socket = await socket_on(token, operation_timeout=0.5)
    async with holding_the_project(db, project_id):
        started = time.perf_counter()
        await socket.subscribe("1", UPDATE_PROJECT, rename(project_id, "After"))
        answer = await socket.receive()  # bounded: a missing time limit fails here instead of hanging
        elapsed = time.perf_counter() - started
    assert answer["type"] == "error" and answer["id"] == "1", answer
    assert answer["payload"] == [
        {
            "message": "The operation took longer than 0.5 seconds and was stopped.",
            "extensions": {"code": "TIMEOUT"},
        }
    ]
    assert 0.5 <= elapsed < 5, elapsed
    assert await display_name(db, project_id) == "Before"
    await socket.subscribe("2", UPDATE_PROJECT, rename(project_id, "After"))
    done = await socket.receive()
    assert done["type"] == "next" and done["payload"]["data"]["updateProject"]["project"]["displayName"] == "After"
    assert (await socket.receive()) == {"id": "2", "type": "complete"}


async def test_one_connection_runs_a_bounded_number_of_operations_at_once(socket_on, db, gql, make_user):
    """Subscriptions were counted, queries and mutations were not: one connection could run any
    number at once. The excess is refused with TOO_MANY_OPERATIONS, the connection stays open,
    and a finished operation frees its place."""
    _, token = await make_user("alice")
    project_id = await a_project(gql, token)
    socket = await socket_on(token, ws_max_operations=2)
    async with holding_the_project(db, project_id):
        for op in ("1", "2", "3", "4"):
            await socket.subscribe(op, UPDATE_PROJECT, rename(project_id, f"Name {op}"))
        refused = [await socket.receive(), await socket.receive()]  # the two running ones wait on the lock
    assert {m["id"] for m in refused} == {"3", "4"} and {m["type"] for m in refused} == {"error"}, refused
    assert [m["payload"][0]["extensions"]["code"] for m in refused] == ["TOO_MANY_OPERATIONS"] * 2
    assert "At most 2 queries and mutations run at once" in refused[0]["payload"][0]["message"]
    finished = [await socket.receive() for _ in range(4)]  # next and complete for each of 1 and 2
    renamed = [m for m in finished if m["type"] == "next"]
    names = {m["id"]: m["payload"]["data"]["updateProject"]["project"]["displayName"] for m in renamed}
    assert names == {"1": "Name 1", "2": "Name 2"}, finished
    assert await display_name(db, project_id) in {"Name 1", "Name 2"}
    await socket.subscribe("5", "{ viewer { login } }", {})
    assert (await socket.receive())["payload"]["data"] == {"viewer": {"login": "alice"}}


async def test_a_burst_of_messages_is_capped_before_anything_is_parsed(socket_on, db, gql, make_user):
    """Messages that arrive together each start a task before any is parsed: past the sum of
    the two limits they are refused on arrival, with the same code."""
    _, token = await make_user("alice")
    project_id = await a_project(gql, token)
    socket = await socket_on(token, ws_max_operations=1, ws_max_subscriptions=1)
    async with holding_the_project(db, project_id):
        for op in ("1", "2", "3", "4"):  # queued together: the handler reads all four before any runs
            await socket.subscribe(op, UPDATE_PROJECT, rename(project_id, f"Name {op}"))
        refused = [await socket.receive() for _ in range(3)]
    on_arrival = [m for m in refused if "in flight" in m["payload"][0]["message"]]
    assert {m["id"] for m in on_arrival} == {"3", "4"}, refused
    assert on_arrival[0]["payload"][0] == {
        "message": "At most 2 operations may be in flight on one connection.",
        "extensions": {"code": "TOO_MANY_OPERATIONS"},
    }
    assert {m["payload"][0]["extensions"]["code"] for m in refused} == {"TOO_MANY_OPERATIONS"}
    assert (await socket.receive())["payload"]["data"]["updateProject"]["project"]["displayName"] == "Name 1"


# --- Message size, through uvicorn --------------------------------------------------------------


@pytest.fixture(scope="module")
def small_message_server(database: Database):  # type: ignore[no-untyped-def]
    server = LiveServer(database.url, max_body_bytes="20000")
    yield server
    server.stop()


async def test_a_websocket_message_past_the_body_limit_closes_the_connection(small_message_server, make_user):
    """uvicorn's own limit was 16 MiB a message; it is the body limit, as for HTTP."""
    _, token = await make_user("alice")
    async with websockets.connect(small_message_server.ws, subprotocols=["graphql-transport-ws"]) as socket:
        await socket.send(json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}}))
        assert json.loads(await asyncio.wait_for(socket.recv(), 10))["type"] == "connection_ack"
        padded = "{ viewer { login } } #" + "x" * 15_000  # within the limit: answered
        await socket.send(json.dumps({"id": "1", "type": "subscribe", "payload": {"query": padded}}))
        answer = json.loads(await asyncio.wait_for(socket.recv(), 10))
        assert answer["type"] == "next" and answer["payload"]["data"] == {"viewer": {"login": "alice"}}, answer
        oversized = "{ viewer { login } } #" + "x" * 30_000
        await socket.send(json.dumps({"id": "2", "type": "subscribe", "payload": {"query": oversized}}))
        with pytest.raises(websockets.ConnectionClosed) as closed:
            while True:
                await asyncio.wait_for(socket.recv(), 10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009, closed.value
