"""The README runs: every shell block and GraphQL document in it, in order, as a reader would.

GraphQL documents go to a live server whose database holds the demo data and nothing else, with
the demo admin's token until a `login` answers with another. An id written as ``"prj_…"`` stands
for the last id of that kind (`prj`, `sub`, `wfi`, `usr`, ...) an earlier answer gave. Every
answer must be free of errors and `userErrors`; a subscription must deliver its first event.

Shell blocks run one after another in one temporary directory (with `.venv` and `engine` linked
from this checkout), with `bash -euo pipefail`, keeping exported variables from block to block
as a terminal would. The README's address (127.0.0.1:8000) is the live server's, `$TOKEN` the
current token, and a block about PostgreSQL runs on a database of its own, named in place of the
README's `caseway`, when a PostgreSQL server answers. A block preceded by
``<!-- not run: REASON -->`` is not run: it would serve until stopped or install; there are few.
"""

import asyncio
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest
from graphql import parse, validate

from models import Database
from schema import schema
from server import settings_table
from server.bootstrap import demo_token, load_demo
from server.settings import Settings
from tests.docs_blocks import ROOT, Block, blocks
from tests.fixtures.database import POSTGRES_URL
from tests.fixtures.live import LiveServer, WsClient

README = ROOT / "README.md"
MAX_NOT_RUN = 4  # exceptions stay few: each says why in its marker
PLACEHOLDER = re.compile(r'"([a-z]+)_…"')
AN_ID = re.compile(r"^([a-z]+)_[0-9A-Za-z]+$")
README_ADDRESS = "http://127.0.0.1:8000"
# The README's PostgreSQL database, as its blocks spell it; the test puts its own in its place.
PG_NAMES = (
    "postgresql://postgres@127.0.0.1:5432/caseway",
    "createdb -h 127.0.0.1 -U postgres caseway",
    "DATABASE caseway",
)


def readme_blocks() -> list[Block]:
    return blocks(README)


@pytest.mark.backend_free
def test_every_block_is_run_or_says_why_not():
    found = readme_blocks()
    unknown = [b.where for b in found if b.language not in ("sh", "graphql")]
    assert not unknown, unknown
    skipped = [b for b in found if b.marker.startswith("not run")]
    assert all(re.match(r"not run: \w", b.marker) for b in skipped), [b.where for b in skipped]
    assert len(skipped) <= MAX_NOT_RUN
    assert any(b.language == "graphql" and b.text.lstrip().startswith("subscription") for b in found)
    text = README.read_text()
    assert all(name in text for name in PG_NAMES), "the PostgreSQL names the test replaces left the README"


