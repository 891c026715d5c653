"""The S3 document store against a real S3 endpoint (moto's server mode on a loopback port):
what is written reads back byte-identical, identical files are stored once, a file over the
limit stores nothing, and a deleted file is gone. Skipped only where moto is not installed."""

import hashlib
import os
from collections.abc import AsyncIterator

import pytest

from engine.documents.s3 import PART_BYTES, S3Store, TooLarge


async def chunked(data: bytes, size: int = 64 * 1024) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


async def read_all(store: S3Store, sha256: str) -> bytes:
    return b"".join([chunk async for chunk in store.read(sha256)])


def objects(endpoint, bucket: str) -> list[str]:
    return [o["Key"] for o in endpoint.client().list_objects_v2(Bucket=bucket).get("Contents", [])]


@pytest.fixture
def store(s3_endpoint) -> S3Store:
    return S3Store(bucket=s3_endpoint.new_bucket(), endpoint_url=s3_endpoint.url, prefix="docs/")


async def test_a_written_file_reads_back_byte_identical_under_its_hash(store, s3_endpoint):
    invoice = os.urandom(300_000) + b"Invoice 117\n"
    sha256, size = await store.write(chunked(invoice), max_bytes=1_000_000)
    assert (sha256, size) == (hashlib.sha256(invoice).hexdigest(), len(invoice))
    assert await read_all(store, sha256) == invoice
    assert await store.exists(sha256)
    assert objects(s3_endpoint, store.bucket) == [f"docs/{sha256[:2]}/{sha256}"]


async def test_a_file_larger_than_one_part_goes_up_in_parts_and_reads_back(store):
    contract = os.urandom(PART_BYTES * 2 + 12_345)
    sha256, size = await store.write(chunked(contract, 1 << 20), max_bytes=len(contract))
    assert size == len(contract)
    head = store.client.head_object(Bucket=store.bucket, Key=store.key(sha256))
    assert head["ETag"].strip('"').endswith("-3")  # a multipart upload's ETag counts its parts
    assert await read_all(store, sha256) == contract


async def test_identical_files_are_stored_once_and_different_ones_apart(store, s3_endpoint):
    first, _ = await store.write(chunked(b"same bytes " * 1000), max_bytes=100_000)
    again, _ = await store.write(chunked(b"same bytes " * 1000, 999), max_bytes=100_000)  # other chunking
    other, _ = await store.write(chunked(b"other bytes " * 1000), max_bytes=100_000)
    assert first == again != other
    assert sorted(objects(s3_endpoint, store.bucket)) == sorted([store.key(first), store.key(other)])


async def test_a_file_over_the_limit_stores_nothing(store, s3_endpoint):
    with pytest.raises(TooLarge):
        await store.write(chunked(b"x" * 10_001), max_bytes=10_000)
    assert objects(s3_endpoint, store.bucket) == []
    sha256, size = await store.write(chunked(b"x" * 10_000), max_bytes=10_000)  # the limit itself is allowed
    assert size == 10_000 and await store.exists(sha256)


async def test_a_deleted_file_is_gone_and_reading_it_is_a_missing_file(store, s3_endpoint):
    kept, _ = await store.write(chunked(b"kept"), max_bytes=100)
    gone, _ = await store.write(chunked(b"gone"), max_bytes=100)
    await store.delete(gone)
    assert not await store.exists(gone)
    with pytest.raises(FileNotFoundError):
        await read_all(store, gone)
    assert await read_all(store, kept) == b"kept"
    assert objects(s3_endpoint, store.bucket) == [store.key(kept)]
    await store.delete(gone)  # twice: still no error, as S3 has it


def test_a_key_is_only_ever_a_sha256(store):
    for bad in ("../secret", "A" * 64, "0" * 63, "0" * 64 + "/x"):
        with pytest.raises(ValueError):
            store.key(bad)
