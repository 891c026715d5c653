"""The partitioned log on PostgreSQL (migration 0027) and `caseway archive-history`: an existing
log converted and converted back, entries landing in their partition, whole partitions archived
to files and dropped, the chains verified with and without the archive (and a changed archive
caught, naming the entry), history pages that say their oldest entries were archived, and the
command's refusals. Each test has a database of its own: archiving drops partitions."""

import asyncio
import json
import os
from datetime import UTC, datetime

import httpx
import pytest
from alembic import command
from sqlalchemy import insert, text

import engine
from engine.history import partitions
from engine.people import identity
from engine.spec import workflows
from models import Activity, Database
from server.app import create_app
from server.migrate import alembic_config
from server.settings import Settings
from tests.fixtures.api import GraphQLClient
from tests.fixtures.builders import caseway, sql, two_items
from tests.fixtures.compiled import compiled_outcomes
from tests.fixtures.database import BACKEND, create_test_user

ON_POSTGRES = pytest.mark.skipif(
    BACKEND != "postgres", reason="the log is partitioned on PostgreSQL only; SQLite keeps one table (migration 0027)"
)
KEY = "the-archivists-secret-key"

ARCHIVED_HISTORY = """
query History($item: ID!, $project: ID!, $after: String) {
  item: node(id: $item) { ... on WorkflowItem {
    history(after: $after) { archived edges { cursor node { seq kind comment } } }
    case { log { archived edges { node { seq } } } } } }
  project: node(id: $project) { ... on Project { history(first: 100) { archived edges { node { seq } } } } }
}
"""
ITEM_HISTORY_PAGE = """
query Page($item: ID!) {
  node(id: $item) { ... on WorkflowItem { history { edges { cursor node { seq kind comment } } } } }
}
"""


async def _seeded(url: str, revision: str = "head") -> dict:
    """The database migrated to ``revision``, with two bug items (one resolved and closed, one
    open), their users, and an admin's token."""
    await asyncio.to_thread(command.upgrade, alembic_config(url), revision)
    db = Database(url)
    async with db.transaction() as s:
        await workflows.sync_spec_files(s, workflows.BUILTIN_DIR)
        actors = {}
        for login in ("owner", "dev"):
            user = await create_test_user(s, login=login)
            actors[login] = await identity.actor_for(s, user_id=user.id, login=login, is_admin=False)
        admin = await create_test_user(s, login="root", admin=True)
        token = await identity.create_token(s, user_id=admin.id, ttl_seconds=3600)
    project, item, case, other_case = await two_items(db, actors["owner"], actors["dev"])
    return {
        "db": db,
        "project": project,
        "item": item,
        "case": case,
        "other_case": other_case,
        "token": token,
        **actors,
    }


async def _comment(data: dict, words: str) -> int:
    """The dev comments on the open case; the new entry's seq."""
    async with data["db"].transaction() as s:
        await engine.execute(s, actor=data["dev"], case_id=data["other_case"], action="comment", comment=words)
    return await _scalar(data["db"], "SELECT max(seq) FROM activity")


async def _scalar(db: Database, statement: str, **params):
    async with db.engine.begin() as conn:  # committed: some statements change things
        return (await conn.execute(text(statement), params)).scalar()


async def _rows(db: Database, statement: str, **params) -> list:
    async with db.engine.connect() as conn:
        return list((await conn.execute(text(statement), params)).all())


async def _where(db: Database, seq: int) -> str:
    return await _scalar(db, "SELECT tableoid::regclass::text FROM activity WHERE seq = :s", s=seq)


async def _fill_to(db: Database, partition_name: str) -> None:
    """Hand out every seq below the partition, as entries written and rolled back would: the next
    entry is the partition's first."""
    async with db.read_session() as s:
        lower = next(p.lower for p in await partitions.partitions(s) if p.name == partition_name)
    await _scalar(db, "SELECT setval('activity_seq_seq', :s)", s=lower - 1)


async def _cli(url: str, *args: str, key: str = KEY):
    env = {**os.environ, "CASEWAY_DATABASE_URL": url, "CASEWAY_SECRET_KEY": key}
    return await asyncio.to_thread(caseway, *args, env=env)


def _next_month() -> str:
    now = datetime.now(UTC)
    return f"{now.year + now.month // 12}-{now.month % 12 + 1:02d}"


