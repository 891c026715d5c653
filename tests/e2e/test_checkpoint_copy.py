"""Checkpoints that cannot be deleted or rolled back unnoticed (issue 40, finding 2), through
`caseway checkpoint-history --export` and `caseway verify-history --against`: the two attacks of
the issue, each of which `verify-history` called intact before."""

import asyncio
import os

import pytest
from sqlalchemy import text

import engine
from tests.fixtures.builders import caseway, seqs_of, sql, two_items

KEY = "the-servers-secret-key"


@pytest.fixture
async def tree(db, make_actor):
    owner, dev = await make_actor("owner"), await make_actor("dev")
    _, item_id, case_id, other_case_id = await two_items(db, owner, dev)
    return {"owner": owner, "item": item_id, "case": case_id, "other_case": other_case_id}


async def cli(db, *args, **env):
    environment = {**os.environ, "CASEWAY_DATABASE_URL": db.url, "CASEWAY_SECRET_KEY": KEY, **env}
    return await asyncio.to_thread(caseway, *args, env=environment)


async def reopen_and_comment(db, tree, case_key="case"):
    """New entries at the head of an item's chain (the first item is closed, the other open)."""
    first = "reopen" if case_key == "case" else "comment"
    async with db.transaction() as s:
        await engine.execute(s, actor=tree["owner"], case_id=tree[case_key], action=first, comment="again")
    async with db.transaction() as s:
        await engine.execute(s, actor=tree["owner"], case_id=tree[case_key], action="comment", comment="noted")


async def newest_checkpoint(db, chain):
    async with db.engine.connect() as conn:
        query = "SELECT counter, seq FROM history_checkpoint WHERE chain = :c ORDER BY counter DESC LIMIT 1"
        return (await conn.execute(text(query), {"c": chain})).one()


async def test_newest_entries_deleted_with_their_checkpoint_are_found_by_the_copy(db, tree, tmp_path):
    copy = str(tmp_path / "checkpoints")
    first = await cli(db, "checkpoint-history", "--export", copy)
    assert first.returncode == 0, first.stderr
    assert "Signed 4 checkpoints" in first.stdout and "Exported 4 checkpoints" in first.stdout
    kept_counter, kept_seq = await newest_checkpoint(db, tree["item"])
    await reopen_and_comment(db, tree)
    head = (await seqs_of(db, tree["item"]))[-1]
    second = await cli(db, "checkpoint-history", "--export", copy)
    assert "Signed 1 checkpoints" in second.stdout and "it holds 1 to 5" in second.stdout, second.stdout
    newest_counter, _ = await newest_checkpoint(db, tree["item"])
    assert newest_counter == 5 and kept_counter < newest_counter

    # The attack: the item's newest entries go, and the checkpoint that covers them.
    await sql(db, "DELETE FROM activity WHERE chain = :c AND seq > :s", c=tree["item"], s=kept_seq)
    await sql(db, "DELETE FROM history_checkpoint WHERE counter = :n", n=newest_counter)

    inside = await cli(db, "verify-history", "--all")
    assert inside.returncode == 0, inside.stdout  # the database alone cannot tell: the newest is gone
    assert "The checkpoints in the database are intact: 4 of them" in inside.stdout

    against = await cli(db, "verify-history", "--all", "--against", copy)
    assert against.returncode == 1, against.stdout
    assert (
        f"Checkpoint 5 (history of {tree['item']} through seq {head}) is in "
        f"the copy at {copy} but not in the database: it was deleted, or the database was rolled back."
    ) in against.stdout
    assert f"The checkpoints in the copy at {copy} are intact: 5 of them, 1 to 5" in against.stdout
    one = await cli(db, "verify-history", tree["item"], "--against", copy)
    assert one.returncode == 1 and "Checkpoint 5 (history of" in one.stdout


async def test_a_checkpoint_deleted_from_the_middle_is_a_gap_in_the_database(db, tree):
    assert (await cli(db, "checkpoint-history")).returncode == 0
    await reopen_and_comment(db, tree)
    assert (await cli(db, "checkpoint-history")).returncode == 0  # checkpoint 5: the item
    await reopen_and_comment(db, tree, "other_case")
    assert (await cli(db, "checkpoint-history")).returncode == 0  # checkpoint 6: the other item
    kept_seq = (await seqs_of(db, tree["item"]))[-3]
    await sql(db, "DELETE FROM activity WHERE chain = :c AND seq > :s", c=tree["item"], s=kept_seq)
    await sql(db, "DELETE FROM history_checkpoint WHERE counter = 5")

    checked = await cli(db, "verify-history", "--all")

    assert checked.returncode == 1, checked.stdout
    assert (
        "Checkpoint 5 is missing from the database: checkpoint 6 comes after 4, so checkpoints were deleted."
        in checked.stdout
    )
    assert "4 of 4 histories intact." in checked.stdout  # each chain matches the newest checkpoint left


