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
from tests.fixtures.documents import CREATE_ITEM, CREATE_PROJECT, CREATE_SUBPROJECT, DEFINE

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


PURCHASE_RUN = """mutation($input: ExecuteActionInput!) { executeAction(input: $input) {
  case { state { shortName } fields } activity { title data } preview { route }
  userErrors { code message field } } }"""
PURCHASE_CASE = """query($id: ID!) { node(id: $id) { ... on WorkflowItem { case { fields
  actionHistory(status: REFUSED) { edges { node { action { shortName } status } } } } } } }"""
PURCHASE_ROLE = """mutation($input: ReassignRoleInput!) { reassignRole(input: $input) { userErrors { code } } }"""


async def test_the_purchase_approval_runs_as_documented(gql, make_user):
    """ "A whole purchase approval" (Fields and rules), defined from the doc and run as it says."""
    (block,) = [b for b in _examples() if _name(b) == "purchase_request"]
    _, admin = await make_user("root", admin=True)
    _, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    carol_id, carol = await make_user("carol")
    assert (await gql(DEFINE, {"spec": _spec(block)}, token=admin))["defineWorkflow"]["userErrors"] == []
    project = (await gql(CREATE_PROJECT, {"input": {"displayName": "Office"}}, token=alice))["createProject"]
    given = {
        "projectId": project["project"]["id"],
        "displayName": "Furniture",
        "currency": "EUR",
        "workflow": "purchase_request",
        "validatorId": bob_id,
    }
    sub = (await gql(CREATE_SUBPROJECT, {"input": given}, token=alice))["createSubproject"]["subproject"]

    async def item(name):
        made = await gql(CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": name}}, token=alice)
        return made["createWorkflowItem"]["workflowItem"]["id"]

    def run(item_id, action, **extra):
        return {"input": {"workflowItemId": item_id, "action": action, **extra}}

    big, small = await item("Desks"), await item("Chairs")
    refused = (await gql(PURCHASE_RUN, run(big, "submit", fields={"amount": -5}), token=alice))["executeAction"]
    assert refused["userErrors"] == [
        {"code": "INVALID_FIELD", "message": "Amount must be at least 0.", "field": ["fields", "amount"]},
        {"code": "INVALID_FIELD", "message": "Vendor is required.", "field": ["fields", "vendor"]},
    ]
    for item_id, amount in ((big, 12000), (small, 800)):
        fields = {"amount": amount, "vendor": "Acme", "budget_code": "CAP-7"}
        done = (await gql(PURCHASE_RUN, run(item_id, "submit", fields=fields), token=alice))["executeAction"]
        assert done["activity"]["title"] == f"alice asked for {amount}.00 EUR from Acme"
        assert (
            await gql(
                PURCHASE_ROLE,
                {"input": {"workflowItemId": item_id, "role": "cfo", "partyIds": [carol_id]}},
                token=admin,
            )
        )["reassignRole"]["userErrors"] == []
    refused_expedite = (await gql(PURCHASE_CASE, {"id": big}, token=bob))["node"]["case"]["actionHistory"]
    assert [e["node"]["action"]["shortName"] for e in refused_expedite["edges"]] == ["expedite"]
    assert (await gql(PURCHASE_RUN, run(big, "approve", dryRun=True), token=bob))["executeAction"]["preview"] == {
        "route": 1
    }
    to_cfo = (await gql(PURCHASE_RUN, run(big, "approve"), token=bob))["executeAction"]
    assert to_cfo["case"]["state"]["shortName"] == "cfo_review" and to_cfo["activity"]["data"]["route"] == 1
    for token, sees in ((alice, False), (bob, False), (carol, True), (admin, True)):
        fields = (await gql(PURCHASE_CASE, {"id": big}, token=token))["node"]["case"]["fields"]
        assert ("budget_code" in fields) is sees
    final = (await gql(PURCHASE_RUN, run(small, "approve"), token=bob))["executeAction"]
    assert final["case"]["state"]["shortName"] == "approved" and final["activity"]["data"]["route"] == 2
