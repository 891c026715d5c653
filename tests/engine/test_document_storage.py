"""The local document store: content-addressed, hashed while written, refused past the limit
with nothing left behind."""

import hashlib
from pathlib import Path

import pytest

from engine.documents.storage import LocalDocumentStore, TooLarge, is_temporary, sniff_content_type

# No database at all: run once, by the SQLite run (scripts/run_tests.py).
pytestmark = pytest.mark.backend_free

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 100


async def chunks(*parts: bytes):
    for part in parts:
        yield part


def stored_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


async def test_write_hashes_and_reads_back_identical_bytes(tmp_path: Path) -> None:
    store = LocalDocumentStore(tmp_path)
    body = b"invoice 2026-11 " * 50_000
    stored = await store.write(chunks(body[:1000], body[1000:]), max_bytes=10_000_000, file_name="inv.txt")
    assert stored.sha256 == hashlib.sha256(body).hexdigest() == stored.key
    assert stored.size == len(body)
    assert stored.content_type == "text/plain"
    assert b"".join([c async for c in store.read(stored.key)]) == body
    assert await store.exists(stored.key)
    assert stored_files(tmp_path) == [tmp_path / stored.key[:2] / stored.key[2:4] / stored.key]


async def test_identical_files_are_stored_once(tmp_path: Path) -> None:
    store = LocalDocumentStore(tmp_path)
    first = await store.write(chunks(PNG), max_bytes=1000, file_name="a.bin")
    second = await store.write(chunks(PNG[:5], PNG[5:]), max_bytes=1000, file_name="b.bin")
    assert first == second
    assert first.content_type == "image/png"  # from the bytes, not the name
    assert len(stored_files(tmp_path)) == 1


async def test_a_file_past_the_limit_leaves_nothing(tmp_path: Path) -> None:
    store = LocalDocumentStore(tmp_path)
    with pytest.raises(TooLarge, match="larger than 10 bytes"):
        await store.write(chunks(b"12345", b"678901"), max_bytes=10)
    assert stored_files(tmp_path) == []


async def test_keys_list_documents_and_leftovers_and_delete_removes(tmp_path: Path) -> None:
    store = LocalDocumentStore(tmp_path)
    stored = await store.write(chunks(b"contract"), max_bytes=100)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    (tmp_path / "tmp" / "upload-crashed").write_bytes(b"half")
    keys = sorted([k.key async for k in store.keys()])
    assert keys == sorted([stored.key, "tmp/upload-crashed"])
    assert [is_temporary(k) for k in keys] == [k.startswith("tmp/") for k in keys]
    for key in keys:
        await store.delete(key)
    assert stored_files(tmp_path) == []
    assert not await store.exists(stored.key)
    with pytest.raises(FileNotFoundError):
        [c async for c in store.read(stored.key)]


async def test_keys_that_are_not_hashes_never_reach_outside_the_store(tmp_path: Path) -> None:
    store = LocalDocumentStore(tmp_path / "store")
    (tmp_path / "secret").write_bytes(b"x")
    assert not await store.exists("../secret")
    with pytest.raises(FileNotFoundError):
        [c async for c in store.read("../secret")]


@pytest.mark.parametrize(
    ("head", "name", "expected"),
    [
        (b"%PDF-1.7\n", "x.txt", "application/pdf"),
        (b"a,b\n1,2\n", "budget.csv", "text/csv"),
        (b"plain words", None, "text/plain"),
        (b"\x00\x01\x02", None, "application/octet-stream"),
    ],
)
def test_content_type_from_bytes_then_name_then_text(head: bytes, name: str | None, expected: str) -> None:
    assert sniff_content_type(head, name) == expected
