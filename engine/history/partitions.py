"""The log's partitions on PostgreSQL: made ahead of need, and whole old ones archived.

``activity`` is partitioned by range of ``seq`` (migration 0027; docs/scaling.md says why not by
month): ``activity_part_NNNN`` in order, and ``activity_default`` for a seq no partition holds
yet (empty while partitions are made ahead in time; what it caught moves into the next ones
made). ``make_ahead`` keeps two partitions ready above the one being written, each sized to
hold about a month of entries at the rate the log grows now, so archiving ``--before`` a month
takes whole months. A partition is archivable when
it is full (a seq above it was handed out: every writer of its seqs has finished, since seqs are
drawn under the log lock held to the commit) and its newest entry is older than the month given;
archiving takes the oldest such partitions, in order, so what is left is always the newest part
of every chain. ``drop`` records, per chain, the last archived entry (``ArchivedChain``: what the
first entry left verifies against), then detaches and drops the partition, in one transaction.

SQLite keeps one table: ``partitions`` answers an empty list there.
"""

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from engine.clock import SYSTEM_CLOCK
from engine.history.checkpoints import sign_anchor
from models import Activity, ArchivedChain

__all__ = [
    "DROP_LOCK_TIMEOUT",
    "Head",
    "Partition",
    "anchors_of",
    "drop",
    "entries_of",
    "make_ahead",
    "partitions",
    "wholly_before",
]

AHEAD = 2  # partitions kept ready above the one being written
DROP_LOCK_TIMEOUT = 5  # seconds the detach of an archived partition waits for the table's lock
MIN_SIZE, MAX_SIZE, FIRST_SIZE = 10_000, 100_000_000, 100_000
_MONTH = timedelta(days=31)
_AHEAD_LOCK_KEY = 7_305_224_419  # one process makes partitions at a time
_NAME = re.compile(r"activity_part_(\d+)")
_BOUNDS = re.compile(r"FOR VALUES FROM \('?(\w+)'?\) TO \('?(\w+)'?\)")
_PARTITIONS = text(
    "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
    "WHERE i.inhparent = 'activity'::regclass"
)
_NAMES = ", ".join(f'"{column.name}"' for column in Activity.__table__.c)
_LAST_DRAWN = text("SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM activity_seq_seq")


@dataclass(frozen=True, slots=True)
class Partition:
    """A range partition: seqs from ``lower`` (None: no bound below) up to, not including, ``upper``."""

    name: str
    lower: int | None
    upper: int

    @property
    def first(self) -> int:
        """The lowest seq it may hold (seqs start at 1)."""
        return max(self.lower or 1, 1)


@dataclass(slots=True)
class Head:
    """The last entry of one chain within an archived part, and how many of its entries it holds."""

    seq: int
    hash: str
    at: datetime
    project_id: str | None
    subproject_id: str | None
    workflow_item_id: str | None
    entries: int


def _bound(value: str) -> int | None:
    return None if value in ("MINVALUE", "MAXVALUE") else int(value)


async def partitions(session: AsyncSession) -> list[Partition]:
    """The range partitions, lowest first ([] on SQLite, or if ``activity`` is not partitioned)."""
    if session.bind.dialect.name != "postgresql":
        return []
    found = []
    for name, bound in await session.execute(_PARTITIONS):
        matched = _BOUNDS.fullmatch(bound)
        if matched is not None and _bound(matched.group(2)) is not None:
            found.append(Partition(name, _bound(matched.group(1)), int(matched.group(2))))
    return sorted(found, key=lambda p: p.upper)


async def last_drawn(session: AsyncSession) -> int:
    """The last seq handed out (0: none yet)."""
    return int(await session.scalar(_LAST_DRAWN))


async def make_ahead(session: AsyncSession, *, size: int | None = None, ahead: int = AHEAD) -> list[str]:
    """Make partitions until ``ahead`` of them start above the last seq handed out; the names
    made. ``size``: entries each holds (default: about a month at the current partition's rate).
    Waits at most two seconds for the table's lock (a long read holds it), then leaves it to the
    next call. Another process doing it now: nothing."""
    if session.bind.dialect.name != "postgresql":
        return []
    if not await session.scalar(select(func.pg_try_advisory_xact_lock(_AHEAD_LOCK_KEY))):
        return []
    await session.execute(text("SET LOCAL lock_timeout = '2s'"))
    ranges = await partitions(session)
    if not ranges:
        return []
    drawn = await last_drawn(session)
    made = []
    number = max((int(m.group(1)) for p in ranges if (m := _NAME.fullmatch(p.name))), default=0)
    top = ranges[-1].upper
    waiting = sum(p.first > drawn for p in ranges)
    if waiting < ahead:
        # Writers wait from here until the new partitions exist, so none lands in the default
        # partition meanwhile; lock_timeout bounds the wait. The lock is the CREATE's own (ACCESS
        # EXCLUSIVE), taken before anything else on the table: a weaker one first, raised by the
        # CREATE, deadlocks with a writer that read the log earlier in its transaction (it holds
        # a read lock the CREATE waits for, and waits for its insert behind the weaker lock).
        await session.execute(text("LOCK TABLE activity IN ACCESS EXCLUSIVE MODE"))
        # Entries the default partition caught (no partition was ready in time) move into the
        # partitions made now, so that every entry is in a range partition that archiving can take.
        stray = await session.scalar(text("SELECT max(seq) FROM activity_default"))
        if stray is not None:
            await session.execute(text("ALTER TABLE activity DETACH PARTITION activity_default"))
        each = max(1, size or await _monthly_size(session, ranges, drawn))
        lower, reach = top, top if stray is None else stray + 1  # what the new ones must cover
        while waiting < ahead or lower < reach:
            number += 1
            name = f"activity_part_{number:04d}"
            upper = max(lower + each, reach)
            await session.execute(
                text(f"CREATE TABLE {name} PARTITION OF activity FOR VALUES FROM ({lower}) TO ({upper})")
            )
            await session.execute(text(f"ALTER TABLE {name} ADD CONSTRAINT {name}_id_key UNIQUE (id)"))
            made.append(name)
            waiting += lower > drawn
            lower = upper
        if stray is not None:
            await session.execute(text(f"INSERT INTO activity ({_NAMES}) SELECT {_NAMES} FROM activity_default"))
            await session.execute(text("TRUNCATE activity_default"))
            await session.execute(text("ALTER TABLE activity ATTACH PARTITION activity_default DEFAULT"))
    return made


