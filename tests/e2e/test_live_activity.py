"""Subscriptions against a running uvicorn with a real WebSocket client.

No test waits for a subscription to register: each subscribes with the `after` cursor of the
newest entry it has seen, so an entry written before the server registered the subscription is
still delivered (replayed). And no test waits for a quiet window to show that something did
not arrive: it writes a sentinel entry that must arrive after it, and checks what came first.
"""

import asyncio
import contextlib
import json

import pytest
import websockets
from sqlalchemy import update

from models import ApiToken
from tests.fixtures.database import BACKEND
from tests.fixtures.documents import CREATE_ITEM, CREATE_PROJECT, CREATE_SUBPROJECT, EXECUTE
from tests.fixtures.live import WsClient

ACTIVITY_AFTER = """subscription($p: ID, $after: String) { activity(projectId: $p, after: $after) {
  seq kind action comment actor { login } workflowItem { displayName } } }"""
NOTIFICATIONS_LIVE = """subscription { notifications { level activity { kind action } } }"""
COMMENT = {"action": "comment"}
NEWEST = """query($p: ID!) { node(id: $p) { ... on Project { history(first: 100) {
  edges { node { seq } } pageInfo { hasNextPage } } } } }"""


async def project_with_item(server, token, assignee_id=None):
    project = (await server.gql(CREATE_PROJECT, {"input": {"displayName": "Live"}}, token=token))["createProject"]
    sub = await server.gql(
        CREATE_SUBPROJECT,
        {"input": {"projectId": project["project"]["id"], "displayName": "S", "currency": "EUR", "workflow": "bug"}},
        token=token,
    )
    item_input = {"subprojectId": sub["createSubproject"]["subproject"]["id"], "displayName": "Thing"}
    if assignee_id:
        item_input["assigneeId"] = assignee_id
    item = (await server.gql(CREATE_ITEM, {"input": item_input}, token=token))["createWorkflowItem"]["workflowItem"]
    return project["project"]["id"], item["id"]


async def newest_cursor(server, token, project_id):
    """The cursor of the newest entry of a project: subscribing `after` it misses nothing that
    is written later, however long the server takes to register the subscription."""
    history = (await server.gql(NEWEST, {"p": project_id}, token=token))["node"]["history"]
    assert not history["pageInfo"]["hasNextPage"]  # the tests' projects have a few entries
    return str(max(edge["node"]["seq"] for edge in history["edges"]))


def is_comment(text):
    """A predicate for WsClient.receive_until: the `next` message of this comment."""
    return lambda m: m["type"] == "next" and m["payload"]["data"]["activity"]["comment"] == text


def comments(messages):
    return [m["payload"]["data"]["activity"]["comment"] for m in messages if m["type"] == "next"]


async def comment(server, token, item_id, text):
    result = await server.gql(EXECUTE, {"input": {"workflowItemId": item_id, **COMMENT, "comment": text}}, token=token)
    assert result["executeAction"]["userErrors"] == []


async def test_subscribe_receive_and_resume_exactly_once(live_server, db, make_user):
    _, alice = await make_user("alice")
    _, outsider = await make_user("outsider")
    project_id, item_id = await project_with_item(live_server, alice)
    cursor = await newest_cursor(live_server, alice, project_id)
    watcher = await WsClient.connect(live_server.ws, alice)
    stranger = await WsClient.connect(live_server.ws, outsider)
    await watcher.subscribe(ACTIVITY_AFTER, {"p": project_id, "after": cursor})
    await stranger.subscribe(ACTIVITY_AFTER, {"after": cursor})
    for text in ("one", "two"):
        await comment(live_server, alice, item_id, text)
    got = [e["activity"] for e in await watcher.receive(2)]
    assert [(e["kind"], e["comment"], e["actor"]["login"]) for e in got] == [
        ("action_executed", "one", "alice"),
        ("action_executed", "two", "alice"),
    ]
    assert got[0]["workflowItem"] == {"displayName": "Thing"}
    last_cursor = str(got[-1]["seq"])
    await watcher.close()
    for text in ("three", "four"):  # while the dashboard is away
        await comment(live_server, alice, item_id, text)
    back = await WsClient.connect(live_server.ws, alice)
    await back.subscribe(ACTIVITY_AFTER, {"p": project_id, "after": last_cursor})
    replayed = [e["activity"]["comment"] for e in await back.receive(2)]
    assert replayed == ["three", "four"]
    for text in ("five", "six"):
        await comment(live_server, alice, item_id, text)
    assert comments(await back.receive_until(is_comment("six"))) == ["five", "six"]  # no duplicates
    # The outsider may not view alice's project: of all the above, nothing before its own entry.
    _, own_item = await project_with_item(live_server, outsider)
    await comment(live_server, outsider, own_item, "outsider's own")
    seen = [m["payload"]["data"]["activity"] for m in await stranger.receive_until(is_comment("outsider's own"))]
    assert [e for e in seen if (e["actor"] or {}).get("login") == "alice"] == []
    assert seen[-1]["comment"] == "outsider's own"
    await back.close()
    await stranger.close()


