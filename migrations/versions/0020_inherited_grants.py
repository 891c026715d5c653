"""grants that reach down: permission.inherit

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-28 20:30:00

A grant on a project or subproject with ``inherit`` also holds, with the same suffix, on
everything below it, now and later (engine/people/inheritance.py). It is stored once, on the
resource it was made on, and the visibility rules ask for it by the rows' parent ids: bringing a
team onto 500 running items is one row, not 500. Existing grants do not reach down (false). The
partial index holds the reaching grants alone, by party and intent, so a read's "which
subprojects does the viewer reach" reads a few index entries.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("permission", schema=None) as batch_op:
        batch_op.add_column(sa.Column("inherit", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_index(
        "ix_permission_inherited",
        "permission",
        ["party_id", "intent", "resource_id"],
        postgresql_where=sa.text("inherit"),
        sqlite_where=sa.text("inherit"),
    )


def downgrade() -> None:
    op.drop_index("ix_permission_inherited", table_name="permission")
    with op.batch_alter_table("permission", schema=None) as batch_op:
        batch_op.drop_column("inherit")
