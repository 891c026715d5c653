"""Every migration's downgrade runs, on the test backend: from head down to an empty database one
revision at a time, then up again, after which the schema is exactly what the models say. (Two
data migrations, 0008 and 0014, have their own tests of what they keep.)"""

import asyncio

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect
from sqlmodel import SQLModel

from models import Database
from server.migrate import alembic_config, upgrade
from tests.fixtures.database import modelled, modelled_object


async def tables_and_diff(url: str) -> tuple[set[str], list]:
    db = Database(url)
    try:
        async with db.engine.connect() as conn:
            tables = set(await conn.run_sync(lambda c: inspect(c).get_table_names()))
            diff = await conn.run_sync(
                lambda c: compare_metadata(
                    MigrationContext.configure(
                        c,
                        opts={
                            "compare_type": True,
                            "include_name": modelled,
                            "include_object": modelled_object(c.dialect.name),
                        },
                    ),
                    SQLModel.metadata,
                )
            )
    finally:
        await db.dispose()
    return tables, diff


async def test_every_migration_downgrades_and_the_schema_comes_back_whole(fresh_url):
    config = alembic_config(fresh_url)
    revisions = [s.revision for s in ScriptDirectory.from_config(config).walk_revisions()]  # newest first
    await asyncio.to_thread(upgrade, fresh_url)
    for below in [*revisions[1:], "base"]:  # one step at a time, so a failing step is named
        await asyncio.to_thread(command.downgrade, config, below)
    tables, _ = await tables_and_diff(fresh_url)
    assert tables <= {"alembic_version"}, f"left by the downgrades: {sorted(tables - {'alembic_version'})}"
    await asyncio.to_thread(upgrade, fresh_url)
    tables, diff = await tables_and_diff(fresh_url)
    assert diff == [] and set(SQLModel.metadata.tables) <= tables
