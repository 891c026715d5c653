"""Appending to the activity log.

Entries are written at the very end of their transaction, under a lock held until commit
(PostgreSQL: a transaction-scoped advisory lock; SQLite: its single writer). So ``seq`` order
is commit order: a live reader that reads ``seq > last`` never skips an entry that commits
late. The lock covers only the insert and the commit, not the work before them.

Each entry extends the hash chain of the resource it is about (``chain``): its hash covers every
column of the entry, ``seq`` and the previous entry's hash included, so an edited or deleted entry
breaks every hash after it. ``engine/history/history.py`` verifies the chains and signs checkpoints of
their heads, which is what makes a truncation or a consistent rewrite show.
"""

import hashlib
import itertools
import json
from collections.abc import Iterator
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from sqlalchemy import BigInteger, Text, bindparam, func, insert, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from engine.clock import SYSTEM_CLOCK
from engine.history import folded_writes
from engine.history.entry_kinds import ENTRY_KINDS
from engine.history.folded_writes import Folded
from models import Activity, Project, Subproject, WorkflowItem, kind_of, new_id, unit_of_work

# The tables of the resources that hold grants and history, by the kind their id names (here, below
# both engine/people/permissions.py and engine/history/history.py, which read them).
RESOURCE_MODELS = {"Project": Project, "Subproject": Subproject, "WorkflowItem": WorkflowItem}


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
    hash that is known before the insert hands out ``seq``. The JSON list of ``prev_hash`` and
    the rest (``content_tail``): PostgreSQL builds the same bytes in the insert that reads the head."""
    payload = "[" + json.dumps(prev_hash) + "," + content_tail(entry)
    return hashlib.sha256(payload.encode()).hexdigest()


def content_tail(entry: Any) -> str:
    """The digest's JSON after its first element (the previous hash): every column of the
    entry but ``seq``, ``prev_hash`` and ``hash``, ASCII only (json's default), ending with ``]``."""
    payload = json.dumps(
        [
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
            # Only when set, so the entries written before the column existed keep their hashes.
            *([entry.on_behalf_of] if getattr(entry, "on_behalf_of", None) else []),
            # The token an entry came through is part of what it records (who acted, and with which
            # credential), so rewriting it breaks the chain like any other column. Only when set,
            # for the same reason; as an object, so it can never pass for an ``on_behalf_of``.
            *([{"via": entry.via}] if getattr(entry, "via", None) else []),
            *([{"title": entry.title}] if getattr(entry, "title", None) else []),
        ],
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return payload[1:]


def seal(seq: int, digest: str) -> str:
    """The entry's hash: its ``seq`` bound to its content digest. PostgreSQL computes the same
    thing in the insert of a lone entry (``_ONE_ENTRY_SQL``), where ``seq`` is handed out."""
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
    title: str | None = None,
) -> LogEntry:
    """Queue an entry about ``about`` (a project, subproject or workflow item); it is hashed and
    inserted just before the transaction commits. ``kind`` is one of ``ENTRY_KINDS``."""
    assert kind in ENTRY_KINDS, f"{kind!r} is not in engine/history/entry_kinds.py"
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
        at=at or SYSTEM_CLOCK.now(),
        prev_hash=None,
        hash="",
        on_behalf_of=None,  # a deputy's action says whom for (engine.cases.execute)
        via=None,
        title=title,
    )
    work = unit_of_work(session)
    if work.via is not None and work.via[0] == actor_id:
        entry.via = work.via[1]
    if not work.entries:
        work.before_commit.append(_write_pending)
    work.entries.append(entry)  # published to live subscribers once the transaction commits
    return entry


def acting_through(session: AsyncSession, actor: Any) -> None:
    """The transaction acts for ``actor`` (an ``engine.people.actors.Actor``): if they came with an
    API token, the entries they write in it name it (``via``). Called once, by whoever opens the
    transaction for a request (resolvers/mutations.py)."""
    if actor is not None and actor.via is not None:
        unit_of_work(session).via = (actor.user_id, actor.via)


def queued(session: AsyncSession) -> int:
    """How many entries this transaction has queued: a mark for ``forget``."""
    return len(unit_of_work(session).entries)


def forget(session: AsyncSession, mark: int) -> None:
    """Drop the entries queued after ``mark``: a savepoint rolled back the writes they log
    (engine/migration/migration.py). With none left, nothing is written at commit, and the next entry
    queued registers the writer again, once."""
    work = unit_of_work(session)
    del work.entries[mark:]
    if not work.entries and _write_pending in work.before_commit:
        work.before_commit.remove(_write_pending)


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

