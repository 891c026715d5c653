"""Signed checkpoints of the history chains, kept as a signed sequence of their own.

A checkpoint signs the head of one chain (engine/history/history.py checks a chain against its newest).
Signed alone, a checkpoint can still be deleted together with the entries it covers, or an
older one put back after the chain was cut to it: the newest checkpoint left then vouches for
the shortened chain (issue 40, finding 2). So checkpoints are appended, never changed, and
numbered 1, 2, 3, … (``counter``), each naming the one before it (its counter and signature)
inside its own signature:

- a checkpoint deleted from the middle leaves a gap or a broken link (``check_sequence``,
  run by `caseway verify-history --all`);
- the newest ones deleted, or the whole table put back to an earlier state, leave a sequence
  that is whole but shorter than a copy kept outside the database (`caseway checkpoint-history
  --export`); ``compare_with_copy`` reports every checkpoint of the copy the database lacks.

The signature is HMAC-SHA256 under the server's secret key, which never enters the database.
"""

import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, case, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.clock import SYSTEM_CLOCK
from models import Activity, ArchivedChain, HistoryCheckpoint

__all__ = [
    "CheckpointPass",
    "Record",
    "anchor_signature_holds",
    "check_sequence",
    "checkpoint_history",
    "compare_with_copy",
    "newest_of",
    "records_after",
    "sign",
    "sign_anchor",
    "signature_holds",
]

_CHUNK = 500  # chains or counters named per statement
_PAGE = 2_000  # checkpoints read per statement
_PASS_LIMIT = 5_000  # entries one checkpoint pass looks at
_PASS_LOCK_KEY = 7_305_224_418  # PostgreSQL: one checkpoint pass at a time across processes
MAX_PROBLEMS = 20  # sentences one check reports, then how many more there were


@dataclass(frozen=True, slots=True)
class Record:
    """One checkpoint as it is stored and exported (one JSON line each)."""

    counter: int
    chain: str
    seq: int
    hash: str
    signed_at: datetime
    prev_counter: int | None
    prev_signature: str | None
    signature: str

    @classmethod
    def of(cls, row: Any) -> "Record":
        return cls(
            row.counter,
            row.chain,
            row.seq,
            row.hash,
            row.signed_at,
            row.prev_counter,
            row.prev_signature,
            row.signature,
        )

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "signed_at": self.signed_at.isoformat()}, sort_keys=True)

    @classmethod
    def from_json(cls, line: str) -> "Record":
        """Raises ValueError (or KeyError, TypeError) for a line that is not a checkpoint."""
        data = json.loads(line)
        return cls(**{**data, "signed_at": datetime.fromisoformat(data["signed_at"])})


def sign(
    secret_key: str,
    *,
    counter: int,
    chain: str,
    seq: int,
    hash: str,
    signed_at: datetime,
    prev_counter: int | None,
    prev_signature: str | None,
) -> str:
    """HMAC-SHA256 of a checkpoint and the one before it: only a holder of the key can make
    one that verifies, or change which checkpoint comes before it."""
    message = (
        f"caseway-history-checkpoint-2\n{counter}\n{chain}\n{seq}\n{hash}\n{signed_at.isoformat()}\n"
        f"{prev_counter or ''}\n{prev_signature or ''}"
    )
    return hmac.new(secret_key.encode(), message.encode(), hashlib.sha256).hexdigest()


def signature_holds(secret_key: str, row: Any) -> bool:
    expected = sign(
        secret_key,
        counter=row.counter,
        chain=row.chain,
        seq=row.seq,
        hash=row.hash,
        signed_at=row.signed_at,
        prev_counter=row.prev_counter,
        prev_signature=row.prev_signature,
    )
    return hmac.compare_digest(expected.encode(), str(row.signature).encode())


def sign_anchor(secret_key: str, *, chain: str, seq: int, hash: str, at: datetime, entries: int) -> str:
    """HMAC-SHA256 of where a chain's archived part ends (an ``ArchivedChain`` row): only a
    holder of the key can move the point the chain's live entries are checked from."""
    message = f"caseway-archived-chain-1\n{chain}\n{seq}\n{hash}\n{at.isoformat()}\n{entries}"
    return hmac.new(secret_key.encode(), message.encode(), hashlib.sha256).hexdigest()


def anchor_signature_holds(secret_key: str, row: Any) -> bool:
    """Whether an ``ArchivedChain`` row is signed, under this key, as it stands."""
    if not row.signature:
        return False
    expected = sign_anchor(secret_key, chain=row.chain, seq=row.seq, hash=row.hash, at=row.at, entries=row.entries)
    return hmac.compare_digest(expected.encode(), str(row.signature).encode())