async def test_revoked_access_stops_events(live_server, db, make_user):
    _, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    project_id, item_id = await project_with_item(live_server, alice)
    # bob plays a role in a second item of the project: its entries reach him without the grant.
    sub_id = await live_server.gql(
        """query($p: ID!) { node(id: $p) { ... on Project { subprojects { edges { node { id } } } } } }""",
        {"p": project_id},
        token=alice,
    )
    sub_id = sub_id["node"]["subprojects"]["edges"][0]["node"]["id"]
    bobs = {"subprojectId": sub_id, "displayName": "Bob's", "assigneeId": bob_id}
    bobs_item = (await live_server.gql(CREATE_ITEM, {"input": bobs}, token=alice))["createWorkflowItem"]
    grant = """mutation($r: ID!, $i: String!, $p: ID!) { %s(input: {resourceId: $r, intent: $i, partyId: $p}) {
               userErrors { code } } }"""
    await live_server.gql(
        grant % "grantPermission", {"r": project_id, "i": "project.viewHistory", "p": bob_id}, token=alice
    )
    ws = await WsClient.connect(live_server.ws, bob)
    await ws.subscribe(ACTIVITY_AFTER, {"p": project_id, "after": await newest_cursor(live_server, alice, project_id)})
    await comment(live_server, alice, item_id, "visible")
    assert [e["activity"]["comment"] for e in await ws.receive(1)] == ["visible"]
    await live_server.gql(
        grant % "revokePermission", {"r": project_id, "i": "project.viewHistory", "p": bob_id}, token=alice
    )
    await comment(live_server, alice, item_id, "hidden")
    await comment(live_server, alice, bobs_item["workflowItem"]["id"], "sentinel")
    assert comments(await ws.receive_until(is_comment("sentinel"))) == ["sentinel"]
    await ws.close()


async def test_each_subscriber_sees_only_the_related_rows_it_may_view(live_server, db, make_user):
    """The rows an entry points to are read once for all subscribers; each still gets the item
    only where its own read would: alice holds every grant, carol plays a role in the case,
    bob may read the project's history but not view the item."""
    _, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    carol_id, carol = await make_user("carol")
    project_id, item_id = await project_with_item(live_server, alice, assignee_id=carol_id)
    grant = """mutation($r: ID!, $p: ID!) { grantPermission(input: {resourceId: $r, intent: "project.viewHistory",
               partyId: $p}) { userErrors { code } } }"""
    await live_server.gql(grant, {"r": project_id, "p": bob_id}, token=alice)
    sockets = {
        name: await WsClient.connect(live_server.ws, token)
        for name, token in [("alice", alice), ("bob", bob), ("carol", carol)]
    }
    cursor = await newest_cursor(live_server, alice, project_id)
    for ws in sockets.values():
        await ws.subscribe(ACTIVITY_AFTER, {"p": project_id, "after": cursor})
    await comment(live_server, alice, item_id, "seen by three")
    seen = {name: (await ws.receive(1))[0]["activity"] for name, ws in sockets.items()}
    assert [event["actor"] for event in seen.values()] == [{"login": "alice"}] * 3
    assert seen["alice"]["workflowItem"] == seen["carol"]["workflowItem"] == {"displayName": "Thing"}
    assert seen["bob"]["workflowItem"] is None
    for ws in sockets.values():
        await ws.close()


