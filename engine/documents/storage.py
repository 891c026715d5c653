"""Where a document's bytes live: a small interface, and a directory on disk behind it.

Stores are content-addressed: a file's key is its SHA-256, so identical files are stored once
and a key never names two contents. A store writes while it reads (``write`` hashes, counts and
sniffs each chunk as it passes, never holding the file whole) and refuses a file longer than the
caller's limit before storing anything. Bytes are written before the transaction that records
them commits; a file whose transaction rolled back has no ``document`` row and is collected
later (``engine/documents/collect.py``) once it is older than a grace period — the grace is what
keeps a file of an upload still in flight. ``write`` refreshes an existing file's time for that
reason.

Another store (S3) implements the same ``DocumentStore`` protocol; nothing else in the engine
knows where bytes are.
"""

from __future__ import annotations

import asyncio
import hashlib
import mimetypes
import os
import tempfile
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

import filetype
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

CHUNK = 256 * 1024  # bytes read or written per step: few thread hops, little memory
SNIFF_BYTES = 261  # what filetype needs to recognize every type it knows
OCTET_STREAM = "application/octet-stream"


class TooLarge(Exception):
    """The file passed the limit while it was read; nothing was stored."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"The file is larger than {limit} bytes.")
        self.limit = limit


@dataclass(frozen=True)
class StoredFile:
    """What a write stored: the key to read it by, and the facts a document row records."""

    key: str
    sha256: str
    size: int
    content_type: str


@dataclass(frozen=True)
class StoredKey:
    """One stored file as a listing sees it (for collection)."""

    key: str
    modified_at: datetime


def sniff_content_type(head: bytes, file_name: str | None) -> str:
    """The type from the file's first bytes (magic numbers), else from its name, else plain text
    when the start is valid UTF-8 without NULs, else octet-stream. Served files carry
    ``nosniff`` and ``attachment``, so a wrong guess never makes a browser run one."""
    kind = filetype.guess(head) if head else None
    if kind is not None:
        return kind.mime
    guessed = mimetypes.guess_type(file_name or "", strict=False)[0] if file_name else None
    if guessed:
        return guessed
    if head and b"\x00" not in head:
        try:
            head.decode("utf-8")
        except UnicodeDecodeError as cut:  # a multi-byte character cut at the end of the head
            if cut.start < len(head) - 3:
                return OCTET_STREAM
        return "text/plain"
    return OCTET_STREAM


class Hasher:
    """Hashes, counts and keeps the head of a stream as it passes; raises ``TooLarge`` at the
    first chunk past ``max_bytes``. Shared by every store, so each enforces the limit alike."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.digest = hashlib.sha256()
        self.size = 0
        self.head = b""

    def update(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.max_bytes:
            raise TooLarge(self.max_bytes)
        if len(self.head) < SNIFF_BYTES:
            self.head += chunk[: SNIFF_BYTES - len(self.head)]
        self.digest.update(chunk)

    def result(self, key: str, file_name: str | None) -> StoredFile:
        return StoredFile(key, self.digest.hexdigest(), self.size, sniff_content_type(self.head, file_name))


@runtime_checkable
class DocumentStore(Protocol):
    async def write(self, chunks: AsyncIterable[bytes], *, max_bytes: int, file_name: str | None = None) -> StoredFile:
        """Store a stream; the key is its SHA-256 (stored once however often it is written)."""
        ...

    def read(self, key: str) -> AsyncIterator[bytes]:
        """The stored bytes in chunks; ``FileNotFoundError`` when the key is not stored."""
        ...

    async def exists(self, key: str) -> bool: ...

    async def delete(self, key: str) -> None:
        """Remove a stored file (collection only); a missing key is not an error."""
        ...

    def keys(self) -> AsyncIterator[StoredKey]:
        """Every stored key and when it was last written, for collection; includes leftovers of
        interrupted writes under keys ``collect`` recognizes as temporary."""
        ...


class LocalDocumentStore:
    """A directory: ``<root>/ab/cd/<sha256>``, and ``<root>/tmp/`` for writes in progress.

    A write goes to a temporary file in the same directory tree, then is renamed into its hash
    path (atomic on one file system): a reader never sees half a file, and two writers of the
    same content both end with the same complete file.
    """

    TMP = "tmp"

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path_of(self, key: str) -> Path:
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise FileNotFoundError(key)  # never a path outside the store
        return self.root / key[:2] / key[2:4] / key

    async def write(self, chunks: AsyncIterable[bytes], *, max_bytes: int, file_name: str | None = None) -> StoredFile:
        tmp_dir = self.root / self.TMP
        await asyncio.to_thread(tmp_dir.mkdir, parents=True, exist_ok=True)
        fd, tmp_name = await asyncio.to_thread(tempfile.mkstemp, dir=tmp_dir, prefix="upload-")
        hasher = Hasher(max_bytes)
        try:
            with os.fdopen(fd, "wb") as out:
                async for chunk in chunks:
                    if not chunk:
                        continue
                    hasher.update(chunk)
                    await asyncio.to_thread(out.write, chunk)
                await asyncio.to_thread(os.fsync, out.fileno())
            stored = hasher.result(hasher.digest.hexdigest(), file_name)
            await asyncio.to_thread(self._settle, Path(tmp_name), self.path_of(stored.key))
        except BaseException:
            await asyncio.to_thread(Path(tmp_name).unlink, missing_ok=True)
            raise
        return stored

    @staticmethod
    def _settle(tmp: Path, final: Path) -> None:
        final.parent.mkdir(parents=True, exist_ok=True)
        if final.exists():
            # Stored once: keep the existing file, refresh its time so collection's grace
            # period covers this write's transaction too.
            tmp.unlink()
            os.utime(final)
        else:
            os.replace(tmp, final)

    async def read(self, key: str) -> AsyncIterator[bytes]:
        handle = await asyncio.to_thread(open, self.path_of(key), "rb")
        try:
            while chunk := await asyncio.to_thread(handle.read, CHUNK):
                yield chunk
        finally:
            handle.close()

    async def exists(self, key: str) -> bool:
        try:
            return await asyncio.to_thread(self.path_of(key).is_file)
        except FileNotFoundError:
            return False

    async def delete(self, key: str) -> None:
        if key.startswith(self.TMP + "/"):
            path = self.root / key
        else:
            path = self.path_of(key)
        await asyncio.to_thread(path.unlink, missing_ok=True)

    async def keys(self) -> AsyncIterator[StoredKey]:
        entries = await asyncio.to_thread(self._list)
        for key, mtime in entries:
            yield StoredKey(key, datetime.fromtimestamp(mtime, UTC))

    def _list(self) -> list[tuple[str, float]]:
        found: list[tuple[str, float]] = []
        if not self.root.is_dir():
            return found
        for dirpath, _dirs, files in os.walk(self.root):
            rel = Path(dirpath).relative_to(self.root)
            for name in files:
                try:
                    mtime = (Path(dirpath) / name).stat().st_mtime
                except FileNotFoundError:  # removed since the walk listed it
                    continue
                found.append(((rel / name).as_posix() if rel.parts[:1] == (self.TMP,) else name, mtime))
        return found


def is_temporary(key: str) -> bool:
    """A leftover of an interrupted write (never a document's key)."""
    return key.startswith(LocalDocumentStore.TMP + "/")


def default_documents_dir(database_url: str) -> Path:
    """Next to the SQLite database file (the data directory of a default install), whichever
    driver the URL names (``sqlite:///`` or ``sqlite+aiosqlite:///``); the working directory for
    a server database."""
    try:
        url = make_url(database_url)
    except ArgumentError:
        return Path("caseway-documents")
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        return Path(url.database).parent / "caseway-documents"
    return Path("caseway-documents")


__all__ = [
    "CHUNK",
    "DocumentStore",
    "Hasher",
    "LocalDocumentStore",
    "StoredFile",
    "StoredKey",
    "TooLarge",
    "default_documents_dir",
    "is_temporary",
    "sniff_content_type",
]