# A lone entry: one statement reads its chain's head, draws the next seq and seals the hash from
# the head, the seq and the rest of the content digest (``content_tail``, built here with the
# head around it): what took a round trip for the head and one for the insert. PostgreSQL: the
# function in FROM takes the chain's lock and reads its head, then the log lock is taken (its
# key made to depend on the head, so it runs after), then nextval runs; the seq is read twice
# from one subquery (the column and the hash), and PostgreSQL never inlines a subquery whose
# output calls a volatile function such as nextval, so both read the one value it drew. The
# transaction's pending row writes ride along as CTEs (engine/history/folded_writes.py). SQLite: the
# head and the last seq handed out, as ``_HEAD_AND_LAST_SEQ`` reads them, under its single
# writer; ``caseway_sha256`` is models/db.py's. tests/engine/test_history.py verifies such chains.
_ONE_ENTRY_COLUMNS = [column for column in _COLUMNS if column.name != "prev_hash"]
_SHA256 = {"postgresql": "encode(sha256(convert_to({}, 'UTF8')), 'hex')", "sqlite": "caseway_sha256({})"}
# {chain}: the chain's key, made to depend on the folded writes' count when there are some, so
# that the lock is taken after them (``Folded.written``).
_NEXT_SEQ_AND_HEAD = {
    "postgresql": (
        "(SELECT chain_head.head, nextval('activity_seq_seq') AS seq "
        "FROM caseway_chain_head({chain}) AS chain_head(head) "
        "CROSS JOIN LATERAL pg_advisory_xact_lock("
        "CAST(:log_key AS bigint) + 0 * coalesce(length(chain_head.head), 0)) AS log_lock)"
    ),
    "sqlite": (
        "(SELECT (SELECT hash FROM activity WHERE chain = {chain} ORDER BY seq DESC LIMIT 1) AS head, "
        "coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'activity'), 0) + 1 AS seq)"
    ),
}
_AFTER_WRITES = "CASE WHEN written.n >= 0 THEN CAST(:chain AS TEXT) END"


def _one_entry_sql(dialect: str, folded: Folded | None) -> str:
    sha256 = _SHA256[dialect]
    digest = sha256.format("'[' || coalesce('\"' || next_seq.head || '\"', 'null') || ',' || :tail")
    sealed = sha256.format("CAST(next_seq.seq AS TEXT) || ':' || " + digest)
    columns = ", ".join(column.name for column in _ONE_ENTRY_COLUMNS)
    values = ", ".join(f":{column.name}" for column in _ONE_ENTRY_COLUMNS)
    source = _NEXT_SEQ_AND_HEAD[dialect].format(chain=":chain" if folded is None else _AFTER_WRITES)
    if folded is not None:
        source = f"{folded.written()} CROSS JOIN LATERAL {source}"
    sql = (
        f"INSERT INTO activity (seq, prev_hash, hash, {columns}) "
        f"SELECT next_seq.seq, next_seq.head, {sealed}, {values} "
        f"FROM {source} AS next_seq RETURNING seq, prev_hash, hash"
    )
    if folded is not None:  # the count again, from the CTEs' rows (RETURNING sees no other FROM item)
        sql = folded.with_clause() + sql + f", (SELECT n FROM {folded.written()})"
    return sql


# The statement per database and shape of folded writes (() for none), built once each.
_ONE_ENTRY_INSERTS: dict[Any, Any] = {}


def _one_entry_insert(dialect: str, folded: Folded | None) -> Any:
    shape = (dialect, () if folded is None else tuple(folded.shape))
    statement = _ONE_ENTRY_INSERTS.get(shape)
    if statement is None:
        binds = [bindparam(column.name, type_=column.type) for column in _ONE_ENTRY_COLUMNS]
        binds.append(bindparam("tail", type_=Text))
        if dialect == "postgresql":
            binds.append(bindparam("log_key", type_=BigInteger))
        if folded is not None:
            binds += folded.binds
        statement = _ONE_ENTRY_INSERTS[shape] = text(_one_entry_sql(dialect, folded)).bindparams(*binds)
    return statement


# PostgreSQL: several chains' locks and heads in one round trip, in the chains' sorted order: the
# function is volatile, so PostgreSQL calls it row by row after the sort (migrating 500 cases read
# 500 heads one round trip each, most of the batch's time).
_LOCKED_HEADS = text("SELECT c, caseway_chain_head(c) FROM unnest(CAST(:chains AS text[])) AS t(c) ORDER BY c")
# PostgreSQL, a transaction with several entries: the last chain's lock and head, then the log
# lock, then one seq per entry, in one round trip; the entries are then hashed here and inserted
# together (one round trip however many). The order of the locks is forced by the data: the log
# lock's key and the series' length depend on the head, so neither can run before the chain's
# lock is held, and nextval, in the output, runs on the joined rows, after both locks.
_LOCKED_HEAD_AND_SEQS_SQL = (
    "SELECT chain_head.head, nextval('activity_seq_seq') AS seq{counted} "
    "FROM {written}caseway_chain_head({chain}) AS chain_head(head) "
    "CROSS JOIN LATERAL pg_advisory_xact_lock("
    "CAST(:log_key AS bigint) + 0 * coalesce(length(chain_head.head), 0)) AS log_lock "
    "CROSS JOIN LATERAL generate_series(1, CAST(:entries AS integer) + 0 * coalesce(length(chain_head.head), 0)) AS e"
)
_LOCKED_HEAD_AND_SEQS = text(_LOCKED_HEAD_AND_SEQS_SQL.format(counted="", written="", chain=":chain"))
# The same with the transaction's pending row writes, written first, per shape of them: the
# entries of one chain (a timer that ends its case logs the action and the completion).
_HEADS_WITH_WRITES: dict[Any, Any] = {}