async def test_an_older_checkpoint_restored_after_truncating_to_it_is_found_by_the_copy(db, tree, tmp_path):
    copy = str(tmp_path / "copy")
    assert (await cli(db, "checkpoint-history", "--export", copy)).returncode == 0
    old_heads = {chain: (await seqs_of(db, chain))[-1] for chain in (tree["item"],)}
    await reopen_and_comment(db, tree)
    await reopen_and_comment(db, tree, "other_case")
    assert "Exported 2 checkpoints" in (await cli(db, "checkpoint-history", "--export", copy)).stdout

    # The attack: the log and the checkpoints put back as they were after the first export.
    await sql(db, "DELETE FROM activity WHERE chain = :c AND seq > :s", c=tree["item"], s=old_heads[tree["item"]])
    await sql(db, "DELETE FROM history_checkpoint WHERE counter > 4")
    other = await cli(db, "verify-history", "--all")
    # (The other item's new entries are after its checkpoint: covered by the hash chain alone.)
    assert other.returncode == 0 and "4 of 4 histories intact." in other.stdout, other.stdout

    against = await cli(db, "verify-history", "--all", "--against", copy)

    assert against.returncode == 1
    missing = [line for line in against.stdout.splitlines() if "is in the copy at" in line]
    assert [line.split(" (")[0] for line in missing] == ["Checkpoint 5", "Checkpoint 6"]
    assert "history of " + tree["item"] in against.stdout


async def test_a_copy_in_s3_and_what_a_copy_that_cannot_be_read_answers(db, tree, tmp_path, s3_endpoint):
    bucket = s3_endpoint.new_bucket()
    endpoint = {"CASEWAY_S3_ENDPOINT_URL": s3_endpoint.url}
    exported = await cli(db, "checkpoint-history", "--export", f"s3://{bucket}/caseway/checkpoints", **endpoint)
    assert exported.returncode == 0 and "Exported 4 checkpoints" in exported.stdout, exported.stderr
    keys = [o["Key"] for o in s3_endpoint.client().list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == ["caseway/checkpoints/checkpoints-000000000001-000000000004.jsonl"]
    intact = await cli(db, "verify-history", "--all", "--against", f"s3://{bucket}/caseway/checkpoints", **endpoint)
    assert intact.returncode == 0, intact.stdout
    assert f"The database holds every one of the 4 checkpoints of the copy at s3://{bucket}/caseway/" in intact.stdout

    await sql(db, "DELETE FROM history_checkpoint WHERE counter = 4")
    broken = await cli(db, "verify-history", "--all", "--against", f"s3://{bucket}/caseway/checkpoints", **endpoint)
    assert broken.returncode == 1 and "Checkpoint 4 (history of" in broken.stdout

    empty = await cli(db, "verify-history", "--all", "--against", str(tmp_path / "nothing-here"))
    assert empty.returncode == 1
    assert f"The copy at {tmp_path / 'nothing-here'} holds no checkpoint: export some first" in empty.stdout
    (tmp_path / "garbled").mkdir()
    (tmp_path / "garbled" / "checkpoints-000000000001-000000000001.jsonl").write_text("not json\n")
    garbled = await cli(db, "verify-history", "--all", "--against", str(tmp_path / "garbled"))
    assert garbled.returncode == 1
    assert garbled.stderr.strip() == (
        f"error: the copy at {tmp_path / 'garbled'}: checkpoints-000000000001-000000000001.jsonl, line 1, "
        "is not a checkpoint."
    )
    keyless = await cli(db, "verify-history", "--all", "--against", str(tmp_path), CASEWAY_SECRET_KEY="")
    assert keyless.returncode == 1
    assert (
        keyless.stderr.strip()
        == "error: --against needs CASEWAY_SECRET_KEY: the copy's checkpoints are checked with it."
    )