@ON_POSTGRES
@pytest.mark.timeout(600)  # a dozen runs of the command, seconds each on a busy machine
async def test_an_existing_log_becomes_the_first_partition_and_comes_back_on_downgrade(fresh_url):
    data = await _seeded(fresh_url, "0026")
    db = data["db"]
    try:
        before = await _rows(db, "SELECT seq, hash FROM activity ORDER BY seq")
        await asyncio.to_thread(command.upgrade, alembic_config(fresh_url), "head")

        assert await _scalar(db, "SELECT relkind::text FROM pg_class WHERE relname = 'activity'") == "p"
        assert await _rows(db, "SELECT seq, hash FROM activity ORDER BY seq") == before
        assert {await _where(db, seq) for seq, _ in before} == {"activity_part_0000"}
        checked = await _cli(fresh_url, "verify-history", "--all", key="")
        assert checked.returncode == 0 and "is broken" not in checked.stdout, checked.stdout + checked.stderr
        # The next entries: below the first partition's bound still, then the next partition's.
        assert await _where(db, await _comment(data, "still in the old table")) == "activity_part_0000"
        await _fill_to(db, "activity_part_0001")
        landed = await _comment(data, "in the second partition")
        assert await _where(db, landed) == "activity_part_0001"
        async with db.transaction() as s:
            made = await partitions.make_ahead(s, size=3)
        assert made == ["activity_part_0002", "activity_part_0003"]  # two ready above the last seq
        await _fill_to(db, "activity_part_0002")
        assert await _where(db, await _comment(data, "in the third")) == "activity_part_0002"

        everything = await _rows(db, "SELECT seq, hash FROM activity ORDER BY seq")
        await asyncio.to_thread(command.downgrade, alembic_config(fresh_url), "0026")
        assert await _scalar(db, "SELECT relkind::text FROM pg_class WHERE relname = 'activity'") == "r"
        assert await _rows(db, "SELECT seq, hash FROM activity ORDER BY seq") == everything
        # The sequence survived its table: the next entry follows the last.
        after = await _comment(data, "after the downgrade")
        assert after == everything[-1][0] + 1
        await asyncio.to_thread(command.upgrade, alembic_config(fresh_url), "head")
        assert await _where(db, after) == "activity_part_0000"
        again = await _cli(fresh_url, "verify-history", "--all", key="")
        assert again.returncode == 0 and "is broken" not in again.stdout, again.stdout + again.stderr
    finally:
        await db.dispose()


@ON_POSTGRES
async def test_the_partitioning_migration_runs_again_after_failing_in_its_last_transaction(fresh_url):
    """Its first step commits (the anchors' table, the validated CHECK); a failure after it (here
    a table in the way of the second partition) leaves the revision at 0026, and the upgrade
    run again, the obstacle gone, partitions the log, which still verifies."""
    data = await _seeded(fresh_url, "0026")
    db = data["db"]
    try:
        before = await _rows(db, "SELECT seq, hash FROM activity ORDER BY seq")
        await sql(db, "CREATE TABLE activity_part_0001 (x int)")
        with pytest.raises(Exception, match="activity_part_0001"):
            await asyncio.to_thread(command.upgrade, alembic_config(fresh_url), "0027")
        assert await _scalar(db, "SELECT version_num FROM alembic_version") == "0026"
        assert await _scalar(db, "SELECT relkind::text FROM pg_class WHERE relname = 'activity'") == "r"
        assert await _scalar(db, "SELECT to_regclass('archived_chain')::text") == "archived_chain"  # committed
        await sql(db, "DROP TABLE activity_part_0001")
        await asyncio.to_thread(command.upgrade, alembic_config(fresh_url), "head")
        assert await _scalar(db, "SELECT relkind::text FROM pg_class WHERE relname = 'activity'") == "p"
        assert await _rows(db, "SELECT seq, hash FROM activity ORDER BY seq") == before
        assert await _where(db, before[-1][0]) == "activity_part_0000"
        assert await _where(db, await _comment(data, "partitioned at last")) == "activity_part_0000"
        verified = await _cli(fresh_url, "verify-history", "--all", key="")
        assert verified.returncode == 0 and "is broken" not in verified.stdout, verified.stdout
    finally:
        await db.dispose()


async def _make_ahead(db: Database) -> list[str]:
    async with db.transaction() as s:
        return await partitions.make_ahead(s, size=3)


