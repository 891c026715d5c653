"""Appending to the activity log.

Entries are written at the very end of their transaction, under a lock held until commit
(PostgreSQL: a transaction-scoped advisory lock; SQLite: its single writer). So ``seq`` order
is commit order: a live reader that reads ``seq > last`` never skips an entry that commits
late. The lock covers only the insert and the commit, not the work before them.

Each entry extends the hash chain of the resource it is about (``chain``): its hash covers every
column of the entry, ``seq`` and the previous entry's hash included, so an edited or deleted entry
breaks every hash after it. ``engine/history.py`` verifies the chains and signs checkpoints of
their heads, which is what makes a truncation or a consistent rewrite show.
"""

import hashlib
import json
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from sqlalchemy import BigInteger, Text, bindparam, cast, func, insert, literal_column, select, text
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


def content_digest(prev_hash: str | None, entry: Any) -> str:
    """SHA-256 over every column of an entry but ``seq`` (and its own hash): the part of the
    hash that is known before the insert hands out ``seq``."""
    payload = json.dumps(
        [
            prev_hash,
            entry.id,
            entry.kind,
            entry.chain,
            entry.project_id,
            entry.subproject_id,
            entry.workflow_item_id,
            entry.case_id,
            entry.action,
            entry.actor_id,
            entry.at.isoformat(),
            entry.comment,
            entry.data,
        ],
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def seal(seq: int, digest: str) -> str:
    """The entry's hash: its ``seq`` bound to its content digest. PostgreSQL computes the same
    thing in the insert (``_INSERT_UNDER_LOG_LOCK``), where ``seq`` is handed out."""
    return hashlib.sha256(f"{seq}:{digest}".encode()).hexdigest()


def entry_hash(prev_hash: str | None, entry: Any) -> str:
    """The hash an entry (with its ``seq``) must carry, after ``prev_hash``."""
    return seal(entry.seq, content_digest(prev_hash, entry))


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
# SQLite: the first chain's head together with the last seq handed out (AUTOINCREMENT keeps it in
# sqlite_sequence, so a seq is never reused even after the newest rows are deleted). Under the
# single writer nothing can take a seq between this read and the inserts.
_HEAD_AND_LAST_SEQ = select(
    _HEAD.scalar_subquery(),
    select(text("seq")).select_from(text("sqlite_sequence")).where(text("name = 'activity'")).scalar_subquery(),
)
# PostgreSQL: the chain's advisory lock (class 730522 with hashtext(chain)), then its head, in
# one round trip (migration 0004: the function's read runs after its lock, on a fresh snapshot).
_LOCKED_HEAD = select(func.caseway_chain_head(bindparam("chain")))
_COLUMNS = [column for column in Activity.__table__.c if column.name not in ("seq", "hash")]
_INSERT = insert(Activity)
# PostgreSQL: the log lock taken by the insert itself (a function in FROM runs before the row is
# built), then the next seq, then the hash that binds it to the entry's content digest: the seq is
# known only under the lock, and computing the hash there costs no round trip. The seq is read
# twice from one subquery (the column and the hash): PostgreSQL never inlines a subquery whose
# output calls a volatile function such as nextval, so both read the one value it drew
# (test_recording_entries_costs_one_head_read_and_one_insert_each verifies such a chain).
_NEXT_SEQ = (
    select(literal_column("nextval('activity_seq_seq')", BigInteger).label("seq"))
    .select_from(func.pg_advisory_xact_lock(_LOG_LOCK_KEY).alias("log_lock"))
    .subquery("next_seq")
)
_SEALED = func.encode(
    func.sha256(func.convert_to(cast(_NEXT_SEQ.c.seq, Text) + ":" + bindparam("digest", type_=Text), "UTF8")), "hex"
)
_INSERT_UNDER_LOG_LOCK = (
    insert(Activity)
    .from_select(
        ["seq", *[column.name for column in _COLUMNS], "hash"],
        select(
            _NEXT_SEQ.c.seq, *[bindparam(column.name, type_=column.type) for column in _COLUMNS], _SEALED
        ).select_from(_NEXT_SEQ),
    )
    .returning(Activity.seq, Activity.hash)
)


async def _write_pending(session: AsyncSession) -> None:
    """Hash and insert the queued entries; the commit right after releases the locks.

    The log lock serializes every writer, so it is held for the inserts and the commit alone:
    each chain's head is read before it, under a lock of that chain only (taken in one order,
    chains sorted, so two writers never wait on each other in a cycle). Knowing ``seq`` before
    hashing costs no statement: PostgreSQL seals the hash in the insert that takes the seq;
    SQLite reads the last seq with the first head."""
    await session.flush()  # the transaction's other writes, before any lock is held
    entries = session.info.get(NEW_ACTIVITIES, [])
    postgres = session.bind.dialect.name == "postgresql"
    connection = await session.connection()
    heads: dict[str, str | None] = {}
    last_seq = 0
    for chain in sorted({entry.chain for entry in entries}):
        if postgres:
            heads[chain] = (await connection.execute(_LOCKED_HEAD, {"chain": chain})).scalar()
        elif not heads:
            heads[chain], last = (await connection.execute(_HEAD_AND_LAST_SEQ, {"chain": chain})).one()
            last_seq = last or 0
        else:
            heads[chain] = (await connection.execute(_HEAD, {"chain": chain})).scalar()
    for entry in entries:
        entry.prev_hash = heads[entry.chain]
        values = {column.name: getattr(entry, column.name) for column in _COLUMNS}
        digest = content_digest(entry.prev_hash, entry)
        if postgres:
            inserted = await connection.execute(_INSERT_UNDER_LOG_LOCK, {**values, "digest": digest})
            entry.seq, entry.hash = inserted.one()
        else:
            last_seq += 1
            entry.seq, entry.hash = last_seq, seal(last_seq, digest)
            await connection.execute(_INSERT, {**values, "seq": entry.seq, "hash": entry.hash})
        heads[entry.chain] = entry.hash
