"""The S3 document store against a real S3 endpoint (moto's server mode on a loopback port): what
is written reads back byte-identical under its hash, identical files are stored once (and their
time refreshed, for collection), a file over the limit sends nothing, a deleted file is gone, and
orphans are collected as from a directory. Skipped only where moto is not installed."""

import hashlib
import os
from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import pytest

from engine.documents.collect import collect_orphans
from engine.documents.s3 import PART_BYTES, S3Store
from engine.documents.storage import TooLarge
from models import utcnow

PDF = b"%PDF-1.7\n" + bytes(range(256)) * 300


async def chunked(data: bytes, size: int = 64 * 1024) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


async def read_all(store: S3Store, key: str) -> bytes:
    return b"".join([chunk async for chunk in store.read(key)])


def objects(store: S3Store) -> dict[str, datetime]:
    listed = store.client.list_objects_v2(Bucket=store.bucket).get("Contents", [])
    return {o["Key"]: o["LastModified"] for o in listed}


@pytest.fixture
def store(s3_endpoint) -> S3Store:
    return S3Store(bucket=s3_endpoint.new_bucket(), endpoint_url=s3_endpoint.url, prefix="caseway/docs/")


async def test_a_written_file_reads_back_byte_identical_under_its_hash(store):
    stored = await store.write(chunked(PDF), max_bytes=1_000_000, file_name="invoice.txt")
    assert stored.key == stored.sha256 == hashlib.sha256(PDF).hexdigest()
    assert (stored.size, stored.content_type) == (len(PDF), "application/pdf")  # sniffed from the bytes
    assert await read_all(store, stored.key) == PDF
    assert await store.exists(stored.key)
    assert list(objects(store)) == [f"caseway/docs/{stored.key[:2]}/{stored.key}"]


async def test_a_file_larger_than_one_part_goes_up_in_parts_and_reads_back(store):
    contract = os.urandom(PART_BYTES * 2 + 12_345)
    stored = await store.write(chunked(contract, 1 << 20), max_bytes=len(contract))
    assert stored.size == len(contract)
    head = store.client.head_object(Bucket=store.bucket, Key=store.object_name(stored.key))
    assert head["ETag"].strip('"').endswith("-3")  # a multipart upload's ETag counts its parts
    assert await read_all(store, stored.key) == contract


async def test_identical_files_are_stored_once_and_the_second_write_refreshes_the_time(store):
    first = await store.write(chunked(b"same bytes " * 1000), max_bytes=100_000)
    before = objects(store)[store.object_name(first.key)]
    again = await store.write(chunked(b"same bytes " * 1000, 999), max_bytes=100_000)  # other chunks
    other = await store.write(chunked(b"other bytes " * 1000), max_bytes=100_000)
    assert first == again and first.key != other.key
    after = objects(store)
    assert sorted(after) == sorted([store.object_name(first.key), store.object_name(other.key)])
    assert after[store.object_name(first.key)] >= before
    assert await read_all(store, first.key) == b"same bytes " * 1000  # the copy onto itself kept it


async def test_a_file_over_the_limit_sends_nothing(store):
    with pytest.raises(TooLarge):
        await store.write(chunked(b"x" * 10_001, 4096), max_bytes=10_000)
    assert objects(store) == {}
    stored = await store.write(chunked(b"x" * 10_000), max_bytes=10_000)  # the limit itself is allowed
    assert stored.size == 10_000 and await store.exists(stored.key)


async def test_a_deleted_file_is_gone_and_reading_it_is_a_missing_file(store):
    kept = await store.write(chunked(b"kept"), max_bytes=100)
    gone = await store.write(chunked(b"gone"), max_bytes=100)
    await store.delete(gone.key)
    assert not await store.exists(gone.key)
    with pytest.raises(FileNotFoundError):
        await read_all(store, gone.key)
    assert await read_all(store, kept.key) == b"kept"
    assert list(objects(store)) == [store.object_name(kept.key)]
    await store.delete(gone.key)  # twice: still no error, as S3 has it


async def test_keys_that_are_not_hashes_name_nothing(store):
    for bad in ("../secret", "A" * 64, "0" * 63, "0" * 64 + "/x"):
        assert not await store.exists(bad)
        with pytest.raises(FileNotFoundError):
            await read_all(store, bad)
        await store.delete(bad)


async def test_keys_lists_only_the_stores_objects_and_collection_deletes_orphans(store, db):
    orphan = await store.write(chunked(b"an upload whose transaction rolled back"), max_bytes=1000)
    store.client.put_object(Bucket=store.bucket, Key="caseway/docs/README", Body=b"not a document")
    store.client.put_object(Bucket=store.bucket, Key="elsewhere/" + "0" * 64, Body=b"outside the prefix")
    listed = [k async for k in store.keys()]
    assert [k.key for k in listed] == [orphan.key]
    assert listed[0].modified_at.tzinfo is not None

    async with db.read_session() as session:
        young = await collect_orphans(session, store, now=utcnow())
        assert (young.deleted, young.kept) == ([], 1)  # within the grace period
        old = await collect_orphans(session, store, now=utcnow() + timedelta(hours=2))
    assert old.deleted == [orphan.key]
    assert sorted(objects(store)) == ["caseway/docs/README", "elsewhere/" + "0" * 64]
