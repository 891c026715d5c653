"""search: PostgreSQL's GIN indexes split words where SQLite's FTS5 does

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-26 12:00:00

Migration 0016 indexed ``to_tsvector('simple', translate(display_name || ' ' || description,
'@/.:', '    '))``. PostgreSQL's parser still kept a sign with its number ("2031-07" gave "-07",
"+49"), a hyphenated compound whole beside its parts, a path from '~', and dropped the words of
an XML tag or entity ("<draft note>", "&amp;"): "07" found "Invoice 2031-07" on SQLite only.
Now '-', '+', '~', '<', '>' and '&' are spaces too, as every character but letters and digits is
to SQLite's unicode61 tokenizer (which needs no change). The indexes are re-created with the
expression resolvers/search.py's ``TSVECTOR`` repeats exactly (a query uses an index only for
its very expression; tests/api/test_search.py checks the plan). CREATE INDEX blocks writes to
the table while it reads it: at a million items plan the minutes it takes.

The index names start with ``ix_search_``, which tests/test_migrations.py leaves out of its
comparison with the models.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEARCHED = ("project", "subproject", "workflow_item")
INDEX = "CREATE INDEX ix_search_{table} ON {table} USING gin (to_tsvector('simple', translate({expression})))"
SPLIT = "display_name || ' ' || description, '@/.:-+~<>&', '          '"  # resolvers/search.py's TSVECTOR
SPLIT_0016 = "display_name || ' ' || description, '@/.:', '    '"


def _index(expression: str) -> None:
    if op.get_context().dialect.name != "postgresql":
        return  # SQLite's FTS5 table splits at every character but letters and digits already
    for table in SEARCHED:
        op.execute(f"DROP INDEX ix_search_{table}")
        op.execute(INDEX.format(table=table, expression=expression))


def upgrade() -> None:
    _index(SPLIT)


def downgrade() -> None:
    _index(SPLIT_0016)
