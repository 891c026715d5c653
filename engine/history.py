"""Verifying the activity hash chains, and signing checkpoints of their heads.

A hash chain alone shows an edited entry, but not a chain rewritten together with every hash
after the edit, nor its newest entries deleted: anyone who can write the table can recompute a
chain. So the server signs the head of each chain that grew (HMAC-SHA256 with its secret key,
which never enters the database) and keeps the newest signature per chain in
``history_checkpoint``. Up to its checkpoint a chain can be neither truncated nor rewritten
without the signature or the checkpointed hash giving it away; entries after it are covered by
the hash chain alone until the next pass.

``verify_history`` checks one resource's chain, ``verify_all`` every chain, and
``checkpoint_history`` signs one bounded pass of chain heads (the server runs it every
``checkpoint_interval``; ``caseway checkpoint-history`` runs it at once).
"""

import hashlib
import hmac
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import and_, func, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from engine.activity import entry_hash
from engine.errors import not_found
from engine.permissions import RESOURCE_MODELS
from models import Activity, HistoryCheckpoint, kind_of, utcnow
from models.db import insert_for

__all__ = [
    "Checkpoint",
    "CheckpointPass",
    "HistoryReport",
    "Problem",
    "checkpoint_history",
    "sign",
    "verify_all",
    "verify_history",
]

_PAGE = 2_000  # entries read per statement while verifying
_CHUNK = 500  # chains named per statement
_PASS_LIMIT = 5_000  # entries one checkpoint pass looks at
# PostgreSQL: one checkpoint pass at a time across processes; the others skip theirs.
_PASS_LOCK_KEY = 7_305_224_418


