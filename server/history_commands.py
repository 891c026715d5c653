"""`caseway verify-history`, `caseway checkpoint-history` and `caseway archive-history`: the hash
chains and the signed checkpoint sequence checked from a shell, against a copy too, and with the
archived part of the log; checkpoints signed and exported; old partitions archived. Each command
imports what it runs when it runs (a command loads only its own code)."""

import sys
from collections.abc import AsyncIterator
from typing import Any

from server.cli_database import migrated_database
from server.cli_errors import CliError
from server.settings import Settings


async def verify_history(
    settings: Settings, resource_id: str | None, against: str | None, archive: str | None = None
) -> bool:
    """Print a sentence per chain (then, with --all, one on the checkpoint sequence, with
    --against, on the copy, and with --archive, on the archive's files); True if everything is
    intact."""
    from engine.history import checkpoints, history
    from engine.history.archive import ArchiveError
    from server.checkpoints import copy_at, read_copy
    from server.history_archive import archive_reader

    copy = copy_at(against, endpoint_url=settings.s3_endpoint_url or None) if against else None
    if copy is not None and not settings.secret_key:
        raise CliError("--against needs CASEWAY_SECRET_KEY: the copy's checkpoints are checked with it.")
    db = await migrated_database(settings)
    if not settings.secret_key:
        print("No secret key is configured (CASEWAY_SECRET_KEY): checking the hash chains alone.", file=sys.stderr)
    checked = broken = 0
    try:
        archived = archive_reader(db, archive) if archive is not None else None
        async with db.session() as s:
            if resource_id is not None:
                report = await history.verify_history(
                    s, resource_id=resource_id, secret_key=settings.secret_key, archive=archived
                )
                reports = one_report(report)
            else:
                reports = history.verify_all(s, secret_key=settings.secret_key, archive=archived)
            async for report in reports:  # printed as they come: --all reads the log in pages
                print(report.message, flush=resource_id is not None)
                checked, broken = checked + 1, broken + (not report.intact)
            if resource_id is None:
                print(f"{checked - broken} of {checked} histories intact.")
            if archived is not None:
                print(
                    "\n".join(archived.problems) or f"The archive at {archive} is whole: its files follow one another."
                )
                broken += len(archived.problems)
            if resource_id is None and settings.secret_key:
                sequence = await checkpoints.check_sequence(s, secret_key=settings.secret_key)
                print("\n".join(sequence.sentences()))
                broken += bool(sequence.problems)
            if copy is not None:
                broken += not await compare_with_copy(s, copy, settings.secret_key, read_copy)
    except ArchiveError as error:
        raise CliError(f"the archive at {archive}: {error}") from None
    finally:
        await db.dispose()
    return broken == 0


async def archive_history(settings: Settings, before: Any, to: str) -> None:
    from server.history_archive import archive_history

    db = await migrated_database(settings)
    try:
        await archive_history(db, before, to, secret_key=settings.secret_key)
    finally:
        await db.dispose()


async def compare_with_copy(session: Any, copy: Any, secret_key: str, read_copy: Any) -> bool:
    from engine.history import checkpoints

    check, missing = await checkpoints.compare_with_copy(
        session, read_copy(copy), secret_key=secret_key, where=copy.where
    )
    if check.count == 0:
        where = copy.where[0].upper() + copy.where[1:]
        print(f"{where} holds no checkpoint: export some first (checkpoint-history --export).")
        return False
    print("\n".join(check.sentences()))
    print("\n".join(missing) or f"The database holds every one of the {check.count} checkpoints of {copy.where}.")
    return not check.problems and not missing


async def one_report(report: Any) -> AsyncIterator[Any]:
    yield report


async def checkpoint_history(settings: Settings, export_to: str | None) -> None:
    from server.checkpoints import copy_at, export, run_checkpoints

    if not settings.secret_key:
        raise CliError("CASEWAY_SECRET_KEY is not set, so no checkpoint can be signed.")
    copy = copy_at(export_to, endpoint_url=settings.s3_endpoint_url or None) if export_to else None
    db = await migrated_database(settings)
    try:
        run = await run_checkpoints(db, secret_key=settings.secret_key)
        if run.skipped:
            print("Another process is signing checkpoints right now; nothing signed.")
        else:
            print(f"Signed {run.signed} checkpoints; the log is covered through seq {run.through_seq}.")
        for chain in run.refused:
            print(f"Not re-signed: the history of {chain} no longer matches its checkpoint (run verify-history).")
        if copy is not None:
            added, newest = await export(db, copy)
            print(f"Exported {added} checkpoints to {copy.where.removeprefix('the copy at ')}; it holds 1 to {newest}.")
    finally:
        await db.dispose()
