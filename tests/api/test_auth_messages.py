"""Why a request is not authenticated, in words (issue 24 point 4): one code, UNAUTHENTICATED,
and a sentence per reason — over HTTP as the error's message, over WebSocket as the close
reason; the old subscription protocol's refusal names the setting that turns it on; a
subscription to a scope that does not exist, or is hidden, says so at once."""

import asyncio
import json
from datetime import timedelta

import pytest
import websockets
from sqlalchemy import update

from engine.people import identity
from models import ApiToken, utcnow
from tests.fixtures.documents import CREATE_PROJECT, UPDATE_PROJECT, VIEWER
from tests.fixtures.live import LiveServer, WsClient

LOGOUT_HERE = "mutation { logout { revokedTokens } }"
DISABLE_USER = "mutation($u: ID!) { disableUser(input: {userId: $u}) { user { login } userErrors { code } } }"
UNKNOWN_TOKEN = "cw_" + "x" * 43


async def _tokens_of_every_kind(db, gql, make_user) -> dict[str, str | None]:
    """A header (or none) per reason a request is refused."""
    _, admin = await make_user("admin", admin=True)
    _, revoked = await make_user("rita")
    assert (await gql(LOGOUT_HERE, token=revoked))["logout"]["revokedTokens"] == 1
    _, expired = await make_user("eve")
    async with db.transaction() as s:
        await s.execute(
            update(ApiToken)
            .values(expires_at=utcnow() - timedelta(minutes=1))
            .where(ApiToken.token_hash == identity._token_hash(expired))
        )
    dan_id, disabled = await make_user("dan")
    assert (await gql(DISABLE_USER, {"u": dan_id}, token=admin))["disableUser"]["userErrors"] == []
    return {
        "missing": None,
        "malformed scheme": "Basic YWRhOnB3",
        "malformed token": "Bearer not-a-token",
        "unknown": f"Bearer {UNKNOWN_TOKEN}",
        "expired": f"Bearer {expired}",
        "revoked": f"Bearer {revoked}",
        "disabled": f"Bearer {disabled}",
    }


EXPECTED = {
    "missing": "Authentication required",
    "malformed scheme": "malformed",
    "malformed token": "malformed",
    "unknown": "unknown",
    "expired": "expired",
    "revoked": "revoked",
    "disabled": "disabled",
}


async def test_each_reason_has_its_own_sentence_over_http(db, gql, make_user, app_client):
    headers = await _tokens_of_every_kind(db, gql, make_user)
    messages = {}
    for reason, header in headers.items():
        response = await app_client.post(
            "/graphql", json={"query": VIEWER}, headers={"Authorization": header} if header else {}
        )
        error = response.json()["errors"][0]
        assert error["extensions"]["code"] == "UNAUTHENTICATED", (reason, error)
        assert EXPECTED[reason] in error["message"], (reason, error["message"])
        messages[reason] = error["message"]
    assert len(set(messages.values())) == 6  # the two malformed ones say the same


async def test_each_reason_closes_a_websocket_with_its_sentence(db, gql, make_user, live_server):
    headers = await _tokens_of_every_kind(db, gql, make_user)
    for reason, header in headers.items():
        async with websockets.connect(live_server.ws, subprotocols=["graphql-transport-ws"]) as socket:
            payload = {"authorization": header} if header else {}
            await socket.send(json.dumps({"type": "connection_init", "payload": payload}))
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(socket.recv(), 10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403, (reason, closed.value)
        assert EXPECTED[reason] in closed.value.rcvd.reason, (reason, closed.value.rcvd.reason)


async def test_a_live_connection_whose_token_is_revoked_is_closed_saying_so(gql, make_user, live_server):
    _, token = await make_user("lena")
    client = await WsClient.connect(live_server.ws, token)
    assert (await gql(LOGOUT_HERE, token=token))["logout"]["revokedTokens"] == 1
    with pytest.raises(websockets.ConnectionClosed) as closed:
        await asyncio.wait_for(client.socket.recv(), 10)
    assert closed.value.rcvd.code == 4403 and "revoked" in closed.value.rcvd.reason


async def test_the_legacy_protocol_is_refused_with_the_setting_that_enables_it(live_server):
    async with websockets.connect(live_server.ws, subprotocols=["graphql-ws"]) as socket:
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(socket.recv(), 10)
    assert closed.value.rcvd.code == 4406
    assert "CASEWAY_LEGACY_WS" in closed.value.rcvd.reason


async def test_subscribing_to_a_missing_or_hidden_scope_says_so(gql, make_user, live_server):
    _, owner = await make_user("olga")
    _, stranger = await make_user("sam")
    created = await gql(CREATE_PROJECT, {"input": {"displayName": "Private"}}, token=owner)
    hidden = created["createProject"]["project"]["id"]
    missing = "prj_" + "0" * 26
    document = "subscription($p: ID) { activity(projectId: $p) { id } }"
    client = await WsClient.connect(live_server.ws, stranger)
    try:
        answers = {}
        for project_id in (hidden, missing):
            op = await client.subscribe(document, {"p": project_id})
            message = json.loads(await asyncio.wait_for(client.socket.recv(), 10))
            assert message["id"] == op and message["type"] == "next", message
            errors = message["payload"]["errors"]
            assert json.loads(await asyncio.wait_for(client.socket.recv(), 10)) == {"id": op, "type": "complete"}
            assert errors[0]["extensions"]["code"] == "NOT_FOUND", errors
            answers[project_id] = errors[0]["message"].replace(project_id, "<id>")
        assert answers[hidden] == answers[missing] == "No project with id '<id>' exists."
        # the owner's subscription to the same project is accepted and live: a change made after
        # the project's last entry reaches it, and nothing else does. It says from where (after
        # that entry's cursor): the server may start a subscription without `after` once the
        # change is already past (graphql-transport-ws does not acknowledge a subscription; CI
        # saw the change missed so on a loaded machine).
        history = await gql(LAST_CURSORS, {"id": hidden}, token=owner)
        last = history["node"]["history"]["edges"][-1]["cursor"]
        owners = await WsClient.connect(live_server.ws, owner)
        await owners.subscribe(
            "subscription($p: ID, $a: String) { activity(projectId: $p, after: $a) { id kind } }",
            {"p": hidden, "a": last},
        )
        renamed = await gql(UPDATE_PROJECT, {"input": {"id": hidden, "displayName": "Still private"}}, token=owner)
        assert renamed["updateProject"]["userErrors"] == []
        came = await owners.receive_until(lambda m: m["type"] != "next" or _kind(m) == "project_updated")
        assert [(m["type"], _kind(m)) for m in came] == [("next", "project_updated")], came
        await owners.close()
    finally:
        await client.close()


LAST_CURSORS = """query($id: ID!) { node(id: $id) { ... on Project { history(first: 100) { edges { cursor } } } } }"""


def _kind(message: dict) -> str | None:
    return ((message["payload"].get("data") or {}).get("activity") or {}).get("kind")


@pytest.fixture(scope="module")
def legacy_server(database):
    server = LiveServer(database.url, legacy_ws="true")
    yield server
    server.stop()


async def test_with_the_legacy_protocol_on_a_refusal_says_why(legacy_server):
    async with websockets.connect(legacy_server.ws, subprotocols=["graphql-ws"]) as socket:
        await socket.send(
            json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {UNKNOWN_TOKEN}"}})
        )
        message = json.loads(await asyncio.wait_for(socket.recv(), 10))
    assert message["type"] == "connection_error" and "unknown" in message["payload"]["message"], message
