"""Verifiable history (engine/history/history.py): every column is hashed, signed checkpoints catch
truncation and consistent rewrites. Tampering is done with plain SQL, as an intruder with
database access would do it."""

import asyncio
import gc
import time
from datetime import timedelta

import pytest
from sqlalchemy import bindparam, select, text
from sqlalchemy.orm.exc import StaleDataError

import engine
from engine.history.activity import entry_hash, record
from engine.history.checkpoints import checkpoint_history, sign_anchor
from engine.history.history import Problem, verify_all, verify_history
from models import Activity, ArchivedChain, CaseState, Project
from server.app import create_app
from server.checkpoints import run_checkpoints
from server.settings import Settings
from tests.fixtures.builders import seqs_of, sql, two_items

KEY = "a-secret-key-for-the-tests"


async def verify(db, resource_id, key=KEY):
    async with db.session() as s:
        return await verify_history(s, resource_id=resource_id, secret_key=key)


async def checkpoint(db, key=KEY):
    return await run_checkpoints(db, secret_key=key)


@pytest.fixture
async def item(db, make_actor):
    owner, dev = await make_actor("owner"), await make_actor("dev")
    project_id, item_id, case_id, other_case_id = await two_items(db, owner, dev)
    return {"project": project_id, "id": item_id, "case": case_id, "other_case": other_case_id, "owner": owner}


async def test_an_untouched_chain_is_intact_through_its_newest_entry(db, item):
    seqs = await seqs_of(db, item["id"])
    assert len(seqs) >= 4
    report = await verify(db, item["id"], key="")
    assert report.intact and report.entries == len(seqs) and report.intact_through == seqs[-1]
    assert f"intact through seq {seqs[-1]}" in report.message
    assert "no secret key is configured" in report.message and not report.signatures_checked

    await checkpoint(db)
    report = await verify(db, item["id"])
    assert report.intact and report.checkpoint.seq == seqs[-1] and report.signatures_checked
    assert f"checked against its checkpoint of seq {seqs[-1]}" in report.message


@pytest.mark.parametrize(
    ("column", "change"),
    [
        ("case_id", "case_id = :other_case"),
        ("comment", "comment = 'not fixed at all'"),
        ("data", """data = '{"resolution": "wontfix"}'"""),
        ("actor_id", "actor_id = :owner"),
        ("at", "at = :earlier"),
    ],
)
async def test_changing_any_column_of_an_entry_breaks_the_chain_at_that_entry(db, item, column, change):
    seqs = await seqs_of(db, item["id"])
    target = seqs[-3]  # the resolve: it has a comment, data and a case
    params = {"other_case": item["other_case"], "owner": item["owner"].user_id}
    async with db.engine.begin() as conn:
        at = (await conn.execute(select(Activity.at).where(Activity.seq == target))).scalar_one()
        statement = text(f"UPDATE activity SET {change} WHERE seq = :seq")
        earlier = bindparam("earlier", at - timedelta(seconds=1), type_=Activity.__table__.c.at.type)
        await conn.execute(statement.bindparams(earlier) if column == "at" else statement, {"seq": target, **params})

    report = await verify(db, item["id"], key="")
    assert not report.intact
    assert (report.broken_at, report.problem) == (target, Problem.HASH_MISMATCH)
    assert report.intact_through == seqs[-4] and report.entries == len(seqs) - 3
    assert f"broken at seq {target}" in report.message


async def test_changing_an_entrys_seq_breaks_the_chain(db, item):
    seqs = await seqs_of(db, item["id"])
    moved = seqs[-1] + 1000  # still the newest of its chain, so only the hash can tell
    await sql(db, "UPDATE activity SET seq = :new WHERE seq = :old", new=moved, old=seqs[-1])
    report = await verify(db, item["id"], key="")
    assert (report.intact, report.broken_at, report.problem) == (False, moved, Problem.HASH_MISMATCH)


async def test_deleting_an_entry_in_the_middle_breaks_the_next_one(db, item):
    seqs = await seqs_of(db, item["id"])
    await sql(db, "DELETE FROM activity WHERE seq = :seq", seq=seqs[1])
    report = await verify(db, item["id"], key="")
    assert (report.broken_at, report.problem, report.intact_through) == (seqs[2], Problem.PREV_HASH_MISMATCH, seqs[0])


