"""Signed download links on a server of several workers (PostgreSQL): `caseway serve --workers 2`
with no CASEWAY_SECRET_KEY hands its workers one link key, so a link that one worker signed
downloads from the other. Each download is a new connection, which either worker may accept."""

import asyncio
import json
import uuid

import httpx
import pytest

from bench.server import Serve
from tests.fixtures.browser import demo_ids
from tests.fixtures.database import BACKEND, POSTGRES_URL, admin_sql
from tests.fixtures.documents import ADD_DOCUMENT

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.postgres,
    pytest.mark.skipif(BACKEND != "postgres", reason="several workers need PostgreSQL"),
]

CREATE_GUTTER = """mutation($s: ID!) { createWorkflowItem(input: {subprojectId: $s, displayName: "Gutter"}) {
  workflowItem { id } userErrors { code } } }"""

BODY = bytes(range(256)) * 8 + b"receipt 88\n"


@pytest.fixture
def two_workers(tmp_path):  # type: ignore[no-untyped-def]
    name = f"caseway_links_{uuid.uuid4().hex[:8]}"
    asyncio.run(admin_sql(f'CREATE DATABASE "{name}"'))
    env = {"CASEWAY_SECRET_KEY": "", "CASEWAY_DOCUMENTS_DIR": str(tmp_path / "documents")}
    server = None
    try:
        server = Serve(POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}", workers=2, env=env)
        yield server
    finally:
        if server is not None:
            server.stop()
        asyncio.run(admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def test_a_link_signed_by_one_worker_downloads_from_every_worker(two_workers: Serve):
    server = two_workers
    token = server.login("alice")
    ids = demo_ids(server, token)
    item = server.gql(CREATE_GUTTER, {"s": ids["Roof"]}, token=token)["createWorkflowItem"]["workflowItem"]["id"]
    operations = json.dumps({"query": ADD_DOCUMENT, "variables": {"input": {"workflowItemId": item, "file": None}}})
    added = httpx.post(
        f"{server.url}/graphql",
        data={"operations": operations, "map": json.dumps({"0": ["variables.input.file"]})},
        files={"0": ("receipt.bin", BODY, "application/octet-stream")},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    ).json()["data"]["addDocument"]
    assert added["userErrors"] == []
    link = added["document"]["url"]
    assert link and "sig=" in link
    answers = []
    for _ in range(24):  # new connections: each worker accepts some of them
        with httpx.Client(base_url=server.url, timeout=30) as fresh:
            answer = fresh.get(link)
        answers.append((answer.status_code, answer.content == BODY))
    assert answers == [(200, True)] * 24
