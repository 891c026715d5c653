"""S1: commit-to-delivery latency of live activity for N WebSocket subscribers.

One server process; N subscribers of `activity(projectId:)` on one client process, as ten
users with two views of the entries (half may view the item); then mutations one at a time.
Latency = time a subscriber receives the entry minus the time the mutation's HTTP response
arrived (the commit happened before the response, so this slightly understates the true
figure; the client's own receive loop overstates it at high N, though a minimal client
measured the same). The client's garbage collector is off while the events are measured.
"""

import asyncio
import contextlib
import gc
import json
import statistics
import time
import uuid
from typing import Any

import httpx
import websockets
from sqlalchemy import select

from bench import cpu
from engine.people import identity, permissions
from models import Database, User

# What a dashboard shows of each entry: who did what to which item.
QUERY = "subscription($p: ID) { activity(projectId: $p) { seq comment actor { login } workflowItem { displayName } } }"
SUBSCRIPTION = json.dumps({"id": "1", "type": "subscribe", "payload": {"query": QUERY, "variables": {}}})


# The audience: this many users, half of whom may view the item (the rest may read the
# project's history only, and get the entry with workflowItem null), subscribers spread evenly.
VIEWERS = 10


async def _token(database_url: str, login: str) -> str:
    db = Database(database_url)
    async with db.transaction() as s:
        user = await s.scalar(select(User).where(User.login == login))
        token = await identity.create_token(s, user_id=user.id, ttl_seconds=3600)
    await db.dispose()
    return token


async def _viewers(database_url: str, project_id: str, item_id: str) -> list[str]:
    """Tokens of VIEWERS new users who may follow the project's history; every other one may
    also view the item."""
    db = Database(database_url)
    tokens = []
    async with db.transaction() as s:
        for n in range(VIEWERS):
            user = await identity.create_user(
                s, actor=None, login=f"s1_{uuid.uuid4().hex[:8]}", password=uuid.uuid4().hex
            )
            grants = [(project_id, "project.viewHistory")] + ([(item_id, "workflowItem.view")] if n % 2 else [])
            for resource_id, intent in grants:
                await permissions.grant_raw(s, resource_id=resource_id, intent=intent, party_id=user.id)
            tokens.append(await identity.create_token(s, user_id=user.id, ttl_seconds=3600))
    await db.dispose()
    return tokens


# Seconds the subscribers have to connect and subscribe, all of them; past it the run stops and
# says how many did (a storm the server cannot open made S1 wait for ever: issue 47, finding 7).
CONNECT_TIMEOUT = 60.0