async def _until_a_lock_is_awaited(db: Database) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while not await _scalar(db, "SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'relation'"):
        assert loop.time() < deadline, "the partitioner never waited for the log's lock"
        await asyncio.sleep(0.02)


@ON_POSTGRES
async def test_partitions_made_while_a_writer_that_read_the_log_commits_neither_deadlocks(fresh_url):
    """Seen in CI: the partitioner locked the log weakly, then waited for the CREATE's own lock
    behind a timer's transaction that had read the log, which then waited behind the weak lock
    for its insert: PostgreSQL broke the deadlock by failing the timer. Both now go through."""
    data = await _seeded(fresh_url)
    db = data["db"]
    try:
        async with db.read_session() as s:
            newest = (await partitions.partitions(s))[-1].name
        await _fill_to(db, newest)  # one partition ready above the last seq: make_ahead makes one
        async with db.transaction() as writer:
            await writer.execute(text("SELECT count(*) FROM activity"))  # a read lock, held to the commit
            making = asyncio.create_task(_make_ahead(db))
            await _until_a_lock_is_awaited(db)
            await engine.execute(
                writer, actor=data["dev"], case_id=data["other_case"], action="comment", comment="meanwhile"
            )
        made = await making
        number = int(newest.rsplit("_", 1)[1])
        assert made == [f"activity_part_{number + 1:04d}"]
        landed = await _scalar(db, "SELECT max(seq) FROM activity")
        assert await _where(db, landed) == newest
        assert await _scalar(db, "SELECT comment FROM activity WHERE seq = :s", s=landed) == "meanwhile"
    finally:
        await db.dispose()


@ON_POSTGRES
async def test_entries_the_default_partition_caught_move_into_the_partitions_made_next(fresh_url):
    """No partition was ready in time (the partitioner failed for two months): entries went to
    the default partition. The next partitions made take them, the default is empty and still
    the default, and every chain verifies."""
    data = await _seeded(fresh_url)
    db = data["db"]
    try:
        top = (await _partitions(db))[-1].upper
        await _scalar(db, "SELECT setval('activity_seq_seq', :s)", s=top + 4)
        caught = [await _comment(data, f"caught {n}") for n in range(2)]
        assert caught == [top + 5, top + 6]
        assert {await _where(db, seq) for seq in caught} == {"activity_default"}
        async with db.transaction() as s:
            made = await partitions.make_ahead(s, size=3)
        ranges = {p.name: p for p in await _partitions(db)}
        assert len(made) == 3  # one from the old top past the caught entries, two ahead of the last seq
        first = ranges[made[0]]
        assert (first.lower, first.upper) == (top, top + 7)  # widened to hold them
        assert [(ranges[m].lower, ranges[m].upper) for m in made[1:]] == [(top + 7, top + 10), (top + 10, top + 13)]
        assert {await _where(db, seq) for seq in caught} == {made[0]}
        assert await _scalar(db, "SELECT count(*) FROM activity_default") == 0
        default = "SELECT pg_get_expr(relpartbound, oid) FROM pg_class WHERE relname = 'activity_default'"
        assert await _scalar(db, default) == "DEFAULT"
        assert await _where(db, await _comment(data, "after")) == made[1]
        verified = await _cli(fresh_url, "verify-history", "--all", key="")
        assert verified.returncode == 0 and "is broken" not in verified.stdout, verified.stdout
    finally:
        await db.dispose()


