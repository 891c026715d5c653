"""Applying Alembic migrations from code (the CLI, `serve` and the tests share this)."""

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config

ROOT = Path(__file__).resolve().parent.parent


def alembic_config(database_url: str) -> Config:
    config = Config(str(ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(ROOT / "migrations"))
    config.attributes["database_url"] = database_url
    return config


def upgrade(database_url: str) -> None:
    command.upgrade(alembic_config(database_url), "head")


def head_revision() -> str:
    """The newest migration of this code (what a ready database is at)."""
    from alembic.script import ScriptDirectory

    global _head
    if _head is None:
        _head = ScriptDirectory.from_config(alembic_config("")).get_current_head()
    return _head


_head: str | None = None


async def revisions(connection: Any) -> list[str]:
    """The migrations a database is at (an async connection); [] if it was never migrated."""
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    try:
        async with connection.begin_nested():
            return list((await connection.execute(text("SELECT version_num FROM alembic_version"))).scalars())
    except DBAPIError:  # no such table
        return []