def _locked_head_and_seqs(folded: Folded | None) -> Any:
    if folded is None:
        return _LOCKED_HEAD_AND_SEQS
    shape = tuple(folded.shape)
    statement = _HEADS_WITH_WRITES.get(shape)
    if statement is None:
        sql = folded.with_clause() + _LOCKED_HEAD_AND_SEQS_SQL.format(
            counted=", written.n", written=f"{folded.written()} CROSS JOIN LATERAL ", chain=_AFTER_WRITES
        )
        statement = _HEADS_WITH_WRITES[shape] = text(sql).bindparams(bindparam("chain", type_=Text), *folded.binds)
    return statement


async def _write_pending(session: AsyncSession) -> None:
    """Hash and insert the queued entries; the commit right after releases the locks.

    The log lock serializes every writer, so it is held for the inserts and the commit alone:
    each chain's head is read before it, under a lock of that chain only (taken in one order,
    chains sorted, so two writers never wait on each other in a cycle), and the transaction's
    other writes are done before either lock. Knowing ``seq`` before hashing costs no statement:
    a lone entry's insert reads its chain's head, draws its seq and seals its hash; several
    entries draw their seqs with the last chain's head (SQLite: the last seq with the first
    head) and are inserted in one statement. On PostgreSQL the pending row writes of a
    transaction whose entries are of one chain go in the statement that reads its head
    (engine/history/folded_writes.py); the ORM flushes them otherwise."""
    entries = unit_of_work(session).entries
    dialect = session.bind.dialect.name
    postgres, alone = dialect == "postgresql", len(entries) == 1
    folded = None
    if postgres and entries and len({entry.chain for entry in entries}) == 1:
        folded = folded_writes.take(session.sync_session, _ONE_ENTRY_INSERTS if alone else _HEADS_WITH_WRITES)
    await session.flush()  # the transaction's other writes (those not folded), before any lock is held
    if not entries:  # all queued in savepoints that rolled back (engine/migration/migration.py)
        return
    connection = await session.connection()
    if alone:
        entry = entries[0]
        values = {column.name: getattr(entry, column.name) for column in _ONE_ENTRY_COLUMNS}
        params = {**values, "tail": content_tail(entry)}
        if postgres:
            params["log_key"] = _LOG_LOCK_KEY
        if folded is not None:
            params.update(folded.params)
        row = (await connection.execute(_one_entry_insert(dialect, folded), params)).one()
        entry.seq, entry.prev_hash, entry.hash = row[0], row[1], row[2]
        if folded is not None:
            folded.check(row[3])
        return
    heads, seqs = await _heads_and_seqs(connection, entries, postgres=postgres, folded=folded)
    rows = []
    for entry in entries:
        entry.prev_hash = heads[entry.chain]
        values = {column.name: getattr(entry, column.name) for column in _COLUMNS}
        entry.seq = next(seqs)
        entry.hash = seal(entry.seq, content_digest(entry.prev_hash, entry))
        rows.append({**values, "seq": entry.seq, "hash": entry.hash})
        heads[entry.chain] = entry.hash
    await connection.execute(_INSERT, rows)


async def _heads_and_seqs(
    connection: Any, entries: list[LogEntry], *, postgres: bool, folded: Folded | None
) -> tuple[dict[str, str | None], Iterator[int]]:
    """Each chain's head, under its lock (chains in sorted order), and the seqs the entries take
    in order (PostgreSQL: drawn with the last chain's head, after the log lock, and after the
    ``folded`` writes of a transaction whose entries are of that chain alone)."""
    heads: dict[str, str | None] = {}
    chains = sorted({entry.chain for entry in entries})
    if not postgres:
        heads[chains[0]], last = (await connection.execute(_HEAD_AND_LAST_SEQ, {"chain": chains[0]})).one()
        for chain in chains[1:]:
            heads[chain] = (await connection.execute(_HEAD, {"chain": chain})).scalar()
        return heads, itertools.count((last or 0) + 1)
    if len(chains) > 2:  # many chains (a migration's batch): their heads in one round trip
        heads.update({c: h for c, h in await connection.execute(_LOCKED_HEADS, {"chains": chains[:-1]})})
    else:
        for chain in chains[:-1]:
            heads[chain] = (await connection.execute(_LOCKED_HEAD, {"chain": chain})).scalar()
    params = {"chain": chains[-1], "log_key": _LOG_LOCK_KEY, "entries": len(entries)}
    drawn = (
        await connection.execute(_locked_head_and_seqs(folded), {**params, **(folded.params if folded else {})})
    ).all()
    if folded is not None:
        folded.check(drawn[0][2])
    heads[chains[-1]] = drawn[0][0]
    return heads, iter(sorted(row[1] for row in drawn))