async def test_deleting_the_newest_entries_is_detected_once_checkpointed(db, item):
    await checkpoint(db)
    seqs = await seqs_of(db, item["id"])
    await sql(db, "DELETE FROM activity WHERE seq >= :seq AND chain = :c", seq=seqs[-2], c=item["id"])
    assert (await verify(db, item["id"], key="")).intact  # the hash chain alone cannot tell
    report = await verify(db, item["id"])
    assert not report.intact and report.problem is Problem.CHAIN_SHORTER_THAN_CHECKPOINT
    assert (report.broken_at, report.intact_through) == (seqs[-1], seqs[-3])
    assert "its newest entries were deleted" in report.message


async def test_deleting_the_newest_entries_before_a_checkpoint_goes_unseen(db, item):
    """The documented limit: what was never signed can be cut off."""
    seqs = await seqs_of(db, item["id"])
    await sql(db, "DELETE FROM activity WHERE seq = :seq", seq=seqs[-1])
    await checkpoint(db)
    assert (await verify(db, item["id"])).intact


async def _archive_first(db, chain: str, count: int, *, key: str | None) -> None:
    """What archive-history leaves of a chain whose ``count`` oldest entries were archived: the
    entries gone, and the anchor of the last, signed with ``key`` (None: unsigned)."""
    async with db.transaction() as s:
        gone = (await s.scalars(select(Activity).where(Activity.chain == chain).order_by(Activity.seq))).all()[:count]
        last = gone[-1]
        signed = {"chain": chain, "seq": last.seq, "hash": last.hash, "at": last.at, "entries": count}
        signature = sign_anchor(key, **signed) if key else None
        s.add(ArchivedChain(**signed, workflow_item_id=chain, archived_at=last.at, signature=signature))
    await sql(db, "DELETE FROM activity WHERE chain = :c AND seq <= :s", c=chain, s=gone[-1].seq)


async def test_the_entries_left_of_an_archived_chain_verify_from_a_signed_anchor_only(db, item):
    """The anchor archive-history records (where the archived part ends) is signed: one moved up
    past deleted entries, or written without the key, is reported where the hash chain alone
    would pass."""
    seqs = await seqs_of(db, item["id"])
    await _archive_first(db, item["id"], 2, key=KEY)
    await checkpoint(db)
    report = await verify(db, item["id"])
    assert report.intact and report.entries == len(seqs) and report.intact_through == seqs[-1], report.message
    assert f"{len(seqs)} entries, 2 of them archived" in report.message
    # The oldest entry left deleted, the anchor moved up to it (as an intruder would): the
    # chain follows on, and its checkpoint names a newer entry; the signature no longer holds.
    (moved,) = (await seqs_of(db, item["id"]))[:1]
    await sql(
        db,
        "UPDATE archived_chain SET seq = :seq, hash = (SELECT hash FROM activity WHERE seq = :seq), entries = 3",
        seq=moved,
    )
    await sql(db, "DELETE FROM activity WHERE seq = :seq", seq=moved)
    assert (await verify(db, item["id"], key="")).intact  # the hash chain alone cannot tell
    report = await verify(db, item["id"])
    assert (report.intact, report.problem, report.broken_at) == (False, Problem.BAD_ANCHOR_SIGNATURE, moved)
    assert "is not signed with the secret key, or its signature does not verify" in report.message
    reports = {r.resource_id: r async for r in _all(db)}
    assert reports[item["id"]].problem is Problem.BAD_ANCHOR_SIGNATURE


async def test_an_anchor_archived_without_the_key_is_reported_unsigned_to_a_keyed_check(db, item):
    second = (await seqs_of(db, item["id"]))[1]
    await _archive_first(db, item["id"], 2, key=None)
    assert (await verify(db, item["id"], key="")).intact
    report = await verify(db, item["id"])
    assert (report.problem, report.broken_at) == (Problem.BAD_ANCHOR_SIGNATURE, second)


async def _all(db):
    async with db.session() as s:
        async for report in verify_all(s, secret_key=KEY):
            yield report