_COLUMNS: list[Any] = list(HistoryCheckpoint.__table__.c)


async def newest_of(session: AsyncSession, chains: Iterable[str], *, anchors: bool = False) -> dict[str, Any]:
    """The newest checkpoint of each of ``chains``; with ``anchors``, each with the hash the log
    holds now for the entry it names (``anchor``, None if that entry is gone; an archived one's
    as archiving recorded it)."""
    connection = await session.connection()
    found: dict[str, Any] = {}
    names = sorted(chains)
    for start in range(0, len(names), _CHUNK):
        newest = (
            select(func.max(HistoryCheckpoint.counter))
            .where(HistoryCheckpoint.chain.in_(names[start : start + _CHUNK]))
            .group_by(HistoryCheckpoint.chain)
        )
        query = select(*_COLUMNS).where(HistoryCheckpoint.counter.in_(newest))
        if anchors:
            # An entry archived since (engine/history/partitions.py): the archived part's last
            # hash if it is that entry; one before it was checked when it was archived.
            archived = case(
                (ArchivedChain.seq == HistoryCheckpoint.seq, ArchivedChain.hash),
                (ArchivedChain.seq > HistoryCheckpoint.seq, HistoryCheckpoint.hash),
            )
            query = (
                query.add_columns(func.coalesce(Activity.hash, archived).label("anchor"))
                .outerjoin(
                    Activity, and_(Activity.chain == HistoryCheckpoint.chain, Activity.seq == HistoryCheckpoint.seq)
                )
                .outerjoin(ArchivedChain, ArchivedChain.chain == HistoryCheckpoint.chain)
            )
        found.update((row.chain, row) for row in await connection.execute(query))
    return found


@dataclass(frozen=True, slots=True)
class CheckpointPass:
    """What one pass did: chains signed, chains refused (their checkpoint no longer matches
    the log, so re-signing would bless the tampering), and how far it read."""

    through_seq: int
    signed: int
    refused: list[str]
    more: bool


async def checkpoint_history(
    session: AsyncSession, *, secret_key: str, since: int = 0, limit: int = _PASS_LIMIT, now: datetime | None = None
) -> CheckpointPass | None:
    """Sign the heads of the chains that gained entries after seq ``since`` (at most ``limit``
    entries are read; ``more`` says whether the pass should be run again at once), appending
    one checkpoint per chain to the sequence.

    A pass starts after the newest checkpoint's seq at the latest: every chain with an entry up
    to that seq was signed by the pass that made it (each pass signs heads no newer than the
    entries it read, and seq order is commit order). A chain whose checkpoint no longer matches
    the log is refused, not re-signed. Returns None without a key, or while another process's
    pass holds the lock (PostgreSQL; on SQLite the write lock orders passes)."""
    if not secret_key:
        return None
    if session.bind.dialect.name == "postgresql" and not await session.scalar(
        select(func.pg_try_advisory_xact_lock(_PASS_LOCK_KEY))
    ):
        return None
    connection = await session.connection()
    last = (await connection.execute(select(*_COLUMNS).order_by(HistoryCheckpoint.counter.desc()).limit(1))).first()
    newest_seq = await session.scalar(select(func.max(HistoryCheckpoint.seq)))
    since = max(since, newest_seq or 0)
    rows = (
        await connection.execute(
            select(Activity.seq, Activity.chain, Activity.hash)
            .where(Activity.seq > since)
            .order_by(Activity.seq)
            .limit(limit + 1)
        )
    ).all()
    more, rows = len(rows) > limit, rows[:limit]
    heads = {row.chain: row for row in rows}  # the newest entry of each chain that grew
    existing = await newest_of(session, heads, anchors=True)
    now = now or SYSTEM_CLOCK.now()
    counter, signature = (last.counter, last.signature) if last is not None else (0, None)
    values, refused = [], []
    for chain, head in sorted(heads.items(), key=lambda item: item[1].seq):
        old = existing.get(chain)
        if old is not None:
            if old.seq >= head.seq:
                continue
            if old.anchor != old.hash or not signature_holds(secret_key, old):
                refused.append(chain)
                continue
        record = {
            "counter": counter + 1,
            "chain": chain,
            "seq": head.seq,
            "hash": head.hash,
            "signed_at": now,
            "prev_counter": counter or None,
            "prev_signature": signature,
        }
        signature = sign(secret_key, **record)
        counter = record["counter"]
        values.append({**record, "signature": signature})
    if values:
        await session.execute(HistoryCheckpoint.__table__.insert(), values)
    return CheckpointPass(through_seq=rows[-1].seq if rows else since, signed=len(values), refused=refused, more=more)


