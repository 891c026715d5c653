"""Alembic environment: runs migrations over the async engine of the configured database."""

import asyncio

from alembic import context
from sqlalchemy.engine import Connection
from sqlmodel import SQLModel

import models  # noqa: F401 - registers every table on SQLModel.metadata
from models.db import Database

target_metadata = SQLModel.metadata


def _run(connection: Connection) -> None:
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        # A batch migration rebuilds a table (CREATE, copy, DROP, RENAME); with foreign keys
        # enforced, the DROP of a table other rows point to (user) fails once there is data.
        # SQLite's advice: keys off during the change, then checked whole (below).
        connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()
        if sqlite:
            broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
            if broken:
                raise RuntimeError(f"the migration left rows pointing at nothing: {broken[:5]}")
    if sqlite:
        connection.exec_driver_sql("PRAGMA foreign_keys=ON")


async def _main(url: str) -> None:
    db = Database(url)
    try:
        async with db.engine.connect() as connection:
            await connection.run_sync(_run)
            await connection.commit()
    finally:  # a failed migration's connection is closed too, not left to the garbage collector
        await db.dispose()


def _url() -> str:
    url = context.config.attributes.get("database_url")
    if url:
        return url
    from server.settings import Settings

    settings = Settings()
    return settings.database_direct_url or settings.database_url  # a session of its own, not a pooler


connection = context.config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    asyncio.run(_main(_url()))
