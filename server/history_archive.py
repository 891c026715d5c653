"""`caseway archive-history --before MONTH --to DIR`, and the archive `caseway verify-history
--archive DIR` reads back. The partitions and anchors are engine/history/partitions.py's, the
files' form engine/history/archive.py's.

Each partition wholly before MONTH, oldest first: its entries are written to DIR (to a
``.partial`` name, renamed when whole), read back from the file and their chains checked from
where each chain's archived part ended (so the export is what the database held, and whole),
its manifest written; then, in one transaction, the anchors recorded and the partition detached
and dropped. A failure before that transaction leaves the partition in the database (a later
run writes its files again).
"""

import asyncio
import logging
import os
import re
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.exc import DBAPIError

from engine.history import archive, partitions
from engine.history.activity import entry_hash
from engine.history.archive import ArchiveError, Manifest
from engine.history.partitions import Head, Partition
from models import Database
from server.cli_errors import CliError

log = logging.getLogger("caseway.partitions")
_MONTH = re.compile(r"(\d{4})-(\d{2})")
_MANIFEST = re.compile(r"activity-(\d{12})-(\d{12})\.manifest\.json")
_PAGE = 5_000  # entries read per statement


async def partition_forever(db: Database, *, interval: float = 600) -> None:
    """Every ``interval`` seconds, make the log's next partitions if fewer than two are ready
    (a partition holds about a month, so this is nearly always nothing: one short statement)."""
    while True:
        try:
            async with db.transaction() as session:
                made = await partitions.make_ahead(session)
            if made:
                log.info("made the log's next partitions: %s", ", ".join(made))
        except Exception:  # a lock not had within its timeout, the database away: tried again later
            log.exception("making the log's next partitions failed")
        await asyncio.sleep(interval)


def month(text: str) -> datetime:
    """``--before``: YYYY-MM, as the first instant of that month (UTC); ValueError with the sentence."""
    matched = _MONTH.fullmatch(text)
    if matched is None or not 1 <= int(matched.group(2)) <= 12 or int(matched.group(1)) < 1970:
        raise ValueError(f"{text!r} is not a month: write it YYYY-MM, such as 2026-10")
    return datetime(int(matched.group(1)), int(matched.group(2)), 1, tzinfo=UTC)


def _writable(directory: Path) -> None:
    """The archive's directory, made if missing; refused unless a file can be written in it."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / ".caseway-probe"
        probe.write_text("")
        probe.unlink()
    except OSError as error:
        raise CliError(f"cannot write the archive to {directory}: {error.strerror or error}.") from None


def _postgres(db: Database, what: str) -> None:
    if db.engine.dialect.name != "postgresql":
        raise CliError(
            f"{what} needs PostgreSQL: on SQLite the log is one table, never partitioned, so nothing is archived."
        )


async def archive_history(db: Database, before: datetime, to: str, *, secret_key: str | None) -> None:
    """Archive, then drop, every partition wholly before ``before``; print a line each. The
    anchors left in the database are signed with ``secret_key`` (without one, say so)."""
    _postgres(db, "archive-history")
    if to.startswith("s3://"):
        raise CliError("archive-history writes to a directory: archive to one, then copy it to s3.")
    async with db.read_session() as session:
        found = await partitions.wholly_before(session, before)
    if not found:
        raise CliError(
            f"nothing to archive before {before:%Y-%m}: the oldest partition of the log still holds entries of "
            f"{before:%Y-%m} or later, or is still being written."
        )
    directory = Path(to)
    _writable(directory)
    if not secret_key:
        print(
            "No secret key is configured (CASEWAY_SECRET_KEY): the anchors the log's chains now start from are "
            "not signed, and verify-history can tell a moved one only with --archive.",
            file=sys.stderr,
        )
    entries = 0
    for partition, newest in found:
        written, heads = await _export(db, partition, newest, directory)
        try:
            async with db.transaction() as session:
                await partitions.drop(session, partition, heads, secret_key=secret_key)
        except DBAPIError as error:
            if "lock timeout" not in str(error):
                raise
            raise CliError(
                f"{partition.name} is written to {directory} but still in the database: a long read of the log "
                f"kept its lock more than {partitions.DROP_LOCK_TIMEOUT} seconds. Run archive-history again."
            ) from None
        entries += written
        when = f", the newest written {newest:%Y-%m-%d}" if newest else ""
        print(f"Archived {partition.name}: {written} entries, seqs {partition.first} to {partition.upper - 1}{when}.")
    print(
        f"Archived {entries} entries of {len(found)} partitions to {directory}; "
        f"`caseway verify-history --all --archive {directory}` checks them with the log."
    )


async def _export(
    db: Database, partition: Partition, newest: datetime | None, directory: Path
) -> tuple[int, dict[str, Head]]:
    """Write the partition's file, check it as read back, write its manifest."""
    name, manifest_name = archive.file_names(partition.first, partition.upper - 1)
    partial = directory / f".{name}.partial"
    count, after = 0, 0
    with partial.open("w", encoding="utf-8") as out:
        while True:
            async with db.read_session() as session:
                page = await partitions.entries_of(session, partition, after=after, limit=_PAGE)
            out.writelines(archive.entry_line(row) for row in page)
            count += len(page)
            if len(page) < _PAGE:
                break
            after = page[-1].seq
        out.flush()
        os.fsync(out.fileno())  # on disk before the partition can be dropped, not in the page cache
    heads = await _check_export(db, partial, name, partition)
    if sum(head.entries for head in heads.values()) != count:
        raise CliError(f"{name} does not hold the {count} entries of {partition.name} as read back: nothing archived.")
    anchors = {chain: {"seq": head.seq, "hash": head.hash} for chain, head in heads.items()}
    manifest = Manifest(partition.name, partition.first, partition.upper - 1, count, newest, datetime.now(UTC), anchors)
    partial.rename(directory / name)
    manifest_partial = directory / f".{manifest_name}.partial"
    with manifest_partial.open("w", encoding="utf-8") as out:
        out.write(manifest.to_json())
        out.flush()
        os.fsync(out.fileno())
    manifest_partial.rename(directory / manifest_name)
    # the renames themselves durable: a crash after the drop must find both files under their names
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    return count, heads


