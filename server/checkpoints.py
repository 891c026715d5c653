"""Signing history checkpoints: the background task of every server process, and its one-off
form for `caseway checkpoint-history`; and the copy of the checkpoints kept outside the
database (`--export DIR|s3://bucket/prefix`), which `caseway verify-history --against` reads
back. The rules live in ``engine/history/checkpoints.py``.

A copy is a set of files (or objects) ``checkpoints-<first>-<last>.jsonl``, one checkpoint a
line, each export adding one file of the checkpoints after the copy's newest: nothing in it is
ever rewritten, so write-once storage (an S3 bucket with object lock) keeps it.
"""

import asyncio
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from engine.history import checkpoints
from engine.history.checkpoints import Record
from models import Database
from server.cli_errors import CliError

log = logging.getLogger("caseway.checkpoints")

_NAME = re.compile(r"checkpoints-(\d{12})-(\d{12})\.jsonl")
_EXPORT_PAGE = 10_000  # checkpoints per exported file


@dataclass
class CheckpointRun:
    """Passes run back to back until the log is covered; ``through_seq`` carries over to the
    next run, so a process never re-reads what it has already covered."""

    through_seq: int = 0
    signed: int = 0
    refused: list[str] = field(default_factory=list)
    skipped: bool = False  # another process's pass held the lock


async def run_checkpoints(db: Database, *, secret_key: str, since: int = 0) -> CheckpointRun:
    """Checkpoint every chain that gained entries after ``since``, one bounded pass (its own
    short transaction) at a time."""
    run = CheckpointRun(through_seq=since)
    while True:
        async with db.transaction() as session:
            done = await checkpoints.checkpoint_history(session, secret_key=secret_key, since=run.through_seq)
        if done is None:
            run.skipped = True
            return run
        run.through_seq, run.signed = done.through_seq, run.signed + done.signed
        run.refused += done.refused
        if not done.more:
            return run


async def checkpoint_forever(db: Database, *, secret_key: str, interval: float) -> None:
    """Every ``interval`` seconds, checkpoint the chains that grew since the last pass."""
    since = 0
    while True:
        try:
            run = await run_checkpoints(db, secret_key=secret_key, since=since)
            since = run.through_seq
            for chain in run.refused:
                log.warning(
                    "history of %s no longer matches its checkpoint; run `caseway verify-history %s`", chain, chain
                )
        except Exception:  # retried at the next interval
            log.exception("signing history checkpoints failed")
        await asyncio.sleep(interval)


# --- The copy outside the database ------------------------------------------------------------


class CopyError(CliError):
    """The copy cannot be read or written; the message is a sentence."""


class Copy(Protocol):
    where: str

    def names(self) -> list[str]: ...
    def read(self, name: str) -> str: ...
    def write(self, name: str, text: str) -> None: ...


class DirectoryCopy:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.where = f"the copy at {path}"

    def names(self) -> list[str]:
        if not self.path.exists():
            return []
        if not self.path.is_dir():
            raise CopyError(f"{self.path} is not a directory.")
        return sorted(p.name for p in self.path.iterdir() if _NAME.fullmatch(p.name))

    def read(self, name: str) -> str:
        return (self.path / name).read_text(encoding="utf-8")

    def write(self, name: str, text: str) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        partial = self.path / f".{name}.partial"
        partial.write_text(text, encoding="utf-8")
        partial.rename(self.path / name)  # never a half-written file under its real name


class S3Copy:
    """Objects under ``s3://bucket/prefix``; credentials and region from the standard AWS
    sources, the endpoint from CASEWAY_S3_ENDPOINT_URL (an S3-compatible service)."""

    def __init__(self, bucket: str, prefix: str, *, endpoint_url: str | None = None, client: Any = None) -> None:
        try:
            import boto3
        except ImportError:
            raise CopyError("An s3:// copy needs boto3: pip install 'caseway[s3]'.") from None
        self.bucket, self.prefix = bucket, prefix
        self.client = client or boto3.client("s3", endpoint_url=endpoint_url)
        self.where = f"the copy at s3://{bucket}/{prefix}"

    def names(self) -> list[str]:
        found: list[str] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.prefix):
            for item in page.get("Contents", []):
                name = item["Key"][len(self.prefix) :]
                if _NAME.fullmatch(name):
                    found.append(name)
        return sorted(found)

    def read(self, name: str) -> str:
        body = self.client.get_object(Bucket=self.bucket, Key=self.prefix + name)["Body"]
        return body.read().decode("utf-8")

    def write(self, name: str, text: str) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self.prefix + name, Body=text.encode("utf-8"))


def copy_at(destination: str, *, endpoint_url: str | None = None) -> Copy:
    """A directory, or ``s3://bucket/prefix``."""
    if destination.startswith("s3://"):
        bucket, _, prefix = destination.removeprefix("s3://").partition("/")
        if not bucket:
            raise CopyError(f"{destination} names no bucket: write s3://bucket/prefix.")
        return S3Copy(bucket, prefix.rstrip("/") + "/" if prefix else "", endpoint_url=endpoint_url)
    return DirectoryCopy(Path(destination))


def _newest_counter(names: list[str]) -> int:
    return max((int(_NAME.fullmatch(n).group(2)) for n in names), default=0)  # type: ignore[union-attr]


async def export(db: Database, copy: Copy) -> tuple[int, int]:
    """Add the checkpoints after the copy's newest to it, a file per 10,000; returns how many
    were added and the newest counter the copy now holds."""
    newest = _newest_counter(await asyncio.to_thread(_names, copy))
    added = 0
    while True:
        async with db.read_session() as session:
            page = await checkpoints.records_after(session, newest, limit=_EXPORT_PAGE)
        if not page:
            return added, newest
        name = f"checkpoints-{page[0].counter:012d}-{page[-1].counter:012d}.jsonl"
        text = "".join(record.to_json() + "\n" for record in page)
        await asyncio.to_thread(_write, copy, name, text)
        added, newest = added + len(page), page[-1].counter


def read_copy(copy: Copy) -> Iterator[Record]:
    """The copy's checkpoints in counter order (its files in name order, the name telling the
    range); a line that is not a checkpoint is a CopyError naming the file and line."""
    for name in _names(copy):
        text = _read(copy, name)
        for number, line in enumerate(text.splitlines(), 1):
            try:
                yield Record.from_json(line)
            except (ValueError, KeyError, TypeError):
                raise CopyError(f"{copy.where}: {name}, line {number}, is not a checkpoint.") from None


def _names(copy: Copy) -> list[str]:
    try:
        return copy.names()
    except CopyError:
        raise
    except Exception as error:  # OSError, botocore's ClientError and NoCredentialsError
        raise CopyError(f"cannot list {copy.where}: {error}.") from None


def _read(copy: Copy, name: str) -> str:
    try:
        return copy.read(name)
    except Exception as error:
        raise CopyError(f"cannot read {name} of {copy.where}: {error}.") from None


def _write(copy: Copy, name: str, text: str) -> None:
    try:
        copy.write(name, text)
    except Exception as error:
        raise CopyError(f"cannot write {name} to {copy.where}: {error}.") from None
