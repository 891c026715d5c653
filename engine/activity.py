"""Appending to the activity log.

Entries are written at the very end of their transaction, under a lock held until commit
(PostgreSQL: a transaction-scoped advisory lock; SQLite: its single writer). So ``seq`` order
is commit order: a live reader that reads ``seq > last`` never skips an entry that commits
late. The lock covers only the insert and the commit, not the work before them.

Each entry extends the hash chain of the resource it is about (``chain``): its hash covers the
previous entry's hash, so an edited or deleted entry breaks every hash after it.
"""

import hashlib
import json
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from models import Activity, new_id, utcnow

NEW_ACTIVITIES = "caseway.new_activities"


def entry_hash(prev_hash: str | None, entry: Activity) -> str:
    payload = json.dumps(
        [
            prev_hash,
            entry.id,
            entry.kind,
            entry.actor_id,
            entry.at.isoformat(),
            entry.action,
            entry.comment,
            entry.data,
            entry.project_id,
            entry.subproject_id,
            entry.workflow_item_id,
        ],
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


async def record(
    session: AsyncSession,
    *,
    kind: str,
    actor_id: str | None,
    chain: str,
    project_id: str | None = None,
    subproject_id: str | None = None,
    workflow_item_id: str | None = None,
    case_id: str | None = None,
    action: str | None = None,
    comment: str | None = None,
    data: dict[str, Any] | None = None,
    at: datetime | None = None,
) -> Activity:
    prev_hash = await session.scalar(
        select(Activity.hash).where(Activity.chain == chain).order_by(Activity.seq.desc()).limit(1)
    )
    entry = Activity(
        id=new_id("act"),
        kind=kind,
        actor_id=actor_id,
        chain=chain,
        project_id=project_id,
        subproject_id=subproject_id,
        workflow_item_id=workflow_item_id,
        case_id=case_id,
        action=action,
        comment=comment,
        data=data or {},
        at=at or utcnow(),
        prev_hash=prev_hash,
        hash="",
    )
    entry.hash = entry_hash(prev_hash, entry)
    session.add(entry)
    await session.flush()
    # Published to live subscribers by whoever commits the transaction.
    session.info.setdefault(NEW_ACTIVITIES, []).append(entry)
    return entry


async def verify_chain(session: AsyncSession, chain: str) -> bool:
    """True if every entry of the chain hashes to what is stored."""
    prev: str | None = None
    for entry in await session.scalars(select(Activity).where(Activity.chain == chain).order_by(Activity.seq)):
        if entry.prev_hash != prev or entry_hash(prev, entry) != entry.hash:
            return False
        prev = entry.hash
    return True