async def _check_export(db: Database, path: Path, name: str, partition: Partition) -> dict[str, Head]:
    """The chains of the written file checked entry by entry from where each one's archived
    part ended; each chain's last entry in it."""
    heads: dict[str, Head] = {}
    with path.open(encoding="utf-8") as lines:
        batch: list[Any] = []
        for number, line in enumerate(lines, 1):
            batch.append(archive.entry_from_line(line, f"{name}, line {number}"))
            if len(batch) == _PAGE:
                await _check_batch(db, batch, heads, partition)
                batch = []
        await _check_batch(db, batch, heads, partition)
    return heads


async def _check_batch(db: Database, batch: list[Any], heads: dict[str, Head], partition: Partition) -> None:
    new = {entry.chain for entry in batch} - heads.keys()
    async with db.read_session() as session:
        anchors = await partitions.anchors_of(session, new)
    for entry in batch:
        head = heads.get(entry.chain)
        prev = head.hash if head else (anchors[entry.chain].hash if entry.chain in anchors else None)
        if entry.prev_hash != prev or entry_hash(prev, entry) != entry.hash:
            raise CliError(
                f"the history of {entry.chain} is broken at seq {entry.seq} in {partition.name}, so it is not "
                "archived: `caseway verify-history --all` says how."
            )
        if head is None:
            head = heads[entry.chain] = Head(
                entry.seq, entry.hash, entry.at, entry.project_id, entry.subproject_id, entry.workflow_item_id, 0
            )
        head.seq, head.hash, head.at, head.entries = entry.seq, entry.hash, entry.at, head.entries + 1


class ArchiveReader:
    """The entries of an archive directory in seq order, its files checked as they are read:
    they follow one another from seq 1 without a gap, each holds what its manifest says, and
    each chain ends in a file where the manifest's anchor says. ``problems``: sentences for
    what does not hold (the chains themselves are checked by the engine)."""

    def __init__(self, directory: str) -> None:
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise CliError(f"{self.directory} is not a directory: give the directory archive-history wrote to.")
        self.manifests = sorted(name for name in os.listdir(self.directory) if _MANIFEST.fullmatch(name))
        if not self.manifests:
            raise CliError(f"{self.directory} holds no archived history (no activity-*.manifest.json in it).")
        self.problems: list[str] = []

    def __iter__(self) -> Iterator[Any]:
        expected = 1
        for manifest_name in self.manifests:
            manifest = Manifest.from_json(self._read(manifest_name), manifest_name)
            if manifest.first != expected:
                self.problems.append(
                    f"{self.directory} lacks the archived entries of seqs {expected} to {manifest.first - 1}."
                )
            expected = manifest.last + 1
            yield from self._entries(manifest, manifest_name.replace(".manifest.json", ".jsonl"))

    def _entries(self, manifest: Manifest, name: str) -> Iterator[Any]:
        ends: dict[str, dict[str, Any]] = {}
        count, last = 0, manifest.first - 1
        try:
            lines = (self.directory / name).open(encoding="utf-8")
        except OSError as error:
            raise ArchiveError(f"cannot read {name} of {self.directory}: {error.strerror or error}.") from None
        with lines:
            for number, line in enumerate(lines, 1):
                entry = archive.entry_from_line(line, f"{name}, line {number}")
                if not last < entry.seq <= manifest.last:
                    raise ArchiveError(f"{name}, line {number}: seq {entry.seq} is out of order or outside the file.")
                count, last = count + 1, entry.seq
                ends[entry.chain] = {"seq": entry.seq, "hash": entry.hash}
                yield entry
        if count != manifest.entries:
            self.problems.append(f"{name} holds {count} entries; its manifest says {manifest.entries}.")
        if ends != manifest.anchors:
            chains = sorted(c for c in ends.keys() | manifest.anchors.keys() if ends.get(c) != manifest.anchors.get(c))
            self.problems.append(
                f"{name} does not end the chain of {chains[0]} where its manifest says"
                + (f" (and {len(chains) - 1} more chains)" if len(chains) > 1 else "")
                + ": the file or the manifest was changed."
            )

    def _read(self, name: str) -> str:
        try:
            return (self.directory / name).read_text(encoding="utf-8")
        except OSError as error:
            raise ArchiveError(f"cannot read {name} of {self.directory}: {error.strerror or error}.") from None


def archive_reader(db: Database, directory: str) -> ArchiveReader:
    _postgres(db, "verify-history --archive")
    return ArchiveReader(directory)