@ON_POSTGRES
@pytest.mark.timeout(600)  # a dozen runs of the command, seconds each on a busy machine
async def test_archived_partitions_leave_the_log_verifiable_with_and_without_the_archive(fresh_url, tmp_path):
    data = await _seeded(fresh_url)
    db, item = data["db"], data["item"]
    try:
        signed = await _cli(fresh_url, "checkpoint-history")
        assert signed.returncode == 0, signed.stderr
        archived_seqs = [row[0] for row in await _rows(db, "SELECT seq FROM activity ORDER BY seq")]
        of_item = [row[0] for row in await _rows(db, "SELECT seq FROM activity WHERE chain = :c ORDER BY seq", c=item)]
        await _fill_to(db, "activity_part_0001")
        live = await _comment(data, "written after the archived part")
        archive = tmp_path / "archive"

        done = await _cli(fresh_url, "archive-history", "--before", _next_month(), "--to", str(archive))
        assert done.returncode == 0, done.stderr
        first_range = f"seqs 1 to {live - 1}"
        assert f"Archived activity_part_0000: {len(archived_seqs)} entries, {first_range}" in done.stdout
        assert await _rows(db, "SELECT seq FROM activity ORDER BY seq") == [(live,)]
        assert "activity_part_0000" not in {p.name for p in await _partitions(db)}
        lines = (archive / f"activity-{1:012d}-{live - 1:012d}.jsonl").read_text().splitlines()
        assert [json.loads(line)["seq"] for line in lines] == archived_seqs

        # Without the archive: the live entries from the anchors archiving recorded.
        alone = await _cli(fresh_url, "verify-history", "--all")
        assert alone.returncode == 0, alone.stdout + alone.stderr
        n = len(of_item)
        assert (
            f"History of {item} is intact through seq {of_item[-1]} ({n} entries, {n} of them archived" in alone.stdout
        )
        assert "the entries left checked from the archive's last hash" in alone.stdout
        item_b = await _scalar(db, "SELECT chain FROM activity WHERE seq = :s", s=live)
        one = await _cli(fresh_url, "verify-history", item_b)
        assert one.returncode == 0 and f"History of {item_b} is intact through seq {live}" in one.stdout, one

        # With it: every chain from its first entry, in the archive then in the database.
        whole = await _cli(fresh_url, "verify-history", "--all", "--archive", str(archive))
        assert whole.returncode == 0, whole.stdout + whole.stderr
        assert (
            f"History of {item} is intact through seq {of_item[-1]} ({n} entries, {n} of them archived: checked in"
            in (whole.stdout)
        )
        assert f"The archive at {archive} is whole" in whole.stdout

        # A chain whose every entry is archived goes on from its archived part's last hash, and its
        # checkpoint (of an archived entry) is signed again.
        async with db.transaction() as s:
            await engine.execute(s, actor=data["owner"], case_id=data["case"], action="reopen")
        async with db.transaction() as s:
            await engine.execute(s, actor=data["owner"], case_id=data["case"], action="comment", comment="reopened")
        resigned = await _cli(fresh_url, "checkpoint-history")
        assert resigned.returncode == 0 and "Not re-signed" not in resigned.stdout, resigned.stdout
        kept = await _scalar(db, "SELECT count(*) FROM activity WHERE chain = :c", c=item)
        assert kept >= 1
        for archived in ([], ["--archive", str(archive)]):
            again = await _cli(fresh_url, "verify-history", item, *archived)
            assert again.returncode == 0 and f"({n + kept} entries, {n} of them archived" in again.stdout, again

        # An anchor changed in the database: the archive ends the chain elsewhere, and the entry
        # left after it no longer follows it.
        anchor = await _scalar(db, "SELECT hash FROM archived_chain WHERE chain = :c", c=item)
        await _scalar(db, "UPDATE archived_chain SET hash = :h WHERE chain = :c RETURNING 1", h="0" * 64, c=item)
        moved = await _cli(fresh_url, "verify-history", "--all", "--archive", str(archive))
        assert moved.returncode == 1
        assert f"History of {item} is broken at seq {of_item[-1]}: the archive does not end the chain where" in (
            moved.stdout
        )
        cut = await _cli(fresh_url, "verify-history", item)
        unsigned = "the database's record of where its archived part ends is not signed with the secret key"
        assert cut.returncode == 1 and f"is broken at seq {of_item[-1]}: {unsigned}" in cut.stdout, cut.stdout
        without_key = await _cli(fresh_url, "verify-history", item, key="")  # the chain alone: it no longer follows
        first_kept = await _scalar(db, "SELECT min(seq) FROM activity WHERE chain = :c", c=item)
        assert f"is broken at seq {first_kept}: the entry does not follow" in without_key.stdout, without_key.stdout
        await _scalar(db, "UPDATE archived_chain SET hash = :h WHERE chain = :c RETURNING 1", h=anchor, c=item)
        assert (await _cli(fresh_url, "verify-history", item)).returncode == 0

        # The oldest entry left deleted and the anchor moved up to it, so that the entries after it
        # follow on: the chain and its checkpoint (of a newer entry) hold, the anchor's signature
        # does not. The files tell the same with --archive.
        (deleted,) = await _rows(db, "SELECT * FROM activity WHERE seq = :s", s=first_kept)
        saved = (await _rows(db, "SELECT seq, hash, at, entries FROM archived_chain WHERE chain = :c", c=item))[0]
        await _scalar(db, "DELETE FROM activity WHERE seq = :s RETURNING 1", s=first_kept)
        await _scalar(
            db,
            "UPDATE archived_chain SET seq = :s, hash = :h, at = :a, entries = entries + 1 "
            "WHERE chain = :c RETURNING 1",
            s=deleted.seq,
            h=deleted.hash,
            a=deleted.at,
            c=item,
        )
        forged = await _cli(fresh_url, "verify-history", "--all")
        assert forged.returncode == 1 and f"History of {item} is broken at seq {first_kept}: {unsigned}" in (
            forged.stdout
        )
        fooled = await _cli(fresh_url, "verify-history", item, key="")  # what a forged anchor got past before
        assert fooled.returncode == 0 and "is intact" in fooled.stdout, fooled.stdout
        against_files = await _cli(fresh_url, "verify-history", item, "--archive", str(archive))
        assert against_files.returncode == 1 and "the archive does not end the chain where" in against_files.stdout
        await _scalar(
            db,
            "UPDATE archived_chain SET seq = :s, hash = :h, at = :a, entries = :e WHERE chain = :c RETURNING 1",
            s=saved[0],
            h=saved[1],
            a=saved[2],
            e=saved[3],
            c=item,
        )
        async with db.engine.begin() as conn:  # the deleted entry put back: the chain holds again
            await conn.execute(insert(Activity.__table__).values(dict(deleted._mapping)))
        assert (await _cli(fresh_url, "verify-history", item)).returncode == 0

        # A changed entry in the archive is named; the database alone still verifies.
        resolved = next(i for i, line in enumerate(lines) if json.loads(line)["comment"] == "fixed")
        entry = json.loads(lines[resolved])
        lines[resolved] = json.dumps({**entry, "comment": "never fixed"}, sort_keys=True, separators=(",", ":"))
        (archive / f"activity-{1:012d}-{live - 1:012d}.jsonl").write_text("\n".join(lines) + "\n")
        tampered = await _cli(fresh_url, "verify-history", "--all", "--archive", str(archive))
        assert tampered.returncode == 1
        assert (
            f"History of {entry['chain']} is broken at seq {entry['seq']}: the entry does not hash" in tampered.stdout
        )
        assert (await _cli(fresh_url, "verify-history", "--all")).returncode == 0
    finally:
        await db.dispose()


