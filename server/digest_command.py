"""`caseway run-digests [--now ISO] [--limit N]`: close the digest windows due now (or at --now),
as the `runDigests` mutation and every server's sweeper do, for an operator or a cron job.

It makes each due window's message an `email` job in the window's own transaction (one per user
and window, whoever else closes windows at the same time: the job key) and publishes the commits,
so on PostgreSQL a running server's job runner is woken to send them; without a server,
`caseway run-jobs --once` sends them. Sending stays with the durable jobs (retries, STALLED,
reconcile): a command that sent by itself would be a second sender without them.
"""

from collections.abc import Awaitable, Callable
from datetime import datetime

from engine.clock import SYSTEM_CLOCK
from models import Database
from server.background import publishing
from server.cli_errors import CliError
from server.digest_runs import run_digests
from server.settings import Settings


async def run_digests_command(
    settings: Settings,
    now: datetime | None,
    limit: int,
    *,
    open_db: Callable[[Settings], Awaitable[Database]],
) -> None:
    """``open_db`` is the CLI's migrated-database check (server/cli.py), so that this command
    refuses a missing or unmigrated database in the same sentence as the others."""
    at = now or SYSTEM_CLOCK.now()
    if not 1970 <= at.year <= 9000:
        raise CliError(f"--now must be between the years 1970 and 9000, not {at.isoformat()}.")
    db = await open_db(settings)
    try:
        async with publishing(db):  # the servers' job runners hear of the email jobs
            run = await run_digests(db, now=at, limit=limit)
    finally:
        await db.dispose()
    print(f"Queued {run.jobs} digests; {run.empty} windows had nothing to send.")
    if run.jobs:
        print("A server's job runner sends them (or `caseway run-jobs --once`).")
    if run.more:
        print(f"More windows are due: the limit of {limit} stopped this run.")
