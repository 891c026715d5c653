"""The database a `caseway` command works on: as configured, and for every command but `migrate`
and `serve` refused with a sentence when it does not exist or is not migrated, so that no
command creates an empty SQLite file by accident."""

import asyncio
from pathlib import Path

from sqlalchemy.engine import make_url

from models import Database, normalize_url
from server.cli_errors import CliError, where
from server.settings import Settings


def database(settings: Settings) -> Database:
    """The configured database; a SQLite file whose directory is missing is refused here, in one
    sentence: connecting to it failed in aiosqlite's thread, which then printed a traceback of its
    own as the event loop closed (issue 47, finding 2)."""
    url = make_url(normalize_url(settings.database_url))
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        directory = Path(url.database).parent
        if not directory.is_dir():
            raise CliError(
                f"the directory {directory} of the SQLite database {url.database} does not exist: create it "
                f"(mkdir -p {directory}) or set CASEWAY_DATABASE_URL."
            )
    return Database(settings.database_url, direct_url=settings.database_direct_url)


async def migrated_database(settings: Settings) -> Database:
    """The configured database, refused with a sentence when it does not exist (a SQLite file
    is not created) or is not migrated to this code's head."""
    from server.migrate import head_revision, revisions

    url = make_url(normalize_url(settings.database_url))
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        if not await asyncio.to_thread(Path(url.database).exists):
            raise CliError(
                f"no database: {url.database} does not exist. Run `caseway migrate` to create it, "
                "or set CASEWAY_DATABASE_URL."
            )
    db = database(settings)
    try:
        async with db.engine.connect() as connection:
            current = await revisions(connection)
    except BaseException:
        await db.dispose()
        raise
    if head_revision() not in current:
        await db.dispose()
        at = f"at {', '.join(current)}" if current else "never migrated"
        raise CliError(f"{where(settings.database_url)} is not migrated ({at}): run `caseway migrate` first.")
    return db
