"""Verifying the activity hash chains, and signing checkpoints of their heads.

A hash chain alone shows an edited entry, but not a chain rewritten together with every hash
after the edit, nor its newest entries deleted: anyone who can write the table can recompute a
chain. So the server signs the head of each chain that grew (HMAC-SHA256 with its secret key,
which never enters the database) as checkpoints in ``history_checkpoint`` (engine/history/checkpoints.py:
a signed sequence, so a checkpoint deleted or rolled back shows too). Up to its newest
checkpoint a chain can be neither truncated nor rewritten without the signature or the
checkpointed hash giving it away; entries after it are covered by the hash chain alone until
the next pass.

``verify_history`` checks one resource's chain and ``verify_all`` every chain, each against its
newest checkpoint.
"""

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from engine.errors import not_found
from engine.history.activity import RESOURCE_MODELS, entry_hash
from engine.history.checkpoints import anchor_signature_holds, newest_of, signature_holds
from engine.history.partitions import anchors_of
from models import Activity, ArchivedChain, HistoryCheckpoint, kind_of

__all__ = ["Checkpoint", "HistoryReport", "Problem", "verify_all", "verify_history"]

_PAGE = 2_000  # entries read per statement while verifying


class Problem(StrEnum):
    """What is wrong with the first broken entry of a chain."""

    HASH_MISMATCH = "HASH_MISMATCH"
    PREV_HASH_MISMATCH = "PREV_HASH_MISMATCH"
    CHECKPOINTED_ENTRY_MISSING = "CHECKPOINTED_ENTRY_MISSING"
    CHECKPOINTED_ENTRY_CHANGED = "CHECKPOINTED_ENTRY_CHANGED"
    CHAIN_SHORTER_THAN_CHECKPOINT = "CHAIN_SHORTER_THAN_CHECKPOINT"
    BAD_CHECKPOINT_SIGNATURE = "BAD_CHECKPOINT_SIGNATURE"
    EMPTY_CHAIN = "EMPTY_CHAIN"
    ARCHIVE_MISMATCH = "ARCHIVE_MISMATCH"
    BAD_ANCHOR_SIGNATURE = "BAD_ANCHOR_SIGNATURE"


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
    Problem.ARCHIVE_MISMATCH: (
        "the archive does not end the chain where the database recorded when it was archived: the archive is "
        "incomplete or was changed, or the database's record of it was"
    ),
    Problem.BAD_ANCHOR_SIGNATURE: (
        "the database's record of where its archived part ends is not signed with the secret key, or its signature "
        "does not verify: it was moved or forged (the oldest entries left may have been deleted), archived without "
        "the key, or the secret key differs; verify-history --archive checks the chain against the archive's files"
    ),
}


class _ChainCheck:
    """Walks one chain's entries in seq order and stops at the first broken one."""

    def __init__(self, chain: str, checkpoint: Any, secret_key: str, *, archived: Any = None) -> None:
        """``archived``: where the chain's archived part ends (an ``ArchivedChain`` row), to
        check the entries left from, when the archive itself is not walked first."""
        self.chain = chain
        self.secret_key = secret_key
        self.checkpoint = checkpoint if secret_key else None  # without the key it proves nothing
        self.bad_signature = self.checkpoint is not None and not signature_holds(secret_key, self.checkpoint)
        self.anchor = None if self.bad_signature else self.checkpoint  # what the entries must reach
        self.prev: str | None = None
        self.last_seq: int | None = None
        self.entries = 0
        self.problem: Problem | None = None
        self.broken_at: int | None = None
        self.archived_entries, self.in_archive = 0, False  # the archive walked: in_archive
        if archived is not None:
            self.prev, self.last_seq = archived.hash, archived.seq
            self.entries = self.archived_entries = archived.entries
            if secret_key and not anchor_signature_holds(secret_key, archived):
                self._break(Problem.BAD_ANCHOR_SIGNATURE, archived.seq)  # the entries left prove nothing from it
            elif self.anchor is not None and self.anchor.seq == archived.seq and self.anchor.hash != archived.hash:
                self._break(Problem.CHECKPOINTED_ENTRY_CHANGED, archived.seq)

    def _break(self, problem: Problem, seq: int) -> bool:
        self.problem, self.broken_at = problem, seq
        return False

    def feed(self, entry: Any) -> bool:
        """Check the next entry; False once the chain is broken (later entries say nothing more)."""
        if self.problem is not None:
            return False
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

    def feed_archived(self, entry: Any) -> None:
        """An entry read from the archive (``verify-history --archive``)."""
        self.in_archive = True
        if self.feed(entry):
            self.archived_entries += 1

    def meet(self, anchor: Any) -> None:
        """After the archive's entries: they must end where the database recorded (``anchor``,
        None: the chain had nothing archived), so the entries left follow on from them."""
        if self.problem is not None or (anchor is None and not self.in_archive):
            return
        if anchor is None or (anchor.seq, anchor.hash) != (self.last_seq, self.prev):
            self._break(Problem.ARCHIVE_MISMATCH, anchor.seq if anchor is not None else self.last_seq)

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
        archived = ""
        if self.archived_entries:
            archived = f", {self.archived_entries} of them archived" + (
                ": checked in the archive"
                if self.in_archive
                else ": the entries left checked from the archive's last hash"
            )
        return f"History of {self.chain} is intact through {through} ({self.entries} entries{archived}); {how}."