async def test_deleting_a_whole_chain(db, item):
    await checkpoint(db)
    await sql(db, "DELETE FROM activity WHERE chain = :c", c=item["id"])
    report = await verify(db, item["id"])
    assert (report.intact, report.problem, report.entries) == (False, Problem.CHAIN_SHORTER_THAN_CHECKPOINT, 0)
    assert "Intact through no entry" in report.message
    # Without a checkpoint: a resource that exists always has its creation recorded.
    await sql(db, "DELETE FROM history_checkpoint")
    report = await verify(db, item["id"], key="")
    assert (report.intact, report.problem) == (False, Problem.EMPTY_CHAIN)


async def test_a_consistent_rewrite_shows_only_against_a_checkpoint(db, item):
    """Anyone who can write the table can recompute the hashes after an edit; the signed
    checkpoint is what still holds the old head."""
    await checkpoint(db)
    seqs = await seqs_of(db, item["id"])
    await sql(db, "UPDATE activity SET comment = 'never fixed' WHERE seq = :s", s=seqs[-3])
    await rehash(db, item["id"])
    assert (await verify(db, item["id"], key="")).intact
    report = await verify(db, item["id"])
    assert (report.problem, report.broken_at) == (Problem.CHECKPOINTED_ENTRY_CHANGED, seqs[-1])


async def rehash(db, chain):
    async with db.transaction() as s:
        prev = None
        entries = Activity.__table__.select().where(Activity.chain == chain).order_by(Activity.seq)
        for entry in (await s.execute(entries)).all():
            await s.execute(
                text("UPDATE activity SET prev_hash = :p, hash = :h WHERE seq = :s"),
                {"p": prev, "h": (h := entry_hash(prev, entry)), "s": entry.seq},
            )
            prev = h


async def test_a_forged_checkpoint_or_a_wrong_key_is_reported(db, item):
    await checkpoint(db)
    seqs = await seqs_of(db, item["id"])
    # Truncate and move the checkpoint back to the new head: the signature no longer fits.
    await sql(db, "DELETE FROM activity WHERE seq = :s", s=seqs[-1])
    await sql(
        db,
        "UPDATE history_checkpoint SET seq = :s, hash = (SELECT hash FROM activity WHERE seq = :s) WHERE chain = :c",
        s=seqs[-2],
        c=item["id"],
    )
    report = await verify(db, item["id"])
    assert (report.intact, report.problem, report.broken_at) == (False, Problem.BAD_CHECKPOINT_SIGNATURE, seqs[-2])

    report = await verify(db, item["project"], key="another-key")
    assert (report.intact, report.problem) == (False, Problem.BAD_CHECKPOINT_SIGNATURE)
    assert (await verify(db, item["project"])).intact


async def test_a_pass_signs_the_chains_that_grew_and_refuses_a_tampered_one(db, item):
    first = await checkpoint(db)
    assert first.signed == 4 and first.refused == []  # project, subproject, both items
    assert (await checkpoint(db)).signed == 0  # nothing grew
    seqs = await seqs_of(db, item["id"])
    await sql(db, "DELETE FROM activity WHERE seq = :s", s=seqs[-1])
    async with db.transaction() as s:  # the item grows again, on top of the truncated chain
        await engine.execute(s, actor=item["owner"], case_id=item["case"], action="reopen")
    again = await checkpoint(db)
    assert again.refused == [item["id"]] and again.signed == 0
    report = await verify(db, item["id"])
    assert report.problem is Problem.CHECKPOINTED_ENTRY_MISSING and report.broken_at == seqs[-1]


async def test_a_pass_reads_a_bounded_number_of_entries(db, item):
    async with db.transaction() as s:
        done = await checkpoint_history(s, secret_key=KEY, limit=3)
    assert done.more and done.through_seq > 0
    async with db.transaction() as s:
        rest = await checkpoint_history(s, secret_key=KEY, since=done.through_seq, limit=1000)
    assert not rest.more and rest.through_seq > done.through_seq
    async with db.session() as s:
        reports = [r async for r in verify_all(s, secret_key=KEY)]
    assert all(r.intact and r.checkpoint is not None for r in reports), [r.message for r in reports]


async def test_without_a_key_nothing_is_signed(db, item):
    async with db.transaction() as s:
        assert await checkpoint_history(s, secret_key="") is None
    async with db.engine.connect() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM history_checkpoint"))).scalar_one() == 0