async def _partitions(db: Database) -> list:
    async with db.read_session() as s:
        return await partitions.partitions(s)


@ON_POSTGRES
@pytest.mark.timeout(600)  # a dozen runs of the command, seconds each on a busy machine
async def test_history_pages_say_their_oldest_entries_were_archived(fresh_url, tmp_path):
    data = await _seeded(fresh_url)
    db = data["db"]
    compiled, resolved = Database(fresh_url), Database(fresh_url)
    try:
        newest_archived = await _scalar(db, "SELECT max(seq) FROM activity")
        item_b = await _scalar(db, "SELECT object_id FROM workflow_case WHERE id = :c", c=data["other_case"])
        b_archived = await _scalar(db, "SELECT max(seq) FROM activity WHERE workflow_item_id = :i", i=item_b)
        await _fill_to(db, "activity_part_0001")
        live = [await _comment(data, "first after"), await _comment(data, "second after")]
        # archived without a secret key: it says the anchors are unsigned, and leaves them so
        done = await _cli(fresh_url, "archive-history", "--before", _next_month(), "--to", str(tmp_path / "a"), key="")
        assert done.returncode == 0, done.stderr
        assert "the anchors the log's chains now start from are not signed" in done.stderr
        assert await _scalar(db, "SELECT count(*) FROM archived_chain WHERE signature IS NULL") > 0
        assert await _scalar(db, "SELECT count(*) FROM archived_chain WHERE signature IS NOT NULL") == 0

        def server(database: Database, compiled_reads: bool) -> httpx.AsyncClient:
            settings = Settings(database_url=fresh_url, compiled_reads=compiled_reads)
            transport = httpx.ASGITransport(app=create_app(settings, db=database))
            return httpx.AsyncClient(transport=transport, base_url="http://caseway.test")

        async with server(compiled, True) as http, server(resolved, False) as twin:
            gql = GraphQLClient(http)
            gql.twin = twin  # every answer the same from the compiled reads and the resolvers
            ids = {"item": item_b, "project": data["project"]}
            before = compiled_outcomes()
            first = await gql(ARCHIVED_HISTORY, ids, token=data["token"])
            assert compiled_outcomes()["compiled"] == before["compiled"] + 2  # the item (and its case), the project
            sentence = first["item"]["history"]["archived"]
            assert sentence.startswith(f"Entries before seq {b_archived + 1}, the newest written ")
            assert "are archived: they left the database on" in sentence
            assert [e["node"]["comment"] for e in first["item"]["history"]["edges"]] == ["first after", "second after"]
            assert first["item"]["case"]["log"]["archived"] == sentence
            assert first["project"]["history"]["archived"].startswith(f"Entries before seq {newest_archived + 1},")
            assert [e["node"]["seq"] for e in first["project"]["history"]["edges"]] == live
            # Past the boundary, a page says nothing of the archive.
            cursor = first["item"]["history"]["edges"][0]["cursor"]
            later = await gql(ARCHIVED_HISTORY, {**ids, "after": cursor}, token=data["token"])
            assert later["item"]["history"]["archived"] is None
            assert [e["node"]["seq"] for e in later["item"]["history"]["edges"]] == live[1:]
            # A page that does not ask for the sentence is the same.
            before = compiled_outcomes()
            page = await gql(ITEM_HISTORY_PAGE, {"item": item_b}, token=data["token"])
            assert compiled_outcomes()["compiled"] == before["compiled"] + 1
            assert page["node"]["history"]["edges"] == first["item"]["history"]["edges"]
            # An item whose every entry is archived: no entries, and the sentence.
            gone = await gql(ARCHIVED_HISTORY, {**ids, "item": data["item"]}, token=data["token"])
            assert gone["item"]["history"]["edges"] == [] and "are archived" in gone["item"]["history"]["archived"]
    finally:
        for database in (db, compiled, resolved):
            await database.dispose()