@pytest.mark.parametrize("path", [README, *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name)
@pytest.mark.backend_free
def test_graphql_documents_are_valid(path: Path):
    """Every GraphQL document of the README and docs/ is valid against the schema (docs/ too,
    which the live run below does not execute)."""
    documents = [b for b in blocks(path) if b.language == "graphql"]
    for block in documents:
        errors = validate(schema._schema, parse(block.text))
        assert not errors, (block.where, [e.message for e in errors])


async def test_readme_runs(db: Database, live_server: LiveServer, tmp_path: Path):
    assert await load_demo(db)
    reader = _Reader(live_server, await demo_token(db, Settings(database_url=db.url)), tmp_path)
    try:
        for block in readme_blocks():
            if block.marker.startswith("not run"):
                continue
            if block.language == "graphql":
                await reader.graphql(block)
            else:
                await reader.shell(block)
    finally:
        await reader.drop_databases()
    assert reader.ran_graphql >= 8 and reader.ran_shell >= 2
    # As make test: on CI a PostgreSQL server is there, and its blocks must have run.
    assert reader.ran_postgres >= 2 or (reader.left_out and not os.environ.get("CI"))


class _Reader:
    """What a reader of the README has at hand: a token, the ids answers gave, a terminal."""

    def __init__(self, server: LiveServer, token: str, workdir: Path) -> None:
        self.server = server
        self.token = token
        self.ids: dict[str, str] = {}
        self.workdir = workdir / "checkout"
        self.workdir.mkdir()
        (self.workdir / ".venv").symlink_to(Path(sys.prefix))
        (self.workdir / "engine").symlink_to(ROOT / "engine")
        self.env_file = workdir / "env.sh"
        self.env_file.write_text("")
        self.databases: list[str] = []
        self.ran_graphql = self.ran_shell = self.ran_postgres = self.left_out = 0

    async def graphql(self, block: Block) -> None:
        document = PLACEHOLDER.sub(self._id_for(block), block.text)
        if document.lstrip().startswith("subscription"):
            client = await WsClient.connect(self.server.ws, self.token)
            try:
                await client.subscribe(document)
                [data] = await client.receive(1)
            finally:
                await client.close()
        else:
            async with httpx.AsyncClient(base_url=self.server.http, timeout=30) as http:
                response = await http.post(
                    "/graphql", json={"query": document}, headers={"Authorization": f"Bearer {self.token}"}
                )
            body = response.json()
            assert response.status_code == 200 and not body.get("errors"), (block.where, body)
            data = body["data"]
        refused = list(_user_errors(data))
        assert not refused, (block.where, refused)
        self._remember(data)
        self.ran_graphql += 1

    def _id_for(self, block: Block):  # type: ignore[no-untyped-def]
        def replace(match: re.Match[str]) -> str:
            kind = match.group(1)
            assert kind in self.ids, f"{block.where}: no answer so far gave a {kind}_ id"
            return json.dumps(self.ids[kind])

        return replace

    def _remember(self, data: Any) -> None:
        if isinstance(data, dict):
            login = data.get("login")
            if isinstance(login, dict) and login.get("token"):
                self.token = login["token"]
            for value in data.values():
                self._remember(value)
        elif isinstance(data, list):
            for value in data:
                self._remember(value)
        elif isinstance(data, str) and (match := AN_ID.match(data)):
            self.ids[match.group(1)] = data

    async def shell(self, block: Block) -> None:
        script = block.text.replace(README_ADDRESS, self.server.http)
        if any(word in script for word in ("postgresql://", "createdb", "psql")):
            script = await self._own_postgres(script)
            if script is None:
                self.left_out += 1
                return
            self.ran_postgres += 1
        result = await asyncio.to_thread(
            subprocess.run,
            ["bash", "-euo", "pipefail", "-c", f"source {self.env_file}\n{script}\nexport -p > {self.env_file}"],
            cwd=self.workdir,
            env={**{k: v for k, v in os.environ.items() if not k.startswith("CASEWAY_")}, "TOKEN": self.token},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, (block.where, result.stdout[-2000:], result.stderr[-2000:])
        assert "Traceback" not in result.stderr, (block.where, result.stderr[-2000:])
        self.ran_shell += 1

    async def _own_postgres(self, script: str) -> str | None:
        """The block with the README's database replaced by a fresh name on the test's server;
        None when no PostgreSQL server answers (the block is then left out)."""
        try:
            await (await asyncpg.connect(POSTGRES_URL, timeout=5)).close()
        except (OSError, asyncpg.PostgresError):
            return None
        if not self.databases:
            self.databases.append(f"docs_readme_{uuid.uuid4().hex[:10]}")
        name = self.databases[0]
        server = urlsplit(POSTGRES_URL)
        url = POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"
        replacements = dict(
            zip(
                PG_NAMES,
                (
                    url,
                    f"createdb -h {server.hostname} -p {server.port or 5432} -U {server.username} {name}",
                    f"DATABASE {name}",
                ),
                strict=True,
            )
        )
        for readme_name, ours in replacements.items():
            script = script.replace(readme_name, ours)
        return f"export PGPASSWORD={server.password or ''}\n{script}"

    async def drop_databases(self) -> None:
        if not self.databases:
            return
        admin = await asyncpg.connect(POSTGRES_URL)
        try:
            for name in self.databases:
                await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


def _user_errors(data: Any):  # type: ignore[no-untyped-def]
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "userErrors" and value:
                yield from value
            else:
                yield from _user_errors(value)
    elif isinstance(data, list):
        for value in data:
            yield from _user_errors(value)


@pytest.mark.backend_free
def test_configuration_table_is_generated_from_the_settings():
    """Every setting, its default, what it allows and its meaning, as server/settings.py declares them."""
    text = README.read_text()
    shown = text[text.index(settings_table.BEGIN) : text.index(settings_table.END) + len(settings_table.END)]
    assert shown == "\n".join(settings_table.table()), "run: python -m server.settings_table README.md"


@pytest.mark.backend_free
def test_every_setting_says_what_it_means_and_every_number_its_bounds():
    """What a new setting needs: a description, and for a number both bounds (a polling interval
    of 0 spun an idle server at a full core; issue 47, finding 2)."""
    fields = Settings.model_fields
    assert not [name for name, field in fields.items() if not field.description]
    unbounded = [
        name
        for name, field in fields.items()
        if settings_table.is_number(field) and not re.search(r"\d+ to |, at most ", settings_table.bounds(field) or "")
    ]
    assert not unbounded