async def measure(
    server_url: str,
    database_url: str,
    *,
    subscribers: int,
    events: int = 30,
    server_pid: int | None = None,
    connect_timeout: float = CONNECT_TIMEOUT,
) -> dict[str, Any]:
    """``connected`` says how many subscribers opened and subscribed; when not all did within
    ``connect_timeout`` seconds (each has the client's 10 s for its opening handshake), the
    run stops there, its latencies NaN, and ``failures`` counts why the others did not.

    With ``server_pid``, also the CPU per delivery of the server and of this process (the
    subscribers' client), from the first event to the last delivery, the connections made by
    then. The server's share includes what it spends once per event (the mutation, the hub's
    reads), which weighs on each delivery ten times more at 100 subscribers than at 1,000."""
    token = await _token(database_url, "bench")
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=server_url, headers=headers, timeout=60) as http:

        async def gql(query: str, variables: dict[str, Any]) -> dict[str, Any]:
            body = (await http.post("/graphql", json={"query": query, "variables": variables})).json()
            assert not body.get("errors"), body
            return body["data"]

        project = await gql('mutation { createProject(input: {displayName: "S1"}) { project { id } } }', {})
        project_id = project["createProject"]["project"]["id"]
        sub = await gql(
            """mutation($p: ID!) { createSubproject(input: {projectId: $p, displayName: "S",
            currency: "EUR", workflow: "bug"}) { subproject { id } } }""",
            {"p": project_id},
        )
        item = await gql(
            """mutation($s: ID!) { createWorkflowItem(input: {subprojectId: $s, displayName: "I"}) {
            workflowItem { id } } }""",
            {"s": sub["createSubproject"]["subproject"]["id"]},
        )
        item_id = item["createWorkflowItem"]["workflowItem"]["id"]
        viewers = await _viewers(database_url, project_id, item_id)

        ws_url = server_url.replace("http://", "ws://") + "/graphql"
        received: dict[str, list[float]] = {}
        ready = 0
        failures: dict[str, int] = {}
        all_ready = asyncio.Event()

        async def subscriber(token: str) -> None:
            try:
                await subscribed(token)
            except (TimeoutError, OSError, websockets.WebSocketException) as error:
                failures[type(error).__name__] = failures.get(type(error).__name__, 0) + 1
                if ready + sum(failures.values()) == subscribers:
                    all_ready.set()  # every one has answered, some with a failure: stop waiting
                raise

        async def subscribed(token: str) -> None:
            nonlocal ready
            async with websockets.connect(ws_url, subprotocols=["graphql-transport-ws"], max_queue=None) as ws:
                await ws.send(json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}}))
                await ws.recv()
                message = json.loads(SUBSCRIPTION)
                message["payload"]["variables"] = {"p": project_id}
                await ws.send(json.dumps(message))
                ready += 1
                if ready + sum(failures.values()) == subscribers:
                    all_ready.set()
                seen = 0
                while seen < events:
                    raw = await ws.recv()
                    now = time.perf_counter()
                    marker = raw.find('"comment":"e')
                    if marker >= 0:
                        key = raw[marker + 11 : raw.index('"', marker + 11)]
                        received.setdefault(key, []).append(now)
                        seen += 1

        tasks = []
        for i in range(subscribers):
            tasks.append(asyncio.create_task(subscriber(viewers[i % VIEWERS])))
            if i % 50 == 49:
                await asyncio.sleep(0.05)  # do not stampede the accept queue
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(all_ready.wait(), connect_timeout)
        if ready < subscribers:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            nan = float("nan")
            return {
                "subscribers": subscribers,
                "connected": ready,
                "failures": failures,
                "events": 0,
                "deliveries": 0,
                **dict.fromkeys(("p50_ms", "p99_ms", "max_ms", "slowest_event_median_ms"), nan),
                "first_event_median_ms": None,
                "server_ms_per_delivery": None,
                "client_ms_per_delivery": None,
            }
        await asyncio.sleep(1.0)  # every subscription registered with the hub
        # This client's own collector stays out of the measurement: with 1,000 connections'
        # objects alive, its full collections paused the receive loop for 85-151 ms in the
        # middle of an event (seen with gc.callbacks), delaying every delivery in flight.
        gc.collect()
        gc.freeze()
        gc.disable()

        meter = cpu.Meter(server_pid).start() if server_pid else None
        committed: dict[str, float] = {}
        for n in range(events):
            key = f"e{n}"
            await gql(
                """mutation($i: ID!, $c: String!) { executeAction(input: {workflowItemId: $i,
                action: "comment", comment: $c}) { userErrors { code } } }""",
                {"i": item_id, "c": key},
            )
            committed[key] = time.perf_counter()
            await asyncio.sleep(0.2)  # one event at a time: measure delivery, not queueing
        try:
            await asyncio.wait_for(asyncio.gather(*tasks), timeout=120)
        finally:
            gc.enable()
            gc.unfreeze()
        use = meter.stop(events * subscribers) if meter else None

    latencies = sorted((t - committed[key]) * 1000 for key, times in received.items() for t in times)
    per_event = {key: statistics.median((t - committed[key]) * 1000 for t in times) for key, times in received.items()}
    return {
        "subscribers": subscribers,
        "connected": ready,
        "failures": failures,
        "events": events,
        "deliveries": len(latencies),
        "p50_ms": statistics.median(latencies),
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "max_ms": latencies[-1],
        "slowest_event_median_ms": max(per_event.values()),
        "first_event_median_ms": per_event.get("e0"),
        "server_ms_per_delivery": use.server_ms if use else None,
        "client_ms_per_delivery": use.driver_ms if use else None,
    }
