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

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from models import Activity, kind_of, new_id, utcnow
from models.db import BEFORE_COMMIT

NEW_ACTIVITIES = "caseway.new_activities"


def scope_of(resource: Any, *, case_id: str | None = None) -> dict[str, str | None]:
    """The resource columns of an entry about ``resource`` (a project, subproject or item), so
    each resource's history finds it."""
    kind = kind_of(resource.id)
    if kind == "Project":
        scope = {"project_id": resource.id}
    elif kind == "Subproject":
        scope = {"project_id": resource.project_id, "subproject_id": resource.id}
    else:
        scope = {
            "project_id": resource.project_id,
            "subproject_id": resource.subproject_id,
            "workflow_item_id": resource.id,
        }
    return {**scope, "case_id": case_id} if case_id else scope


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
    about: Any,
    case_id: str | None = None,
    action: str | None = None,
    comment: str | None = None,
    data: dict[str, Any] | None = None,
    at: datetime | None = None,
) -> Activity:
    """Queue an entry about ``about`` (a project, subproject or workflow item); it is hashed and
    inserted just before the transaction commits."""
    entry = Activity(
        id=new_id("act"),
        kind=kind,
        actor_id=actor_id,
        chain=about.id,  # each resource's entries form one hash chain
        **scope_of(about, case_id=case_id),
        action=action,
        comment=comment,
        data=data or {},
        at=at or utcnow(),
        prev_hash=None,
        hash="",
    )
    pending = session.info.setdefault(NEW_ACTIVITIES, [])
    if not pending:
        session.info.setdefault(BEFORE_COMMIT, []).append(_write_pending)
    pending.append(entry)  # published to live subscribers by whoever commits the transaction
    return entry


# Any constant works: it only has to be the same for every writer of the log.
_LOG_LOCK_KEY = 7_305_224_417


async def _write_pending(session: AsyncSession) -> None:
    """Insert the queued entries under the log lock, which the commit right after releases."""
    if session.bind.dialect.name == "postgresql":
        await session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOG_LOCK_KEY})
    heads: dict[str, str | None] = {}
    for entry in session.info.get(NEW_ACTIVITIES, []):
        if entry.chain not in heads:
            heads[entry.chain] = await session.scalar(
                select(Activity.hash).where(Activity.chain == entry.chain).order_by(Activity.seq.desc()).limit(1)
            )
        entry.prev_hash = heads[entry.chain]
        entry.hash = heads[entry.chain] = entry_hash(entry.prev_hash, entry)
        session.add(entry)
    await session.flush()


async def verify_chain(session: AsyncSession, chain: str) -> bool:
    """True if every entry of the chain hashes to what is stored."""
    prev: str | None = None
    for entry in await session.scalars(select(Activity).where(Activity.chain == chain).order_by(Activity.seq)):
        if entry.prev_hash != prev or entry_hash(prev, entry) != entry.hash:
            return False
        prev = entry.hash
    return True