async def test_subscribers_with_the_same_view_get_their_own_answers_to_personal_fields(live_server, db, make_user):
    """A live event's result is computed once for the subscribers that would all get the same
    (schema/execution.py). bob and dave may view the item and no more, so they see the event
    alike; what each may do with the item is still their own, and so is a result with it."""
    _, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    dave_id, dave = await make_user("dave")
    project_id, item_id = await project_with_item(live_server, alice)
    grant = """mutation($r: ID!, $i: String!, $p: ID!) { grantPermission(input: {resourceId: $r, intent: $i,
               partyId: $p}) { userErrors { code } } }"""
    for resource, intent, party in [
        (project_id, "project.viewHistory", bob_id),
        (project_id, "project.viewHistory", dave_id),
        (item_id, "workflowItem.view", bob_id),
        (item_id, "workflowItem.view", dave_id),
        (item_id, "workflowItem.update", dave_id),
    ]:
        result = await live_server.gql(grant, {"r": resource, "i": intent, "p": party}, token=alice)
        assert result["grantPermission"]["userErrors"] == []
    selection = """subscription($p: ID, $after: String) { activity(projectId: $p, after: $after) {
      comment actor { login } project { displayName } workflowItem { displayName allowedIntents } } }"""
    sockets, cursor = {}, await newest_cursor(live_server, alice, project_id)
    for name, token in [("bob", bob), ("dave", dave), ("bob again", bob)]:
        sockets[name] = await WsClient.connect(live_server.ws, token)
        await sockets[name].subscribe(selection, {"p": project_id, "after": cursor})
    await comment(live_server, alice, item_id, "one event")
    seen = {name: (await ws.receive(1))[0]["activity"] for name, ws in sockets.items()}
    assert {name: event["project"] for name, event in seen.items()} == dict.fromkeys(seen)  # no project.view
    assert sorted(seen["bob"]["workflowItem"]["allowedIntents"]) == ["workflowItem.view"]
    assert sorted(seen["dave"]["workflowItem"]["allowedIntents"]) == ["workflowItem.update", "workflowItem.view"]
    assert seen["bob again"] == seen["bob"]
    for ws in sockets.values():
        await ws.close()


async def test_notifications_stream(live_server, db, make_user):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    ws = await WsClient.connect(live_server.ws, dev)
    await ws.subscribe(NOTIFICATIONS_LIVE)
    # The notification stream has no cursor: until the server has registered it, an assignment
    # is not delivered. So assign dev new items until one's notification arrives (a condition,
    # not a sleep: the first one usually does).
    for _ in range(20):
        await project_with_item(live_server, sam, assignee_id=dev_id)
        with contextlib.suppress(TimeoutError):
            (note,) = await ws.receive(1, within=1)
            break
    else:
        raise AssertionError("no notification arrived")
    assert note["notifications"] == {"level": "ASSIGNED", "activity": {"kind": "action_executed", "action": "open"}}
    await ws.close()


async def test_bad_token_closes_with_4403(live_server, db):
    for init in ({"authorization": "Bearer cw_wrong"}, {}):
        socket = await websockets.connect(live_server.ws, subprotocols=["graphql-transport-ws"])
        await socket.send(json.dumps({"type": "connection_init", "payload": init}))
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(socket.recv(), 10)
        assert closed.value.rcvd.code == 4403


@pytest.mark.slow
@pytest.mark.timeout(600)  # 500 writes through a server process: minutes on a loaded machine
@pytest.mark.skipif(BACKEND != "postgres", reason="several server processes share one PostgreSQL database")
async def test_two_processes_deliver_500_activities_in_order(live_server, second_live_server, db, make_user):
    _, alice = await make_user("alice")
    project_id, item_id = await project_with_item(second_live_server, alice)
    ws = await WsClient.connect(live_server.ws, alice)  # subscribed on process A
    await ws.subscribe(ACTIVITY_AFTER, {"p": project_id, "after": await newest_cursor(live_server, alice, project_id)})

    async def writer(worker: int) -> None:  # mutations go to process B, 4 at a time
        for i in range(125):
            await comment(second_live_server, alice, item_id, f"{worker}-{i}")

    await asyncio.gather(*[writer(w) for w in range(4)])
    events = [e["activity"] for e in await ws.receive(500, within=60)]
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == 500
    assert sorted(e["comment"] for e in events) == sorted(f"{w}-{i}" for w in range(4) for i in range(125))
    await comment(second_live_server, alice, item_id, "sentinel")
    assert comments(await ws.receive_until(is_comment("sentinel"))) == ["sentinel"]  # no duplicates
    await ws.close()


