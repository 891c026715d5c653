"""case fields and log titles

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-28 21:00:00

A case holds the values of the fields its workflow declares (``workflow_case.fields``, an
object by field name; issue 48), and a log entry the sentence it reads as (``activity.title``,
hashed with the entry when set, so the entries written before keep their hashes), and an
executed action instance who executed it (``enabled_action.executed_by``).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import models.types

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("workflow_case", sa.Column("fields", models.types.JSONType, nullable=False, server_default="{}"))
    op.add_column("activity", sa.Column("title", sa.String(), nullable=True))
    op.add_column("enabled_action", sa.Column("executed_by", sa.String(), nullable=True))


def downgrade() -> None:
    # ALTER TABLE ... DROP COLUMN on both databases (SQLite 3.35+): a batch would copy activity
    # into a new table without its AUTOINCREMENT, and seq would be handed out again.
    op.execute("ALTER TABLE enabled_action DROP COLUMN executed_by")
    op.execute("ALTER TABLE activity DROP COLUMN title")
    op.execute("ALTER TABLE workflow_case DROP COLUMN fields")