@ON_POSTGRES
@pytest.mark.timeout(600)  # a dozen runs of the command, seconds each on a busy machine
async def test_archive_history_refuses_what_it_cannot_do(fresh_url, tmp_path):
    data = await _seeded(fresh_url)
    try:
        bad = await _cli(fresh_url, "archive-history", "--before", "2026-13", "--to", str(tmp_path))
        assert bad.returncode == 2 and "'2026-13' is not a month: write it YYYY-MM" in bad.stderr
        nothing = await _cli(fresh_url, "archive-history", "--before", "2000-01", "--to", str(tmp_path / "a"))
        assert nothing.returncode == 1
        assert "nothing to archive before 2000-01: the oldest partition of the log" in nothing.stderr
        assert not (tmp_path / "a").exists()
        # The oldest partition is still being written, whatever the month.
        young = await _cli(fresh_url, "archive-history", "--before", _next_month(), "--to", str(tmp_path / "a"))
        assert young.returncode == 1 and "nothing to archive before" in young.stderr
        blocked = tmp_path / "a-file"
        blocked.write_text("not a directory")
        await _fill_to(data["db"], "activity_part_0001")
        await _comment(data, "fills the first partition")
        unwritable = await _cli(fresh_url, "archive-history", "--before", _next_month(), "--to", str(blocked / "x"))
        assert unwritable.returncode == 1 and f"cannot write the archive to {blocked / 'x'}" in unwritable.stderr
        s3 = await _cli(fresh_url, "archive-history", "--before", _next_month(), "--to", "s3://bucket/log")
        assert s3.returncode == 1 and "archive-history writes to a directory" in s3.stderr
        # Refused, nothing dropped: every entry is still in the database.
        assert await _scalar(data["db"], "SELECT count(*) FROM activity WHERE seq < :s", s=100) > 0
        assert "activity_part_0000" in {p.name for p in await _partitions(data["db"])}
        missing = await _cli(fresh_url, "verify-history", "--all", "--archive", str(tmp_path / "none"))
        assert missing.returncode == 1 and "is not a directory: give the directory archive-history wrote to" in (
            missing.stderr
        )
    finally:
        await data["db"].dispose()


@pytest.mark.skipif(BACKEND != "sqlite", reason="the refusal of SQLite")
async def test_archive_history_refuses_sqlite(db, tmp_path):
    refused = await _cli(db.url, "archive-history", "--before", "2026-10", "--to", str(tmp_path / "a"))
    assert refused.returncode == 1
    assert "archive-history needs PostgreSQL: on SQLite the log is one table" in refused.stderr
    assert not (tmp_path / "a").exists()
