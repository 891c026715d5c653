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
from types import SimpleNamespace
from typing import Any

from sqlalchemy import bindparam, func, insert, select
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


_UNSCOPED: dict[str, str | None] = dict.fromkeys(("project_id", "subproject_id", "workflow_item_id", "case_id"))


class LogEntry(SimpleNamespace):
    """An entry as the transaction that writes it holds it: ``models.Activity``'s columns as
    plain attributes (``record`` sets them all), ``seq`` and ``hash`` filled in by its insert.
    It is inserted with Core, never through the session, so it needs none of an ORM row's
    instrumentation (building an ``Activity`` cost 70 µs, 4% of an executeAction's CPU in bench
    W1)."""


def entry_hash(prev_hash: str | None, entry: Activity | LogEntry) -> str:
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
) -> LogEntry:
    """Queue an entry about ``about`` (a project, subproject or workflow item); it is hashed and
    inserted just before the transaction commits."""
    entry = LogEntry(
        seq=None,
        id=new_id("act"),
        kind=kind,
        actor_id=actor_id,
        chain=about.id,  # each resource's entries form one hash chain
        **(_UNSCOPED | scope_of(about, case_id=case_id)),
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
_LOG_LOCK_KEY = 7_305_224_417  # the whole log, held from the insert to the commit

_HEAD = select(Activity.hash).where(Activity.chain == bindparam("chain")).order_by(Activity.seq.desc()).limit(1)
# PostgreSQL: the chain's advisory lock (class 730522 with hashtext(chain)), then its head, in
# one round trip (migration 0004: the function's read runs after its lock, on a fresh snapshot).
_LOCKED_HEAD = select(func.caseway_chain_head(bindparam("chain")))
_COLUMNS = [column for column in Activity.__table__.c if column.name != "seq"]
_INSERT = insert(Activity).returning(Activity.seq)
# The log lock taken by the insert itself (a function in FROM runs before the row is built,
# and with it the seq default): one round trip less while every writer waits.
_INSERT_UNDER_LOG_LOCK = (
    insert(Activity)
    .from_select(
        [column.name for column in _COLUMNS],
        select(*[bindparam(column.name, type_=column.type) for column in _COLUMNS]).select_from(
            func.pg_advisory_xact_lock(_LOG_LOCK_KEY).alias("log_lock")
        ),
    )
    .returning(Activity.seq)
)


async def _write_pending(session: AsyncSession) -> None:
    """Hash and insert the queued entries; the commit right after releases the locks.

    The log lock serializes every writer, so it is held for the inserts and the commit alone:
    each chain's head is read before it, under a lock of that chain only (taken in one order,
    chains sorted, so two writers never wait on each other in a cycle)."""
    await session.flush()  # the transaction's other writes, before any lock is held
    entries = session.info.get(NEW_ACTIVITIES, [])
    postgres = session.bind.dialect.name == "postgresql"
    connection = await session.connection()
    heads: dict[str, str | None] = {}
    read_head = _LOCKED_HEAD if postgres else _HEAD
    for chain in sorted({entry.chain for entry in entries}):
        heads[chain] = (await connection.execute(read_head, {"chain": chain})).scalar()
    insert_entry = _INSERT_UNDER_LOG_LOCK if postgres else _INSERT
    for entry in entries:
        entry.prev_hash = heads[entry.chain]
        entry.hash = heads[entry.chain] = entry_hash(entry.prev_hash, entry)
        values = {column.name: getattr(entry, column.name) for column in _COLUMNS}
        entry.seq = (await connection.execute(insert_entry, values)).scalar_one()


async def verify_chain(session: AsyncSession, chain: str) -> bool:
    """True if every entry of the chain hashes to what is stored."""
    prev: str | None = None
    for entry in await session.scalars(select(Activity).where(Activity.chain == chain).order_by(Activity.seq)):
        if entry.prev_hash != prev or entry_hash(prev, entry) != entry.hash:
            return False
        prev = entry.hash
    return True
