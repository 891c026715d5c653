"""How the server serves the built dashboard and GraphiQL (server/web.py): pages revalidated,
hashed assets cached for a year, a same-origin policy, and one sentence when nothing is built."""

import httpx
import pytest

from models import Database
from server.app import create_app
from server.settings import Settings

DASHBOARD = '<!doctype html><div id="app"></div><script type="module" src="/assets/index-D4sh.js"></script>'
GRAPHIQL = '<!doctype html><div id="graphiql"></div><script type="module" src="/assets/graphiql-G1q.js"></script>'


@pytest.fixture
def built(tmp_path):  # type: ignore[no-untyped-def]
    """A build as `make web` leaves it: two pages naming hashed assets."""
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text(DASHBOARD)
    (tmp_path / "graphiql.html").write_text(GRAPHIQL)
    (tmp_path / "assets" / "index-D4sh.js").write_text("console.log('dashboard')")
    return tmp_path


async def client_for(db: Database, web_dir) -> httpx.AsyncClient:  # type: ignore[no-untyped-def]
    app = create_app(Settings(database_url=db.url, web_dir=web_dir), db=db)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test")


async def test_the_dashboard_and_graphiql_pages_come_from_the_build(db, built):
    async with await client_for(db, built) as client:
        dashboard = await client.get("/")
        graphiql = await client.get("/graphql", headers={"Accept": "text/html"})
    assert dashboard.status_code == 200 and dashboard.text == DASHBOARD
    assert graphiql.status_code == 200 and graphiql.text == GRAPHIQL
    for page in (dashboard, graphiql):
        assert page.headers["cache-control"] == "no-cache"  # names this build's assets
        policy = dict(d.strip().split(" ", 1) for d in page.headers["content-security-policy"].split(";"))
        assert policy["default-src"] == "'none'"
        for directive in ("script-src", "connect-src", "worker-src"):
            assert policy[directive] == "'self'", directive
        assert "http" not in page.headers["content-security-policy"]  # no other host, for anything


async def test_hashed_assets_are_cached_for_a_year_and_unknown_ones_are_404(db, built):
    async with await client_for(db, built) as client:
        asset = await client.get("/assets/index-D4sh.js")
        missing = await client.get("/assets/index-0ld.js")
    assert asset.status_code == 200 and asset.text == "console.log('dashboard')"
    assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert asset.headers["content-type"].startswith("text/javascript")
    assert asset.headers["x-content-type-options"] == "nosniff"
    assert missing.status_code == 404


async def test_without_a_build_the_pages_say_so_and_the_api_serves(db, tmp_path):
    async with await client_for(db, tmp_path / "not-built") as client:
        dashboard = await client.get("/")
        graphiql = await client.get("/graphql", headers={"Accept": "text/html"})
        api = await client.post("/graphql", json={"query": "{ __typename }"})
        asset = await client.get("/assets/index-D4sh.js")
    assert dashboard.status_code == 503 and "The dashboard is not built" in dashboard.text
    assert "make web" in dashboard.text
    assert graphiql.status_code == 503 and "The GraphiQL playground is not built" in graphiql.text
    assert api.status_code == 200 and api.json()["data"] == {"__typename": "Query"}
    assert asset.status_code == 404