class Problem(StrEnum):
    """What is wrong with the first broken entry of a chain."""

    HASH_MISMATCH = "HASH_MISMATCH"
    PREV_HASH_MISMATCH = "PREV_HASH_MISMATCH"
    CHECKPOINTED_ENTRY_MISSING = "CHECKPOINTED_ENTRY_MISSING"
    CHECKPOINTED_ENTRY_CHANGED = "CHECKPOINTED_ENTRY_CHANGED"
    CHAIN_SHORTER_THAN_CHECKPOINT = "CHAIN_SHORTER_THAN_CHECKPOINT"
    BAD_CHECKPOINT_SIGNATURE = "BAD_CHECKPOINT_SIGNATURE"
    EMPTY_CHAIN = "EMPTY_CHAIN"


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The signed head a chain was checked against."""

    seq: int
    hash: str
    signed_at: datetime


@dataclass(frozen=True, slots=True)
class HistoryReport:
    """One chain's verdict. ``intact_through`` is the seq of the last entry that verified
    before the first broken one (None: none did); ``broken_at`` the seq where it broke."""

    resource_id: str
    intact: bool
    entries: int
    intact_through: int | None
    broken_at: int | None
    problem: Problem | None
    message: str
    checkpoint: Checkpoint | None
    signatures_checked: bool


@dataclass(frozen=True, slots=True)
class CheckpointPass:
    """What one pass did: chains signed, chains refused (their checkpoint no longer matches
    the log, so re-signing would bless the tampering), and how far it read."""

    through_seq: int
    signed: int
    refused: list[str]
    more: bool


def sign(secret_key: str, *, chain: str, seq: int, hash: str, signed_at: datetime) -> str:
    """HMAC-SHA256 of a chain head: only a holder of the key can make one that verifies."""
    message = f"caseway-history-checkpoint\n{chain}\n{seq}\n{hash}\n{signed_at.isoformat()}"
    return hmac.new(secret_key.encode(), message.encode(), hashlib.sha256).hexdigest()


def _signature_holds(secret_key: str, row: Any) -> bool:
    expected = sign(secret_key, chain=row.chain, seq=row.seq, hash=row.hash, signed_at=row.signed_at)
    return hmac.compare_digest(expected, row.signature)


_DETAILS = {
    Problem.HASH_MISMATCH: "the entry does not hash to its stored hash: its contents were changed",
    Problem.PREV_HASH_MISMATCH: (
        "the entry does not follow the one before it: an entry was deleted, inserted or rewritten"
    ),
    Problem.CHECKPOINTED_ENTRY_MISSING: "the entry its signed checkpoint names is missing",
    Problem.CHECKPOINTED_ENTRY_CHANGED: "the entry differs from its signed checkpoint: the chain was rewritten",
    Problem.CHAIN_SHORTER_THAN_CHECKPOINT: (
        "the chain ends before the entry its signed checkpoint names: its newest entries were deleted"
    ),
    Problem.BAD_CHECKPOINT_SIGNATURE: (
        "its checkpoint's signature does not verify: the checkpoint was forged or altered, or the secret key differs"
    ),
    Problem.EMPTY_CHAIN: "the resource has no history, though its creation is always recorded: its chain was deleted",
}


class _ChainCheck:
    """Walks one chain's entries in seq order and stops at the first broken one."""

    def __init__(self, chain: str, checkpoint: Any, secret_key: str) -> None:
        self.chain = chain
        self.secret_key = secret_key
        self.checkpoint = checkpoint if secret_key else None  # without the key it proves nothing
        self.bad_signature = self.checkpoint is not None and not _signature_holds(secret_key, self.checkpoint)
        self.anchor = None if self.bad_signature else self.checkpoint  # what the entries must reach
        self.prev: str | None = None
        self.last_seq: int | None = None
        self.entries = 0
        self.problem: Problem | None = None
        self.broken_at: int | None = None

    def _break(self, problem: Problem, seq: int) -> bool:
        self.problem, self.broken_at = problem, seq
        return False

    def feed(self, entry: Any) -> bool:
        """Check the next entry; False once the chain is broken (later entries say nothing more)."""
        anchor = self.anchor
        if anchor is not None and (self.last_seq or 0) < anchor.seq < entry.seq:
            return self._break(Problem.CHECKPOINTED_ENTRY_MISSING, anchor.seq)
        if entry.prev_hash != self.prev:
            return self._break(Problem.PREV_HASH_MISMATCH, entry.seq)
        if entry_hash(self.prev, entry) != entry.hash:
            return self._break(Problem.HASH_MISMATCH, entry.seq)
        if anchor is not None and entry.seq == anchor.seq and entry.hash != anchor.hash:
            return self._break(Problem.CHECKPOINTED_ENTRY_CHANGED, entry.seq)
        self.prev, self.last_seq = entry.hash, entry.seq
        self.entries += 1
        return True

    def report(self, *, resource_exists: bool = True) -> HistoryReport:
        if self.problem is None:
            if self.anchor is not None and (self.last_seq or 0) < self.anchor.seq:
                self._break(Problem.CHAIN_SHORTER_THAN_CHECKPOINT, self.anchor.seq)
            elif self.bad_signature:
                self._break(Problem.BAD_CHECKPOINT_SIGNATURE, self.checkpoint.seq)
            elif self.entries == 0 and resource_exists:
                self.problem = Problem.EMPTY_CHAIN  # no entry to name
        checkpoint = self.checkpoint
        return HistoryReport(
            resource_id=self.chain,
            intact=self.problem is None,
            entries=self.entries,
            intact_through=self.last_seq,
            broken_at=self.broken_at,
            problem=self.problem,
            message=self._message(),
            checkpoint=Checkpoint(checkpoint.seq, checkpoint.hash, checkpoint.signed_at) if checkpoint else None,
            signatures_checked=bool(self.secret_key),
        )

    def _message(self) -> str:
        through = f"seq {self.last_seq}" if self.last_seq is not None else "no entry"
        if self.problem is not None:
            where = f" at seq {self.broken_at}" if self.broken_at is not None else ""
            return f"History of {self.chain} is broken{where}: {_DETAILS[self.problem]}. Intact through {through}."

        if not self.secret_key:
            how = (
                "no secret key is configured (CASEWAY_SECRET_KEY), so only the hash chain was checked: "
                "deleted newest entries or a rewrite of the whole chain would not show"
            )
        elif self.checkpoint is None:
            how = "no checkpoint has been signed for it yet, so only the hash chain was checked"
        else:
            signed_at = self.checkpoint.signed_at.strftime("%Y-%m-%d %H:%M:%S UTC")
            how = f"checked against its checkpoint of seq {self.checkpoint.seq}, signed {signed_at}"
        return f"History of {self.chain} is intact through {through} ({self.entries} entries); {how}."


_ENTRY_COLUMNS = [column for column in Activity.__table__.c]


async def verify_history(session: AsyncSession, *, resource_id: str, secret_key: str) -> HistoryReport:
    """Verify the history of one project, subproject or workflow item (its hash chain, and its
    signed checkpoint when ``secret_key`` is given).

    Raises:
        DomainError: NOT_FOUND if there is no such resource, no entry and no checkpoint of it.
    """
    connection = await session.connection()
    checkpoint = (
        await connection.execute(select(HistoryCheckpoint.__table__).where(HistoryCheckpoint.chain == resource_id))
    ).first()
    check = _ChainCheck(resource_id, checkpoint, secret_key)
    after = -1
    while True:
        page = (
            await connection.execute(
                select(*_ENTRY_COLUMNS)
                .where(Activity.chain == resource_id, Activity.seq > after)
                .order_by(Activity.seq)
                .limit(_PAGE)
            )
        ).all()
        if not all(check.feed(entry) for entry in page) or len(page) < _PAGE:
            break
        after = page[-1].seq
    if check.entries == 0 and check.problem is None:
        exists = await _resource_exists(session, resource_id)
        if not exists and checkpoint is None:
            raise not_found("resource", resource_id, "resourceId")
        return check.report(resource_exists=exists)
    return check.report()


async def _resource_exists(session: AsyncSession, resource_id: str) -> bool:
    model = RESOURCE_MODELS.get(kind_of(resource_id) or "")
    return model is not None and await session.scalar(select(model.id).where(model.id == resource_id)) is not None