async def _monthly_size(session: AsyncSession, ranges: list[Partition], drawn: int) -> int:
    """About a month of entries, at the rate of the partition being written (from its first
    entry to now), within MIN_SIZE and MAX_SIZE; the newest partition's size while that
    partition is less than a day old."""
    current = next((p for p in ranges if p.first <= drawn < p.upper), ranges[-1])
    newest = ranges[-1]
    fallback = newest.upper - newest.first if newest.lower is not None else FIRST_SIZE
    first = (
        await session.execute(
            select(Activity.seq, Activity.at).where(Activity.seq >= current.first).order_by(Activity.seq).limit(1)
        )
    ).first()
    if first is None:
        return fallback
    span = SYSTEM_CLOCK.now() - first.at
    if span < timedelta(days=1):
        return fallback
    per_month = (drawn - first.seq + 1) * (_MONTH / span)
    return int(min(MAX_SIZE, max(MIN_SIZE, per_month)))


async def wholly_before(session: AsyncSession, before: datetime) -> list[tuple[Partition, datetime | None]]:
    """The oldest partitions, in order, that are full and whose entries were all written before
    ``before``, each with its newest entry's time (None: it holds none). Reads each candidate's
    times once (a scan of that partition)."""
    drawn = await last_drawn(session)
    found = []
    for partition in await partitions(session):
        if drawn < partition.upper:
            break  # still being written, or ahead
        newest = await session.scalar(
            select(func.max(Activity.at)).where(*_within(partition))  # pruned to the partition
        )
        if newest is not None and newest >= before:
            break
        found.append((partition, newest))
    return found


def _within(partition: Partition) -> list[Any]:
    conditions = [Activity.seq < partition.upper]
    if partition.lower is not None:
        conditions.append(Activity.seq >= partition.lower)
    return conditions


_ENTRY_COLUMNS = list(Activity.__table__.c)


async def entries_of(session: AsyncSession, partition: Partition, *, after: int, limit: int) -> list[Any]:
    """The partition's entries after seq ``after``, in seq order, at most ``limit``."""
    connection = await session.connection()
    query = select(*_ENTRY_COLUMNS).where(*_within(partition), Activity.seq > after).order_by(Activity.seq)
    return list((await connection.execute(query.limit(limit))).all())


async def anchors_of(session: AsyncSession, chains: Any = None) -> dict[str, Any]:
    """The archived end of each chain (``ArchivedChain`` rows) among ``chains``, or of every one."""
    query = select(*ArchivedChain.__table__.c)
    if chains is not None:
        names = sorted(chains)
        if not names:
            return {}
        query = query.where(ArchivedChain.chain.in_(names))
    connection = await session.connection()
    return {row.chain: row for row in await connection.execute(query)}


async def drop(session: AsyncSession, partition: Partition, heads: dict[str, Head], *, secret_key: str | None) -> None:
    """Record where each chain's archived part now ends, signed with ``secret_key`` (None:
    unsigned, which `verify-history` with a key reports), then detach and drop the partition
    (PostgreSQL holds the log's lock for the detach alone: an instant; writers wait that long)."""
    now = SYSTEM_CLOCK.now()
    held = await anchors_of(session, heads)
    rows = []
    for chain, head in heads.items():
        entries = head.entries + (held[chain].entries if chain in held else 0)
        signed = {"chain": chain, "seq": head.seq, "hash": head.hash, "at": head.at, "entries": entries}
        rows.append(
            {
                **signed,
                "project_id": head.project_id,
                "subproject_id": head.subproject_id,
                "workflow_item_id": head.workflow_item_id,
                "archived_at": now,
                "signature": sign_anchor(secret_key, **signed) if secret_key else None,
            }
        )
    table = ArchivedChain.__table__
    for start in range(0, len(rows), 1_000):
        upsert = pg_insert(table).values(rows[start : start + 1_000])
        excluded = upsert.excluded
        await session.execute(
            upsert.on_conflict_do_update(
                index_elements=[table.c.chain],
                set_={name: excluded[name] for name in ("seq", "hash", "at", "entries", "archived_at", "signature")},
            )
        )
    # The detach waits for every read of the log to end and holds up new ones while it waits:
    # not longer than this (the caller says so and tries again later).
    await session.execute(text(f"SET LOCAL lock_timeout = '{DROP_LOCK_TIMEOUT}s'"))
    await session.execute(text(f"ALTER TABLE activity DETACH PARTITION {partition.name}"))
    await session.execute(text(f"DROP TABLE {partition.name}"))