_ENTRY_COLUMNS = [column for column in Activity.__table__.c]


async def verify_history(
    session: AsyncSession, *, resource_id: str, secret_key: str, archive: Iterable[Any] | None = None
) -> HistoryReport:
    """Verify the history of one project, subproject or workflow item (its hash chain, and its
    signed checkpoint when ``secret_key`` is given). A chain whose oldest entries were archived
    is checked from where the database recorded its archived part ends, or, given ``archive``
    (the archive's entries in seq order, engine/history/archive.py), from its first entry there.

    Raises:
        DomainError: NOT_FOUND if there is no such resource, no entry and no checkpoint of it.
    """
    connection = await session.connection()
    checkpoint = (await newest_of(session, [resource_id])).get(resource_id)
    anchor = (await anchors_of(session, [resource_id])).get(resource_id)
    check = _ChainCheck(resource_id, checkpoint, secret_key, archived=None if archive is not None else anchor)
    if archive is not None:
        for entry in archive:
            if entry.chain == resource_id:
                check.feed_archived(entry)
        check.meet(anchor)
    after = check.last_seq or -1
    while check.problem is None:
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


async def _walk_archive(session: AsyncSession, archive: Iterable[Any], secret_key: str) -> dict[str, _ChainCheck]:
    """Every chain of the archive checked through it (one check per chain is kept: memory
    grows with the chains, not the entries), then met with the database's anchors."""
    checks: dict[str, _ChainCheck] = {}

    async def feed(batch: list[Any]) -> None:
        new = {entry.chain for entry in batch} - checks.keys()
        checkpoints = await newest_of(session, new) if secret_key and new else {}
        for chain in new:
            checks[chain] = _ChainCheck(chain, checkpoints.get(chain), secret_key)
        for entry in batch:
            checks[entry.chain].feed_archived(entry)

    batch: list[Any] = []
    for entry in archive:
        batch.append(entry)
        if len(batch) == _PAGE:
            await feed(batch)
            batch = []
    await feed(batch)
    anchors = await anchors_of(session)
    missing = anchors.keys() - checks.keys()
    checkpoints = await newest_of(session, missing) if secret_key and missing else {}
    for chain in missing:
        checks[chain] = _ChainCheck(chain, checkpoints.get(chain), secret_key)
    for chain, check in checks.items():
        check.meet(anchors.get(chain))
    return checks


async def verify_all(
    session: AsyncSession, *, secret_key: str, archive: Iterable[Any] | None = None
) -> AsyncIterator[HistoryReport]:
    """Verify every chain, in chain order, reading the log in pages (memory stays bounded);
    then the chains whose every entry is archived, the checkpoints of chains that have no entry
    left, and resources with no history. ``archive``: as for ``verify_history``."""
    connection = await session.connection()
    walked = await _walk_archive(session, archive, secret_key) if archive is not None else {}
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
        chains = {entry.chain for entry in page} - walked.keys()
        # Without the key a checkpoint proves nothing, and is not read.
        checkpoints = await newest_of(session, chains) if secret_key else {}
        anchors = await anchors_of(session, chains) if archive is None else {}
        for entry in page:
            if check is None or check.chain != entry.chain:
                if check is not None:
                    yield check.report()
                check = walked.pop(entry.chain, None) or _ChainCheck(
                    entry.chain, checkpoints.get(entry.chain), secret_key, archived=anchors.get(entry.chain)
                )
            check.feed(entry)
        if len(page) < _PAGE:
            break
        chain, seq = page[-1].chain, page[-1].seq
    if check is not None:
        yield check.report()
    for chain in sorted(walked):
        yield walked[chain].report()
    live = select(Activity.seq).where(Activity.chain == ArchivedChain.chain).exists()
    if archive is None:  # wholly archived chains, from their anchors
        rows = (
            await connection.execute(select(*ArchivedChain.__table__.c).where(~live).order_by(ArchivedChain.chain))
        ).all()
        checkpoints = await newest_of(session, [row.chain for row in rows]) if secret_key else {}
        for row in rows:
            yield _ChainCheck(row.chain, checkpoints.get(row.chain), secret_key, archived=row).report()
    archived = select(ArchivedChain.chain)
    if secret_key:
        has_entries = select(Activity.seq).where(Activity.chain == HistoryCheckpoint.chain).exists()
        orphans = await session.scalars(
            select(HistoryCheckpoint.chain)
            .where(~has_entries, HistoryCheckpoint.chain.not_in(archived))
            .distinct()
            .order_by(HistoryCheckpoint.chain)
        )
        for chain, orphan in sorted((await newest_of(session, list(orphans))).items()):
            yield _ChainCheck(chain, orphan, secret_key).report()
    for model in RESOURCE_MODELS.values():
        unchecked = [~select(Activity.seq).where(Activity.chain == model.id).exists(), model.id.not_in(archived)]
        if secret_key:  # reported above
            unchecked.append(~select(HistoryCheckpoint.chain).where(HistoryCheckpoint.chain == model.id).exists())
        for resource_id in await session.scalars(select(model.id).where(*unchecked).order_by(model.id)):
            yield _ChainCheck(resource_id, None, secret_key).report()