async def records_after(session: AsyncSession, counter: int, *, limit: int = _PAGE) -> list[Record]:
    """The checkpoints after ``counter``, in order, at most ``limit``."""
    connection = await session.connection()
    rows = await connection.execute(
        select(*_COLUMNS).where(HistoryCheckpoint.counter > counter).order_by(HistoryCheckpoint.counter).limit(limit)
    )
    return [Record.of(row) for row in rows]


async def all_records(session: AsyncSession) -> AsyncIterator[Record]:
    """Every checkpoint of the database, in order, read in pages."""
    after = 0
    while page := await records_after(session, after):
        for record in page:
            yield record
        after = page[-1].counter


class SequenceCheck:
    """Walks checkpoints in counter order: each must follow the one before it (counter + 1,
    naming its signature) and carry a signature that verifies. ``where`` names what is walked
    in the sentences ("the database", "the copy at …")."""

    def __init__(self, secret_key: str, where: str) -> None:
        self.secret_key = secret_key
        self.where = where
        self.previous: Record | None = None
        self.count = 0
        self.problems: list[str] = []
        self.more_problems = 0

    def _report(self, sentence: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(sentence)
        else:
            self.more_problems += 1

    def feed(self, record: Record) -> None:
        expected = (self.previous.counter if self.previous is not None else 0) + 1
        if record.counter != expected:
            gap = (
                f"Checkpoint {expected} is"
                if record.counter == expected + 1
                else f"Checkpoints {expected} to {record.counter - 1} are"
            )
            self._report(
                f"{gap} missing from {self.where}: checkpoint {record.counter} comes after "
                f"{expected - 1 or 'none'}, so checkpoints were deleted."
            )
        elif self.previous is not None and (
            record.prev_counter != self.previous.counter or record.prev_signature != self.previous.signature
        ):
            self._report(
                f"Checkpoint {record.counter} in {self.where} does not name checkpoint {self.previous.counter} as the "
                "one before it: one of the two was replaced."
            )
        if not signature_holds(self.secret_key, record):
            self._report(
                f"The signature of checkpoint {record.counter} (history of {record.chain}) in {self.where} does not "
                "verify: it was forged or altered, or the secret key differs."
            )
        self.previous = record
        self.count += 1

    def sentences(self) -> list[str]:
        if not self.problems:
            newest = self.previous.counter if self.previous is not None else 0
            return [
                f"The checkpoints in {self.where} are intact: {self.count} of them, 1 to {newest}, each signed and "
                "naming the one before it."
            ]
        more = [f"And {self.more_problems} more problems like these."] if self.more_problems else []
        return [*self.problems, *more]


async def check_sequence(session: AsyncSession, *, secret_key: str) -> SequenceCheck:
    """Every checkpoint of the database, checked as a sequence."""
    check = SequenceCheck(secret_key, "the database")
    async for record in all_records(session):
        check.feed(record)
    return check


async def compare_with_copy(
    session: AsyncSession, copy: Iterable[Record], *, secret_key: str, where: str
) -> tuple[SequenceCheck, list[str]]:
    """The copy checked as a sequence, and a sentence for each of its checkpoints the database
    lacks or holds differently (deleted, rolled back, replaced); empty when it holds them all."""
    check = SequenceCheck(secret_key, where)
    problems: list[str] = []
    missing = 0
    batch: list[Record] = []

    async def compare(records: list[Record]) -> None:
        nonlocal missing
        connection = await session.connection()
        held = {
            row.counter: Record.of(row)
            for row in await connection.execute(
                select(*_COLUMNS).where(HistoryCheckpoint.counter.in_([r.counter for r in records]))
            )
        }
        for record in records:
            found = held.get(record.counter)
            if found == record:
                continue
            missing += 1
            if len(problems) >= MAX_PROBLEMS:
                continue
            what = f"Checkpoint {record.counter} (history of {record.chain} through seq {record.seq})"
            if found is None:
                problems.append(
                    f"{what} is in {where} but not in the database: it was deleted, or the database was rolled back."
                )
            else:
                problems.append(f"{what} differs between {where} and the database: it was replaced.")

    for record in copy:
        check.feed(record)
        batch.append(record)
        if len(batch) == _CHUNK:
            await compare(batch)
            batch = []
    if batch:
        await compare(batch)
    if missing > len(problems):
        problems.append(f"And {missing - len(problems)} more checkpoints of {where} that the database lacks.")
    return check, problems
