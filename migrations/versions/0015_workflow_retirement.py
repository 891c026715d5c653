"""workflow versions: a version can be retired (no new subproject or item may use it)

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26 07:45:00

A subproject already names the version its new items take (``subproject.workflow_id``, set to the
latest version when it is created and moved only by migrateCases); what was missing is a way to
say that a version must not be used again.
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import models.types

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("workflow", schema=None) as batch_op:
        batch_op.add_column(sa.Column("retired_at", models.types.UTCDateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("retired_by", sqlmodel.sql.sqltypes.AutoString(), nullable=True))


def downgrade() -> None:
    # ALTER TABLE DROP COLUMN on both databases (SQLite since 3.35): a batch copy of ``workflow``
    # would drop the table that cases and subprojects reference, which SQLite's foreign keys refuse
    # once there are any (tests/engine/test_history.py downgrades a database with cases).
    op.drop_column("workflow", "retired_by")
    op.drop_column("workflow", "retired_at")