async def test_verify_all_reports_every_chain_and_deleted_ones(db, item):
    await checkpoint(db)
    await sql(db, "DELETE FROM activity WHERE chain = :c", c=item["id"])
    async with db.session() as s:
        reports = {r.resource_id: r async for r in verify_all(s, secret_key=KEY)}
    assert reports.pop(item["id"]).problem is Problem.CHAIN_SHORTER_THAN_CHECKPOINT
    assert len(reports) == 3 and all(r.intact for r in reports.values())


async def test_an_unknown_resource_is_not_found(db, item):
    with pytest.raises(engine.errors.DomainError) as refused:
        await verify(db, "wfi_nope")
    assert refused.value.code == "NOT_FOUND" and refused.value.field == ["resourceId"]


async def test_recording_entries_costs_one_head_read_and_one_insert_for_all(db, item, count_statements):
    """Knowing seq before hashing adds no statement: PostgreSQL draws the seqs with the chain's
    head (a lone entry's insert draws its own), SQLite reads the last seq with the chain's head;
    the entries are inserted in one statement."""

    with count_statements() as counter:
        async with db.transaction() as s:
            project = await s.get(Project, item["project"])
            await record(s, kind="commented", actor_id=None, about=project, comment="one")
            await record(s, kind="commented", actor_id=None, about=project, comment="two")
    assert len(counter.starting("INSERT INTO activity")) == 1
    assert len(counter.statements) == 1 + 1 + 1, counter.statements  # get, head, one insert of both
    assert (await verify(db, item["project"], key="")).intact


async def test_a_lone_entry_is_one_insert_whose_hash_verifies(db, item, count_statements):
    """A lone entry's insert reads its chain's head, draws its seq and seals its hash (the
    content digest is built in SQL around the head, engine/history/activity.py): the hash it stores is the one the
    verifier computes, for any content (non-ASCII text, quotes, nested data, on_behalf_of)."""

    with count_statements() as counter:
        async with db.transaction() as s:
            project = await s.get(Project, item["project"])
            data = {"b": [1, {"z": None, "a": "é"}], "q": 'a "quote" and a \\ backslash'}
            entry = await record(s, kind="commented", actor_id=None, about=project, comment="Zoë ünïcode", data=data)
            entry.on_behalf_of = item["owner"].user_id
    assert len(counter.statements) == 2, counter.statements  # the get, the insert
    async with db.engine.connect() as conn:
        stored = (
            await conn.execute(text("SELECT seq, prev_hash, hash FROM activity WHERE id = :i"), {"i": entry.id})
        ).one()
    assert tuple(stored) == (entry.seq, entry.prev_hash, entry.hash) and entry.prev_hash is not None
    assert entry_hash(entry.prev_hash, entry) == entry.hash
    assert (await verify(db, item["project"], key="")).intact


async def test_a_folded_update_that_finds_no_row_fails_the_transaction(db, item):
    """On PostgreSQL the rows a transaction changes are written with its last log entry
    (engine/history/folded_writes.py); an UPDATE that matches nothing fails the commit, as the ORM's
    flush does on SQLite, and nothing of the transaction is written."""
    before = await seqs_of(db, item["project"])
    with pytest.raises(StaleDataError):
        async with db.transaction() as s:
            project = await s.get(Project, item["project"])
            state = await s.get(CaseState, (item["case"], ""))
            await s.execute(text("DELETE FROM case_state WHERE case_id = :c"), {"c": item["case"]})
            state.state = "elsewhere"  # pending until the entry's insert (no read autoflushes it)
            await record(s, kind="commented", actor_id=None, about=project)
    assert await seqs_of(db, item["project"]) == before
    async with db.engine.connect() as conn:
        states = await conn.execute(text("SELECT state FROM case_state WHERE case_id = :c"), {"c": item["case"]})
        assert states.scalars().all() != []  # the delete rolled back with it


