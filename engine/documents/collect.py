"""Collecting stored files that no document row refers to.

Bytes are written before the transaction that records them commits (they are streamed in
before it starts), so a refused or failed upload leaves a file behind. Such a file is removed
once it is older than a grace period: the grace covers uploads still in flight, whose rows are
not committed yet (a write of bytes already stored refreshes the file's time, so a second
upload of the same content is covered too). Leftovers of interrupted writes (temporary files)
are removed after the same grace. Removed documents keep their bytes: their rows remain.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from models import Document

from .storage import DocumentStore, is_temporary

DEFAULT_GRACE = timedelta(hours=1)
_BATCH = 500  # keys asked about per statement


@dataclass
class Collection:
    deleted: list[str] = field(default_factory=list)
    kept: int = 0  # files a row still refers to, or too young to judge


def _batches(keys: list[str]) -> Iterable[list[str]]:
    for start in range(0, len(keys), _BATCH):
        yield keys[start : start + _BATCH]


async def collect_orphans(
    session: AsyncSession, store: DocumentStore, *, now: datetime, grace: timedelta = DEFAULT_GRACE
) -> Collection:
    """Delete stored files older than ``grace`` that no document row names. Reads only; the
    caller's session need not commit."""
    result = Collection()
    cutoff = now - grace
    candidates: list[str] = []
    async for stored in store.keys():
        if stored.modified_at > cutoff:
            result.kept += 1
        elif is_temporary(stored.key):
            await store.delete(stored.key)
            result.deleted.append(stored.key)
        else:
            candidates.append(stored.key)
    for batch in _batches(candidates):
        used = set(await session.scalars(select(Document.storage_key).where(Document.storage_key.in_(batch))))
        result.kept += len(used)
        for key in batch:
            if key not in used:
                await store.delete(key)
                result.deleted.append(key)
    return result


__all__ = ["DEFAULT_GRACE", "Collection", "collect_orphans"]
