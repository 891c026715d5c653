"""docs/workflows.md's example specs are defined through `defineWorkflow`, so the reference can't
drift from what the spec checker accepts: each ``<!-- spec: NAME -->`` block is defined and
named NAME, each ``<!-- refused: NAME CODE PATH -->``
block is refused with that code at that key (a check's code: INVALID_SPEC at that key in
userErrors, and the finding in diagnostics), each ``<!-- warned: NAME CODE PATH -->`` block is
defined with that warning, and each ``copy of PATH`` block is that built-in file, word for word."""

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from engine.people import identity
from models import Database
from server.app import create_app
from server.settings import Settings
from tests.docs_blocks import ROOT, Block, blocks

DOC = ROOT / "docs" / "workflows.md"
# Examples of keys still being built (webhook jobs): shown in the reference, not
# yet defined here. Take a name out of this set when its feature lands.
PENDING: set[str] = set()
# Settings an example needs from the operator (webhook endpoints are configured, never in specs).
SETTINGS: dict[str, dict[str, Any]] = {
    "invoice": {"webhooks": {"billing": {"url": "http://127.0.0.1:9/hook", "secret": "docs-example"}}},
}
DEFINE_SHORT = """mutation($spec: JSON!) { defineWorkflow(input: {spec: $spec}) {
  workflow { shortName version } diagnostics { code path } userErrors { code message field } } }"""
MARKERS = ("spec:", "refused:", "warned:")


def _examples() -> list[Block]:
    return [b for b in blocks(DOC) if b.language in ("yaml", "json")]


def _name(block: Block) -> str:
    return block.marker.split(":", 1)[1].split(",")[0].split()[0]


def _spec(block: Block) -> Any:
    return yaml.safe_load(block.text) if block.language == "yaml" else json.loads(block.text)


def test_every_example_is_named_and_pending_ones_exist():
    examples = _examples()
    assert all(b.marker.startswith(MARKERS) for b in examples), [
        b.where for b in examples if not b.marker.startswith(MARKERS)
    ]
    names = [_name(b) for b in examples]
    assert len(names) == len(set(names))
    assert names.count("bug") == 1 and PENDING <= set(names)
    for block in examples:
        assert _spec(block)["short_name"] == _name(block), block.where
        if ", copy of " in block.marker:
            assert block.text == (ROOT / block.marker.split(", copy of ", 1)[1]).read_text(), block.where


@pytest.mark.parametrize("block", _examples(), ids=_name)
async def test_example_is_defined_as_documented(block: Block, db: Database):
    name = _name(block)
    if name in PENDING:
        pytest.skip(f"{name}: its feature is being built (PENDING in this test)")
    async with db.transaction() as s:
        admin = await identity.create_user(s, actor=None, login="docs-admin", password="password123", admin=True)
        token = await identity.create_token(s, user_id=admin.id, ttl_seconds=3600)
        actor = await identity.actor_for(s, user_id=admin.id, login=admin.login, is_admin=True)
        group = await identity.create_group(s, actor=actor, name="core")
    spec = json.loads(json.dumps(_spec(block)).replace('"grp_core"', json.dumps(group.id)))
    app = create_app(Settings(database_url=db.url, **SETTINGS.get(name, {})), db=db)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test") as http:
        headers = {"Authorization": f"Bearer {token}"}
        response = await http.post(
            "/graphql", json={"query": DEFINE_SHORT, "variables": {"spec": spec}}, headers=headers
        )
    body = response.json()
    assert not body.get("errors"), body
    payload = body["data"]["defineWorkflow"]
    findings = [(d["code"], ["spec", *d["path"]]) for d in payload["diagnostics"]]
    if block.marker.startswith(("refused:", "warned:")):
        _, code, path = block.marker.split(":", 1)[1].split()
        assert (code, path.split(".")) in findings, payload
    if block.marker.startswith("refused:"):
        assert payload["workflow"] is None
        assert {"code": "INVALID_SPEC", "field": path.split(".")} in [
            {"code": e["code"], "field": e["field"]} for e in payload["userErrors"]
        ], payload
    else:
        assert payload["userErrors"] == [], payload
        assert payload["workflow"]["shortName"] == name


def test_doc_names_the_files_it_copies():
    copies = [b.marker.split(", copy of ", 1)[1] for b in _examples() if ", copy of " in b.marker]
    builtin = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "engine" / "spec" / "builtin_workflows").glob("*.yaml"))
    assert sorted(copies) == builtin
    assert all(Path(ROOT / c).exists() for c in copies)