async def test_every_server_process_signs_checkpoints_in_the_background(db, item):
    app = create_app(Settings(database_url=db.url, secret_key=KEY, checkpoint_interval=0.05), db=db)
    threshold = gc.get_threshold()
    async with app.router.lifespan_context(app):
        deadline = time.monotonic() + 10
        while (await verify(db, item["id"])).checkpoint is None:
            assert time.monotonic() < deadline, "no checkpoint was signed"
            await asyncio.sleep(0.05)
        async with db.transaction() as s:  # a chain that grows is signed again
            await engine.execute(s, actor=item["owner"], case_id=item["case"], action="reopen")
        newest = (await seqs_of(db, item["id"]))[-1]
        while (await verify(db, item["id"])).checkpoint.seq != newest:
            assert time.monotonic() < deadline, "the grown chain was not signed again"
            await asyncio.sleep(0.05)
    gc.unfreeze()  # what the server's start-up tuned, for the rest of the test session
    gc.set_threshold(*threshold)
    assert (await verify(db, item["id"])).intact


_ARCHIVED_CHAIN = (
    "CREATE TABLE archived_chain (chain VARCHAR PRIMARY KEY, project_id VARCHAR, subproject_id VARCHAR, "
    "workflow_item_id VARCHAR, seq BIGINT NOT NULL, hash VARCHAR NOT NULL, at TIMESTAMP NOT NULL, "
    "entries BIGINT NOT NULL, archived_at TIMESTAMP NOT NULL, signature VARCHAR)"
)


async def test_migration_0008_rehashes_existing_chains(fresh_url):
    """Entries hashed the old way (revision 0007) verify once 0008 has run; the downgrade
    writes the old hashes back."""
    from alembic import command

    from engine.people import identity
    from engine.spec import workflows
    from models import Database
    from server.migrate import alembic_config, upgrade

    await asyncio.to_thread(upgrade, fresh_url)
    db = Database(fresh_url)
    try:
        async with db.transaction() as s:
            await workflows.sync_spec_files(s, workflows.BUILTIN_DIR)
            users = [await identity.create_user(s, actor=None, login=n, password="password123") for n in ("o", "d")]
        async with db.transaction() as s:
            owner, dev = [await identity.actor_for(s, user_id=u.id, login=u.login, is_admin=False) for u in users]
        await two_items(db, owner, dev)

        async def intact() -> list[bool]:
            async with db.session() as s:
                return [r.intact async for r in verify_all(s, secret_key="")]

        async def down_to_0007() -> None:
            """0007's table, with the columns added after 0008 (empty, as for entries written
            before them), so today's model reads it."""
            await asyncio.to_thread(command.downgrade, alembic_config(fresh_url), "0007")
            await db.engine.dispose()  # pooled connections may remember the schema before
            await sql(db, "ALTER TABLE activity ADD COLUMN on_behalf_of VARCHAR")
            await sql(db, "ALTER TABLE activity ADD COLUMN via VARCHAR")
            await sql(db, "ALTER TABLE activity ADD COLUMN title VARCHAR")
            await sql(db, _ARCHIVED_CHAIN)  # where archived chains end (0027, 0028): none here

        async def up_again() -> None:
            await sql(db, "ALTER TABLE activity DROP COLUMN on_behalf_of")
            await sql(db, "ALTER TABLE activity DROP COLUMN via")
            await sql(db, "ALTER TABLE activity DROP COLUMN title")
            await sql(db, "DROP TABLE archived_chain")
            await db.engine.dispose()
            await asyncio.to_thread(upgrade, fresh_url)

        assert await intact() == [True] * 4
        await down_to_0007()
        assert await intact() == [False] * 4  # the old hashes leave out seq, case_id and chain
        await up_again()
        assert await intact() == [True] * 4

        # Tampered with under the old scheme: the upgrade must not seal it under new hashes.
        _, item_id, _, _ = await two_items(db, owner, dev)
        seqs = await seqs_of(db, item_id)
        await down_to_0007()
        await sql(db, "UPDATE activity SET comment = 'never fixed' WHERE seq = :s", s=seqs[-2])
        await up_again()
        async with db.session() as s:
            reports = {r.resource_id: r async for r in verify_all(s, secret_key="")}
        assert (reports[item_id].intact, reports[item_id].broken_at) == (False, seqs[-2])
        assert [r.intact for id_, r in reports.items() if id_ != item_id] == [True] * 7
    finally:
        await db.dispose()
