"""The provider's token over WebSocket (issue 45 point 2): accepted in connection_init's
payload, refused with 4403 and the sentence; a connection that came with one stays open while
the token and its user are good, as the server checks live connections again, and is closed
saying why once its user is disabled."""

import asyncio
import json
from typing import Any

import pytest
import websockets

from tests.fixtures.documents import SET_DISABLED, VIEWER_ID
from tests.fixtures.live import WsClient
from tests.fixtures.oidc import on_loopback


async def _closed(socket: Any) -> Any:
    with pytest.raises(websockets.ConnectionClosed) as closed:
        while True:
            await asyncio.wait_for(socket.recv(), 10)
    assert closed.value.rcvd is not None
    return closed.value.rcvd


async def test_a_providers_token_opens_a_live_connection_that_stays_until_its_user_is_disabled(
    oidc_app, provider, make_user
):
    app = await oidc_app(ws_auth_refresh=0.2)  # live connections checked again five times a second
    async with on_loopback(app.app, lifespan="on") as port:
        url = f"ws://127.0.0.1:{port}/graphql"
        client = await WsClient.connect(url, provider.token("sub-ada"))
        await client.subscribe(VIEWER_ID)
        [answer] = await client.receive(1)
        assert answer["viewer"]["login"] == "ada"
        assert [m for m in await client.quiet(1.0) if m["type"] != "complete"] == []  # still open after re-checks
        await client.subscribe(VIEWER_ID)
        assert (await client.receive(1))[0]["viewer"]["login"] == "ada"

        _, admin = await make_user("root", admin=True)
        disabled = await app.gql(SET_DISABLED, {"u": answer["viewer"]["id"], "disabled": True}, token=admin)
        assert disabled["disableUser"]["userErrors"] == []
        close = await _closed(client.socket)
        assert (close.code, close.reason) == (4403, "The token's user is disabled.")


async def test_a_refused_token_closes_the_connection_with_its_sentence(oidc_app, provider):
    app = await oidc_app()
    async with on_loopback(app.app) as port:
        async with websockets.connect(f"ws://127.0.0.1:{port}/graphql", subprotocols=["graphql-transport-ws"]) as ws:
            token = provider.token("sub-ada", aud="another-app")
            await ws.send(json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}}))
            close = await _closed(ws)
    assert close.code == 4403
    assert close.reason == "The token is refused: its audience (aud) is 'another-app', not 'caseway-api'."
