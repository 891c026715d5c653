"""deputies and search: the deputyship table, the activity entry's onBehalfOf, and the full-text
indexes of projects, subprojects and workflow items (resolvers/search.py)

PostgreSQL: a GIN index over each table's ``to_tsvector('simple', display_name || ' ' ||
description)``, which PostgreSQL keeps in step with the rows itself. SQLite: one FTS5 table,
``search_fts``, whose rowids are those of ``search_entry`` (an INTEGER PRIMARY KEY, so VACUUM
never renumbers them), kept in step by triggers on insert, update and delete of the three
tables. Neither is in the models (an FTS5 table cannot be declared there): their names start
with ``search_``, which tests/test_migrations.py leaves out of its comparison. A SQLite batch
migration that re-creates one of the three tables drops its triggers: re-create them with
``sqlite_triggers`` (a test finds a new item by search, so the suite says so).

Revision ID: 0016
Revises: 0014
Create Date: 2026-11-26 07:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import models.types

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEARCHED = ("project", "subproject", "workflow_item")

# resolvers/search.py's TSVECTOR, frozen here: a query uses the index only with exactly this text
# (tests/api/test_search.py checks the plan).
POSTGRES_INDEX = (
    "CREATE INDEX ix_search_{table} ON {table} "
    "USING gin (to_tsvector('simple', translate(display_name || ' ' || description, '@/.:', '    ')))"
)


def sqlite_triggers(table: str) -> list[str]:
    """The triggers that keep ``search_fts`` in step with ``table``'s rows."""
    row = "(SELECT rowid FROM search_entry WHERE resource_id = {which}.id)"
    add = (
        f"INSERT INTO search_entry (resource_id) VALUES (new.id); "
        f"INSERT INTO search_fts (rowid, display_name, description) "
        f"VALUES ({row.format(which='new')}, new.display_name, new.description);"
    )
    remove = f"DELETE FROM search_fts WHERE rowid = {row.format(which='old')}; "
    return [
        f"CREATE TRIGGER search_{table}_insert AFTER INSERT ON {table} BEGIN {add} END",
        f"CREATE TRIGGER search_{table}_update AFTER UPDATE OF display_name, description ON {table} BEGIN "
        f"{remove}INSERT INTO search_fts (rowid, display_name, description) "
        f"VALUES ({row.format(which='new')}, new.display_name, new.description); END",
        f"CREATE TRIGGER search_{table}_delete AFTER DELETE ON {table} BEGIN "
        f"{remove}DELETE FROM search_entry WHERE resource_id = old.id; END",
    ]


def upgrade() -> None:
    op.create_table(
        "deputyship",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("user_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("deputy_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("starts_at", models.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("ends_at", models.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("comment", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("created_by", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("created_at", models.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["deputy_id"], ["user.id"]),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("deputyship", schema=None) as batch_op:
        batch_op.create_index("ix_deputyship_deputy_ends", ["deputy_id", "ends_at"], unique=False)
        batch_op.create_index("ix_deputyship_user_ends", ["user_id", "ends_at"], unique=False)
    op.add_column("activity", sa.Column("on_behalf_of", sqlmodel.sql.sqltypes.AutoString(), nullable=True))
    if op.get_context().dialect.name == "postgresql":
        for table in SEARCHED:
            op.execute(POSTGRES_INDEX.format(table=table))
        return
    op.execute("CREATE TABLE search_entry (rowid INTEGER PRIMARY KEY, resource_id TEXT NOT NULL UNIQUE)")
    op.execute(
        "CREATE VIRTUAL TABLE search_fts USING fts5(display_name, description, "
        "tokenize = 'unicode61 remove_diacritics 0')"
    )
    for table in SEARCHED:  # what exists already, then the triggers for what comes
        op.execute(f"INSERT INTO search_entry (resource_id) SELECT id FROM {table}")
        op.execute(
            f"INSERT INTO search_fts (rowid, display_name, description) SELECT e.rowid, t.display_name, "
            f"t.description FROM {table} t JOIN search_entry e ON e.resource_id = t.id"
        )
        for trigger in sqlite_triggers(table):
            op.execute(trigger)


def downgrade() -> None:
    if op.get_context().dialect.name == "postgresql":
        for table in SEARCHED:
            op.execute(f"DROP INDEX ix_search_{table}")
    else:
        for table in SEARCHED:
            for verb in ("insert", "update", "delete"):
                op.execute(f"DROP TRIGGER search_{table}_{verb}")
        op.execute("DROP TABLE search_fts")
        op.execute("DROP TABLE search_entry")
    op.drop_column("activity", "on_behalf_of")
    with op.batch_alter_table("deputyship", schema=None) as batch_op:
        batch_op.drop_index("ix_deputyship_user_ends")
        batch_op.drop_index("ix_deputyship_deputy_ends")
    op.drop_table("deputyship")
