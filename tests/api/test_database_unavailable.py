"""A database that refuses connections or has none left (issue 47, finding 2: PostgreSQL's "too
many clients" reached the client as "Unexpected error."): the client is told UNAVAILABLE in a
sentence, with HTTP 503 and Retry-After, whether the request needed the database for its token
or for its operation."""

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest

from resolvers.errors import UNAVAILABLE_MESSAGE
from server.app import create_app
from server.settings import Settings
from tests.fixtures.documents import LOGIN
from tests.fixtures.refusing_postgres import full_postgres


@asynccontextmanager
async def refused() -> AsyncIterator[str]:
    """A PostgreSQL URL on a port where nothing listens: connection refused."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        yield f"postgresql://caseway@127.0.0.1:{closed.getsockname()[1]}/caseway"


@asynccontextmanager
async def client_on(url: str) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(Settings(database_url=url))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test") as client:
        yield client


@pytest.mark.parametrize("database", [full_postgres, refused], ids=["too many clients", "connection refused"])
@pytest.mark.parametrize(
    ("body", "headers"),
    [
        ({"query": LOGIN, "variables": {"login": "alice", "password": "correct horse"}}, {}),
        ({"query": "{ viewer { login } }"}, {"Authorization": "Bearer cw_some_token"}),
        ({"query": "{ projects(first: 1) { edges { node { id } } } }"}, {"Authorization": "Bearer cw_some_token"}),
    ],
    ids=["login", "viewer with a token", "projects with a token"],
)
async def test_an_unavailable_database_is_503_with_retry_after_and_a_sentence(database, body, headers):
    async with database() as url, client_on(url) as client:
        response = await client.post("/graphql", json=body, headers=headers)
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "5"
    errors = response.json()["errors"]
    assert [(e["message"], e["extensions"]["code"]) for e in errors] == [(UNAVAILABLE_MESSAGE, "UNAVAILABLE")]
    assert "Unexpected error." not in response.text
