"""Documents in the database: migration 0014 down and up, orphan collection (also by
`caseway collect-documents`)."""

import asyncio
import hashlib
import os
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import inspect

import engine
from engine.documents.collect import collect_orphans
from engine.documents.records import add_document
from engine.documents.storage import LocalDocumentStore
from models import Database, utcnow
from tests.fixtures.builders import caseway
from tests.fixtures.engine import new_subproject


async def test_migration_0014_adds_and_drops_the_document_columns(fresh_url):
    from alembic import command

    from server.migrate import alembic_config, upgrade

    new = {"storage_key", "size", "content_type", "added_at", "added_by", "removed_at", "removed_by"}

    async def columns() -> set[str]:
        db = Database(fresh_url)
        try:
            async with db.engine.connect() as conn:
                return await conn.run_sync(lambda c: {col["name"] for col in inspect(c).get_columns("document")})
        finally:
            await db.dispose()

    await asyncio.to_thread(upgrade, fresh_url)
    assert new <= await columns()
    await asyncio.to_thread(command.downgrade, alembic_config(fresh_url), "0013")
    assert await columns() == {"id", "workflow_item_id", "file_name", "sha256", "link"}
    await asyncio.to_thread(upgrade, fresh_url)
    assert new <= await columns()


async def chunks(body: bytes):
    yield body


async def test_collection_keeps_what_rows_name_and_young_files(db, make_actor, tmp_path):
    owner = await make_actor("owner")
    store = LocalDocumentStore(tmp_path / "store")
    kept = await store.write(chunks(b"the contract"), max_bytes=100)
    orphan = await store.write(chunks(b"a refused upload"), max_bytes=100)
    (tmp_path / "store" / "tmp").mkdir(exist_ok=True)
    (tmp_path / "store" / "tmp" / "upload-crashed").write_bytes(b"half a file")
    async with db.transaction() as s:
        sub = await new_subproject(s, owner, workflow="bug")
        item, _ = await engine.create_workflow_item(s, actor=owner, subproject_id=sub.id, display_name="Buy")
        await add_document(s, actor=owner, item_id=item.id, stored=kept, file_name="contract.txt")

    async with db.read_session() as s:
        too_young = await collect_orphans(s, store, now=utcnow(), grace=timedelta(minutes=5))
        assert (too_young.deleted, too_young.kept) == ([], 3)
        later = await collect_orphans(s, store, now=utcnow() + timedelta(minutes=10), grace=timedelta(minutes=5))
    assert sorted(later.deleted) == sorted([orphan.key, "tmp/upload-crashed"]) and later.kept == 1
    assert await store.exists(kept.key) and not await store.exists(orphan.key)


def test_collect_documents_command(database, db, tmp_path):
    store_dir = tmp_path / "store"
    store = LocalDocumentStore(store_dir)
    orphan, young = (store.path_of(hashlib.sha256(body).hexdigest()) for body in (b"x", b"y"))
    for path, body in ((orphan, b"x"), (young, b"y")):
        path.parent.mkdir(parents=True)
        path.write_bytes(body)
    old = (utcnow() - timedelta(hours=2)).timestamp()
    os.utime(orphan, (old, old))
    env = {**os.environ, "CASEWAY_DATABASE_URL": database.url, "CASEWAY_DOCUMENTS_DIR": str(store_dir)}
    done = caseway("collect-documents", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Deleted 1 unreferenced files; kept 1."
    assert [p.name for p in sorted(Path(store_dir).rglob("*")) if p.is_file()] == [young.name]
    refused = caseway("collect-documents", "--grace", "-1", env=env)
    assert refused.returncode == 2 and "--grace must not be negative" in refused.stderr


@pytest.mark.parametrize("value", [0, 2**31])
def test_the_document_limit_fits_a_graphql_int(value):
    from pydantic import ValidationError

    from server.settings import Settings

    with pytest.raises(ValidationError, match="max_document_bytes"):
        Settings(max_document_bytes=value)
    assert Settings(max_document_bytes=2**31 - 1).max_document_bytes == 2**31 - 1
