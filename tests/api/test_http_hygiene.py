"""HTTP hygiene (issue 19): CORS from the same allowed origins as WebSockets, and security
headers on the GraphiQL page."""

import re

import httpx
import pytest

from models import Database
from server.app import create_app
from server.settings import Settings

ALLOWED = "https://app.example"


@pytest.fixture
async def client(db: Database):  # type: ignore[no-untyped-def]
    app = create_app(Settings(database_url=db.url, allowed_origins=[ALLOWED]), db=db)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test") as http:
        yield http


def preflight(origin: str) -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }


async def test_an_allowed_origin_may_call_the_http_endpoint(client):
    answer = await client.options("/graphql", headers=preflight(ALLOWED))
    assert answer.status_code == 200
    assert answer.headers["access-control-allow-origin"] == ALLOWED
    assert "POST" in answer.headers["access-control-allow-methods"]
    assert "authorization" in answer.headers["access-control-allow-headers"].lower()
    response = await client.post("/graphql", json={"query": "{ __typename }"}, headers={"Origin": ALLOWED})
    assert response.json()["data"] == {"__typename": "Query"}
    assert response.headers["access-control-allow-origin"] == ALLOWED


async def test_another_origin_gets_no_cors_grant_and_same_origin_clients_are_unaffected(client):
    refused = await client.options("/graphql", headers=preflight("https://evil.example"))
    assert refused.status_code == 400 and "access-control-allow-origin" not in refused.headers
    foreign = await client.post(
        "/graphql", json={"query": "{ __typename }"}, headers={"Origin": "https://evil.example"}
    )
    assert "access-control-allow-origin" not in foreign.headers  # the browser withholds the answer
    plain = await client.post("/graphql", json={"query": "{ __typename }"})  # curl, a server, a same-origin page
    assert plain.status_code == 200 and plain.json()["data"] == {"__typename": "Query"}
    assert "access-control-allow-origin" not in plain.headers


async def test_the_graphiql_page_carries_security_headers(db, tmp_path):
    """The page as `make web` builds it (tests/api/test_web_assets.py covers the serving)."""
    (tmp_path / "assets").mkdir()
    (tmp_path / "graphiql.html").write_text(
        '<!doctype html><title>GraphiQL</title><div id="graphiql"></div>'
        '<script type="module" crossorigin src="/assets/graphiql-Bx1.js"></script>'
    )
    settings = Settings(database_url=db.url, allowed_origins=[ALLOWED], web_dir=tmp_path)
    transport = httpx.ASGITransport(app=create_app(settings, db=db))
    async with httpx.AsyncClient(transport=transport, base_url="http://caseway.test") as client:
        page = await client.get("/graphql", headers={"Accept": "text/html"})
        assert page.status_code == 200 and "graphiql" in page.text.lower()
        assert page.headers["x-content-type-options"] == "nosniff"
        assert page.headers["x-frame-options"] == "DENY"
        assert page.headers["referrer-policy"] == "no-referrer"
        policy = dict(d.strip().split(" ", 1) for d in page.headers["content-security-policy"].split(";"))
        assert policy["frame-ancestors"] == "'none'" and policy["default-src"] == "'none'"
        assert policy["connect-src"] == "'self'"
        # Fit for the page: its scripts are this server's, and nothing else may run.
        assert policy["script-src"] == "'self'"
        scripts = re.findall(r'<script[^>]*src="([^"]+)"', page.text)
        assert scripts and all(src.startswith("/") and not src.startswith("//") for src in scripts)
        assert not re.findall(r"<script>(.*?)</script>", page.text, flags=re.S)
        api = await client.post("/graphql", json={"query": "{ __typename }"})
        assert "content-security-policy" not in api.headers  # the JSON endpoint is not a page