async def verify_all(session: AsyncSession, *, secret_key: str) -> AsyncIterator[HistoryReport]:
    """Verify every chain, in chain order, reading the log in pages (memory stays bounded);
    then the checkpoints of chains that have no entry left, and resources with no history."""
    connection = await session.connection()
    check: _ChainCheck | None = None
    chain, seq = "", -1
    while True:
        page = (
            await connection.execute(
                select(*_ENTRY_COLUMNS)
                .where(tuple_(Activity.chain, Activity.seq) > tuple_(chain, seq))  # an index range, page after page
                .order_by(Activity.chain, Activity.seq)
                .limit(_PAGE)
            )
        ).all()
        checkpoints = await _checkpoints(session, {entry.chain for entry in page})
        for entry in page:
            if check is None or check.chain != entry.chain:
                if check is not None:
                    yield check.report()
                check = _ChainCheck(entry.chain, checkpoints.get(entry.chain), secret_key)
            if check.problem is None:
                check.feed(entry)
        if len(page) < _PAGE:
            break
        chain, seq = page[-1].chain, page[-1].seq
    if check is not None:
        yield check.report()
    has_entries = select(Activity.seq).where(Activity.chain == HistoryCheckpoint.chain).exists()
    for orphan in (
        await connection.execute(
            select(HistoryCheckpoint.__table__).where(~has_entries).order_by(HistoryCheckpoint.chain)
        )
    ).all():
        yield _ChainCheck(orphan.chain, orphan, secret_key).report()
    for model in RESOURCE_MODELS.values():
        no_history = ~select(Activity.seq).where(Activity.chain == model.id).exists()
        no_checkpoint = ~select(HistoryCheckpoint.chain).where(HistoryCheckpoint.chain == model.id).exists()
        for resource_id in await session.scalars(select(model.id).where(no_history, no_checkpoint).order_by(model.id)):
            yield _ChainCheck(resource_id, None, secret_key).report()


async def _checkpoints(session: AsyncSession, chains: Iterable[str], *, anchors: bool = False) -> dict[str, Any]:
    """The checkpoints of ``chains``; with ``anchors``, each with the hash the log holds now
    for the entry it names (``anchor``, None if that entry is gone)."""
    connection = await session.connection()
    columns: list[Any] = list(HistoryCheckpoint.__table__.c)
    found: dict[str, Any] = {}
    names = sorted(chains)
    for start in range(0, len(names), _CHUNK):
        query = select(*columns).where(HistoryCheckpoint.chain.in_(names[start : start + _CHUNK]))
        if anchors:
            query = query.add_columns(Activity.hash.label("anchor")).outerjoin(
                Activity, and_(Activity.chain == HistoryCheckpoint.chain, Activity.seq == HistoryCheckpoint.seq)
            )
        found.update((row.chain, row) for row in await connection.execute(query))
    return found


async def checkpoint_history(
    session: AsyncSession, *, secret_key: str, since: int = 0, limit: int = _PASS_LIMIT, now: datetime | None = None
) -> CheckpointPass | None:
    """Sign the heads of the chains that gained entries after seq ``since`` (at most ``limit``
    entries are read; ``more`` says whether the pass should be run again at once).

    A pass starts after the newest checkpoint at the latest: every chain with an entry up to
    that seq was signed by the pass that made it (each pass signs heads no newer than the
    entries it read, and seq order is commit order). A chain whose checkpoint no longer matches
    the log is refused, not re-signed. Returns None without a key, or while another process's
    pass holds the lock (PostgreSQL)."""
    if not secret_key:
        return None
    if session.bind.dialect.name == "postgresql" and not await session.scalar(
        select(func.pg_try_advisory_xact_lock(_PASS_LOCK_KEY))
    ):
        return None
    newest = await session.scalar(select(func.max(HistoryCheckpoint.seq)))
    since = max(since, newest or 0)
    connection = await session.connection()
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
    existing = await _checkpoints(session, heads, anchors=True)
    now = now or utcnow()
    values, refused = [], []
    for chain, head in heads.items():
        old = existing.get(chain)
        if old is not None:
            if old.seq >= head.seq:
                continue
            if old.anchor != old.hash or not _signature_holds(secret_key, old):
                refused.append(chain)
                continue
        values.append(
            {
                "chain": chain,
                "seq": head.seq,
                "hash": head.hash,
                "signed_at": now,
                "signature": sign(secret_key, chain=chain, seq=head.seq, hash=head.hash, signed_at=now),
            }
        )
    if values:
        upsert = insert_for(session)(HistoryCheckpoint)
        upsert = upsert.on_conflict_do_update(
            index_elements=["chain"],
            set_={name: upsert.excluded[name] for name in ("seq", "hash", "signed_at", "signature")},
            where=HistoryCheckpoint.seq < upsert.excluded.seq,
        )
        await session.execute(upsert, values)
    return CheckpointPass(through_seq=rows[-1].seq if rows else since, signed=len(values), refused=refused, more=more)