async def test_connection_limits(strict_live_server, db, make_user):
    _, alice = await make_user("alice")
    # A connection that never sends connection_init is closed after the init timeout (0.5 s
    # here): opened first, so that wait overlaps the checks below.
    silent = await websockets.connect(strict_live_server.ws, subprotocols=["graphql-transport-ws"])
    with pytest.raises(websockets.InvalidStatus) as refused:  # refused before the handshake completes
        await websockets.connect(
            strict_live_server.ws, subprotocols=["graphql-transport-ws"], origin="https://evil.example"
        )
    assert refused.value.response.status_code == 403
    allowed = await websockets.connect(
        strict_live_server.ws, subprotocols=["graphql-transport-ws"], origin="https://dash.example"
    )
    await allowed.send(json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {alice}"}}))
    assert json.loads(await asyncio.wait_for(allowed.recv(), 10))["type"] == "connection_ack"
    await allowed.close()

    ws = await WsClient.connect(strict_live_server.ws, alice)  # no Origin header: not a browser
    for _ in range(3):
        await ws.subscribe(ACTIVITY_AFTER, {})
    messages = await ws.receive_until(lambda m: m == {"id": "3", "type": "complete"})
    (refusal,) = [m for m in messages if m["type"] == "next"]  # the third is refused, then completed
    assert refusal["id"] == "3" and refusal["payload"]["errors"][0]["extensions"]["code"] == "TOO_MANY_SUBSCRIPTIONS"
    assert {"id": "3", "type": "complete"} in messages
    await ws.close()

    with pytest.raises(websockets.ConnectionClosed) as closed:  # never sent connection_init
        await asyncio.wait_for(silent.recv(), 10)
    assert closed.value.rcvd.code == 4408


async def test_revoked_token_closes_the_connection(live_server, db, make_user):
    other_id, other = await make_user("other")
    ws = await WsClient.connect(live_server.ws, other)
    await ws.subscribe(ACTIVITY_AFTER, {})
    async with db.transaction() as s:
        await s.execute(update(ApiToken).values(revoked=True).where(ApiToken.user_id == other_id))
    # The server re-checks live tokens every 0.5 s in these tests (on PostgreSQL at once, told by
    # the trigger's NOTIFY) and closes the connection of a token that no longer works.
    with pytest.raises(websockets.ConnectionClosed) as closed:
        while True:
            message = json.loads(await asyncio.wait_for(ws.socket.recv(), 10))
            assert message["type"] != "next", message
    assert closed.value.rcvd.code == 4403


async def test_refused_mutations_publish_nothing(live_server, db, make_user):
    _, alice = await make_user("alice")
    project_id, item_id = await project_with_item(live_server, alice)
    ws = await WsClient.connect(live_server.ws, alice)
    await ws.subscribe(ACTIVITY_AFTER, {"p": project_id, "after": await newest_cursor(live_server, alice, project_id)})
    refused = await live_server.gql(EXECUTE, {"input": {"workflowItemId": item_id, "action": "close"}}, token=alice)
    assert refused["executeAction"]["userErrors"][0]["code"] == "ACTION_NOT_ENABLED"
    await comment(live_server, alice, item_id, "real")  # the sentinel: the first thing to arrive
    assert [e["activity"]["comment"] for e in await ws.receive(1)] == ["real"]
    await ws.close()


async def test_legacy_protocol_is_off_by_default(live_server, db):
    socket = await websockets.connect(live_server.ws, subprotocols=["graphql-ws"])
    with pytest.raises(websockets.ConnectionClosed) as closed:
        await asyncio.wait_for(socket.recv(), 10)
    assert closed.value.rcvd.code == 4406  # subprotocol not acceptable (CASEWAY_LEGACY_WS=1 enables it)


@pytest.mark.skipif(BACKEND != "postgres", reason="the LISTEN connection exists on PostgreSQL only")
async def test_listen_connection_comes_back_and_refills(live_server, second_live_server, db, make_user):
    import asyncpg

    from tests.fixtures.database import POSTGRES_URL

    _, alice = await make_user("alice")
    project_id, item_id = await project_with_item(second_live_server, alice)
    ws = await WsClient.connect(live_server.ws, alice)
    await ws.subscribe(ACTIVITY_AFTER, {"p": project_id, "after": await newest_cursor(live_server, alice, project_id)})
    admin = await asyncpg.connect(POSTGRES_URL)
    database = db.url.rsplit("/", 1)[1]
    listening = "SELECT pid FROM pg_stat_activity WHERE application_name = 'caseway-hub' AND datname = $1"
    try:
        killed = [r["pid"] for r in await admin.fetch(listening, database)]
        assert len(killed) >= 2  # one per server process
        for pid in killed:
            await admin.execute("SELECT pg_terminate_backend($1)", pid)
        await comment(second_live_server, alice, item_id, "while reconnecting")
        for _ in range(50):
            await asyncio.sleep(0.1)
            back = [r["pid"] for r in await admin.fetch(listening, database)]
            if len(back) >= len(killed) and not set(back) & set(killed):
                break
        assert len(back) >= len(killed) and not set(back) & set(killed)
    finally:
        await admin.close()
    await comment(second_live_server, alice, item_id, "after reconnecting")
    got = [e["activity"]["comment"] for e in await ws.receive(2)]
    assert got == ["while reconnecting", "after reconnecting"]
    await ws.close()
