"""`caseway migrate-cases`: migrateCases (engine/migration/migration.py) from a shell, through every batch.

An operator moving a subproject's cases (or some cases by id) to a new version runs it once: it
calls the engine batch after batch (``--batch-size`` cases each, at most ``migration.MAX_CASES``,
in a transaction of its own, the cursor going on) until none is left, printing each case's outcome as its batch
ends and the totals at the end. Interrupted, it is run again as it was: the cases already moved
are on the new version, so a subproject's next run starts with those left. It acts as the system
(an operator with the database at hand may do anything), and its writes are published like a
server's (``publishing``): on PostgreSQL live subscribers hear each ``case_migrated`` and the
sweepers learn of the new timers. Exit status 1 when a case was refused or the request was."""

import argparse
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from engine.migration import migration
from engine.migration.migration_plan import CaseMigration
from engine.people.actors import SYSTEM
from models import Database
from server.background import publishing
from server.cli_errors import CliError


@dataclass
class Totals:
    moved: int = 0
    refused: int = 0
    batches: int = 0


async def run(args: argparse.Namespace, *, open_db: Callable[[], Awaitable[Database]]) -> Totals:
    """The command as server/cli.py parsed it: the map checked before the database is opened."""
    state_map = parse_map(args.map)
    db = await open_db()
    try:
        return await migrate_cases(
            db,
            workflow=args.workflow,
            to_version=args.to_version,
            state_map=state_map,
            timer_policy=args.timer_policy,
            subproject_id=args.subproject,
            case_ids=args.case,
            dry_run=args.dry_run,
            batch_size=args.batch_size,
        )
    finally:
        await db.dispose()


def parse_map(pairs: Sequence[str]) -> list[tuple[str, str]]:
    """``FROM=TO`` pairs as the engine's state map."""
    mapping = []
    for pair in pairs:
        source, equals, to = pair.partition("=")
        if not equals or not source or not to or "=" in to:
            raise CliError(f"--map takes FROM=TO (a state of the cases' version, then one of the new), not {pair!r}.")
        mapping.append((source, to))
    return mapping


async def migrate_cases(
    db: Database,
    *,
    workflow: str,
    to_version: int,
    state_map: list[tuple[str, str]],
    timer_policy: str,
    subproject_id: str | None,
    case_ids: Sequence[str] | None,
    dry_run: bool,
    batch_size: int = migration.MAX_CASES,
) -> Totals:
    """Run every batch, printing each case as ``CASE: FROM -> TO`` or ``CASE: refused: CODE message``."""
    totals = Totals()
    if not 0 < batch_size <= migration.MAX_CASES:
        raise CliError(f"--batch-size is 1 to {migration.MAX_CASES}, not {batch_size}.")
    batches = None
    if case_ids is not None:  # named cases: a call takes a batch of them
        unique = list(dict.fromkeys(case_ids))
        batches = [unique[i : i + batch_size] for i in range(0, len(unique), batch_size)]
    after = None
    async with publishing(db):
        while True:
            ids = None if batches is None else batches[totals.batches]
            # A dry run writes nothing: its session is closed without a commit, as migrateCases rolls it back.
            async with db.session() if dry_run else db.transaction() as session:
                result = await migration.migrate_cases(
                    session,
                    actor=SYSTEM,
                    workflow=workflow,
                    to_version=to_version,
                    state_map=state_map,
                    timer_policy=timer_policy,
                    subproject_id=subproject_id,
                    case_ids=ids,
                    dry_run=dry_run,
                    first=batch_size,
                    after=after,
                )
            totals.batches += 1
            for case in result.results:
                print(_line(case, dry_run), flush=True)
            totals.refused += result.refused
            totals.moved += sum(1 for case in result.results if not case.errors) if dry_run else result.migrated
            more = result.has_more if batches is None else totals.batches < len(batches)
            if not more:
                break
            after = result.end_cursor
    verb = "would move" if dry_run else "moved"
    print(
        f"{'Dry run: ' if dry_run else ''}{totals.moved} cases {verb} to version {to_version} of {workflow!r}, "
        f"{totals.refused} refused ({totals.batches} batches)."
    )
    return totals


def _line(case: CaseMigration, dry_run: bool) -> str:
    if case.errors:
        return f"{case.case_id}: refused: " + "; ".join(f"{e.code.value} {e.message}" for e in case.errors)
    return f"{case.case_id}: {case.from_state} -> {case.to_state}{' (dry run)' if dry_run else ''}"
