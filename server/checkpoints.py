"""Signing history checkpoints: the background task of every server process, and its one-off
form for `caseway checkpoint-history`. The rules live in ``engine/history.py``."""

import asyncio
import logging
from dataclasses import dataclass, field

from engine import history
from models import Database

log = logging.getLogger("caseway.checkpoints")


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
            done = await history.checkpoint_history(session, secret_key=secret_key, since=run.through_seq)
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
