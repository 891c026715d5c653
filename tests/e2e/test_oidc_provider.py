"""Signing in with a real OpenID provider (issue 45 point 2): oidc-provider on loopback
(tests/fixtures/oidc_provider.py), its keys read through its discovery document; the
dashboard's authorization code with PKCE exchanged by the server, for a public client and for
one with a secret; the token it answers works as a bearer token, with the provider's groups."""

from pathlib import Path
from typing import Any

import httpx
import pytest

from models import Database
from server.app import create_app
from server.settings import Settings
from tests.fixtures.documents import CREATE_MANAGED_GROUP
from tests.fixtures.oidc_provider import authorize, pkce, real_provider

REDIRECT = "http://caseway.test/"
PUBLIC = {"client_id": "caseway", "token_endpoint_auth_method": "none"}
CONFIDENTIAL = {"client_id": "caseway-web", "client_secret": "s3cret-of-the-web-client"}
ACCOUNTS = {"ada": {"name": "Ada Lovelace", "groups": ["engineering", "finance"]}}
VIEWER_AND_GROUPS = (
    """{ viewer { login displayName } groups(first: 10) { edges { node { name members { login } } } } }"""
)


@pytest.fixture(scope="module")
def issuer() -> Any:
    clients = [
        {**client, "redirect_uris": [REDIRECT], "grant_types": ["authorization_code"], "response_types": ["code"]}
        for client in (PUBLIC, CONFIDENTIAL)
    ]
    with real_provider(clients, ACCOUNTS) as found:
        yield found


async def _app(db: Database, tmp_path: Path, issuer: str, client: dict[str, str]) -> Any:
    settings = Settings(
        database_url=db.url,
        documents_dir=tmp_path / "documents",
        oidc_issuer=issuer,
        oidc_audience=client["client_id"],  # the ID token's audience: the dashboard's client
        oidc_client_id=client["client_id"],
        oidc_client_secret=client.get("client_secret", ""),
    )
    return create_app(settings, db=db)


@pytest.mark.parametrize("client", [PUBLIC, CONFIDENTIAL], ids=["public client", "client with a secret"])
async def test_the_dashboards_code_becomes_a_token_that_signs_in(db, tmp_path, issuer, make_user, client):
    app = await _app(db, tmp_path, issuer, client)
    _, admin = await make_user("root", admin=True)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test") as http:
        for name in ("engineering", "sales"):
            await http.post(
                "/graphql",
                json={"query": CREATE_MANAGED_GROUP, "variables": {"name": name, "managed": "OIDC"}},
                headers={"Authorization": f"Bearer {admin}"},
            )
        config = (await http.get("/auth/oidc")).json()
        assert config["clientId"] == client["client_id"] and config["scope"] == "openid profile"
        assert config["authorizationEndpoint"].startswith(issuer)

        verifier, challenge = pkce()
        code = await authorize(
            issuer, client_id=client["client_id"], redirect_uri=REDIRECT, login="ada", challenge=challenge
        )
        exchange = {"code": code, "codeVerifier": verifier, "redirectUri": REDIRECT}
        answer = await http.post("/auth/oidc/token", json=exchange)
        assert answer.status_code == 200, answer.text
        token = answer.json()["token"]

        read = await http.post(
            "/graphql", json={"query": VIEWER_AND_GROUPS}, headers={"Authorization": f"Bearer {token}"}
        )
        data = read.json()["data"]
        assert data["viewer"] == {"login": "ada", "displayName": "Ada Lovelace"}
        members = {e["node"]["name"]: [m["login"] for m in e["node"]["members"]] for e in data["groups"]["edges"]}
        assert members == {"engineering": ["ada"], "sales": []}

        # A code is good once: the provider refuses it again, and the sentence says so.
        again = await http.post("/auth/oidc/token", json=exchange)
        assert again.status_code == 400
        assert again.json()["errors"][0]["message"].startswith("The identity provider refused the sign-in: ")
    await app.state.oidc.provider.close()


async def test_a_wrong_verifier_is_refused_by_the_provider(db, tmp_path, issuer):
    app = await _app(db, tmp_path, issuer, PUBLIC)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test") as http:
        _, challenge = pkce()
        code = await authorize(issuer, client_id="caseway", redirect_uri=REDIRECT, login="ada", challenge=challenge)
        other_verifier, _ = pkce()
        answer = await http.post(
            "/auth/oidc/token", json={"code": code, "codeVerifier": other_verifier, "redirectUri": REDIRECT}
        )
        assert answer.status_code == 400
        assert (
            answer.json()["errors"][0]["message"]
            == "The identity provider refused the sign-in: grant request is invalid."
        )
        missing = await http.post("/auth/oidc/token", json={"code": code})
        assert missing.status_code == 400
        assert missing.json()["errors"][0]["message"].startswith("Send a JSON object with code, codeVerifier")
    await app.state.oidc.provider.close()
