"""verifyHistory over HTTP and `caseway verify-history` / `checkpoint-history` on the test
database, after tampering with plain SQL."""

import asyncio
import os
import re

import httpx
import pytest
from sqlalchemy import text

from server.app import create_app
from server.settings import Settings
from tests.fixtures.api import GraphQLClient
from tests.fixtures.builders import caseway, seqs_of, sql, two_items

KEY = "the-servers-secret-key"

VERIFY_HISTORY = """
query Verify($id: ID!) {
  verifyHistory(resourceId: $id) {
    report { resourceId intact entries intactThrough brokenAt problem message signaturesChecked
             checkpoint { seq hash signedAt } }
    userErrors { code message field }
  }
}
"""


@pytest.fixture
async def keyed_gql(db):
    """The server with a secret key, as CASEWAY_SECRET_KEY would configure it."""
    app = create_app(Settings(database_url=db.url, secret_key=KEY), db=db)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test") as http:
        yield GraphQLClient(http)


@pytest.fixture
async def tree(db, make_actor, make_user):
    owner, dev = await make_actor("owner"), await make_actor("dev")
    project_id, item_id, _, other_case_id = await two_items(db, owner, dev)
    _, admin = await make_user("root", admin=True)
    _, viewer = await make_user("viewer")
    return {"project": project_id, "item": item_id, "other_case": other_case_id, "admin": admin, "viewer": viewer}


async def cli(db, *args, key=KEY):
    env = {**os.environ, "CASEWAY_DATABASE_URL": db.url, "CASEWAY_SECRET_KEY": key}
    return await asyncio.to_thread(caseway, *args, env=env)


async def verify(gql, resource_id, token):
    return (await gql(VERIFY_HISTORY, {"id": resource_id}, token=token))["verifyHistory"]


async def test_an_intact_history_is_intact_through_its_newest_entry(db, keyed_gql, tree):
    signed = await cli(db, "checkpoint-history")
    assert signed.returncode == 0 and "Signed 4 checkpoints" in signed.stdout, signed.stderr
    newest = (await seqs_of(db, tree["item"]))[-1]

    result = await verify(keyed_gql, tree["item"], tree["admin"])
    report = result["report"]
    assert result["userErrors"] == [] and report["intact"] and report["signaturesChecked"]
    assert (report["intactThrough"], report["brokenAt"], report["problem"]) == (newest, None, None)
    assert report["checkpoint"]["seq"] == newest and f"intact through seq {newest}" in report["message"]

    checked = await cli(db, "verify-history", tree["item"])
    assert checked.returncode == 0 and f"intact through seq {newest}" in checked.stdout


async def test_a_changed_case_id_is_reported_over_http_and_by_the_cli(db, keyed_gql, tree):
    target = (await seqs_of(db, tree["item"]))[-3]
    await sql(db, "UPDATE activity SET case_id = :c WHERE seq = :s", c=tree["other_case"], s=target)

    report = (await verify(keyed_gql, tree["item"], tree["admin"]))["report"]
    assert (report["intact"], report["brokenAt"], report["problem"]) == (False, target, "HASH_MISMATCH")
    assert f"is broken at seq {target}" in report["message"]

    one = await cli(db, "verify-history", tree["item"])
    assert one.returncode == 1 and report["message"] in one.stdout
    every = await cli(db, "verify-history", "--all")
    assert every.returncode == 1 and "3 of 4 histories intact." in every.stdout
    assert len(re.findall(r"^History of ", every.stdout, re.M)) == 4  # a sentence per chain


async def test_deleted_newest_entries_and_a_forged_checkpoint_show_once_signed(db, keyed_gql, tree):
    assert (await cli(db, "checkpoint-history")).returncode == 0
    seqs = await seqs_of(db, tree["item"])
    await sql(db, "DELETE FROM activity WHERE seq = :s", s=seqs[-1])
    report = (await verify(keyed_gql, tree["item"], tree["admin"]))["report"]
    assert (report["problem"], report["brokenAt"], report["intactThrough"]) == (
        "CHAIN_SHORTER_THAN_CHECKPOINT",
        seqs[-1],
        seqs[-2],
    )

    # Covering the tracks: the checkpoint moved back to the new head, with its old signature.
    await sql(
        db,
        "UPDATE history_checkpoint SET seq = :s, hash = (SELECT hash FROM activity WHERE seq = :s) WHERE chain = :c",
        s=seqs[-2],
        c=tree["item"],
    )
    report = (await verify(keyed_gql, tree["item"], tree["admin"]))["report"]
    assert (report["intact"], report["problem"]) == (False, "BAD_CHECKPOINT_SIGNATURE")
    # A pass must not re-sign the tampered chain and so bless it.
    again = await cli(db, "checkpoint-history")
    assert again.returncode == 0 and "Signed 0 checkpoints" in again.stdout
    assert not (await verify(keyed_gql, tree["item"], tree["admin"]))["report"]["intact"]


async def test_a_deleted_chain_and_a_wrong_key(db, keyed_gql, tree):
    assert (await cli(db, "checkpoint-history")).returncode == 0
    await sql(db, "DELETE FROM activity WHERE chain = :c", c=tree["item"])
    report = (await verify(keyed_gql, tree["item"], tree["admin"]))["report"]
    assert (report["intact"], report["entries"], report["problem"]) == (False, 0, "CHAIN_SHORTER_THAN_CHECKPOINT")

    wrong = await cli(db, "verify-history", tree["project"], key="not-the-key")
    assert wrong.returncode == 1 and "signature does not verify" in wrong.stdout
    assert (await cli(db, "verify-history", tree["project"])).returncode == 0


async def test_without_a_key_only_the_hash_chain_is_checked_and_it_says_so(db, gql, tree):
    report = (await verify(gql, tree["project"], tree["admin"]))["report"]
    assert report["intact"] and not report["signaturesChecked"] and report["checkpoint"] is None
    assert "no secret key is configured" in report["message"]
    unsigned = await cli(db, "checkpoint-history", key="")
    assert unsigned.returncode == 1 and "CASEWAY_SECRET_KEY is not set" in unsigned.stderr
    async with db.engine.connect() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM history_checkpoint"))).scalar_one() == 0


async def test_only_admins_may_verify_and_the_refusal_says_nothing_of_the_id(keyed_gql, tree):
    existing = await verify(keyed_gql, tree["item"], tree["viewer"])
    missing = await verify(keyed_gql, "wfi_01M84NAZAQ2APGEV22GS0J5PC4", tree["viewer"])
    assert existing == missing
    assert existing["report"] is None
    assert existing["userErrors"] == [
        {"code": "NOT_ALLOWED", "message": "Only an admin may verify history.", "field": ["resourceId"]}
    ]
    anonymous = await keyed_gql.raw(VERIFY_HISTORY, {"id": tree["item"]})
    assert anonymous["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_an_unknown_resource_is_not_found(db, keyed_gql, tree):
    result = await verify(keyed_gql, "wfi_01M84NAZAQ2APGEV22GS0J5PC4", tree["admin"])
    assert result["report"] is None
    assert [(e["code"], e["field"]) for e in result["userErrors"]] == [("NOT_FOUND", ["resourceId"])]

    unknown = await cli(db, "verify-history", "wfi_nope")
    assert unknown.returncode != 0 and "error: No resource with id 'wfi_nope' exists." in unknown.stderr
    assert "Traceback" not in unknown.stderr
