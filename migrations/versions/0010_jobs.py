"""durable jobs: the outbox table of side effects that leave the database

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23 19:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import models.types

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_UNFINISHED = "state IN ('PENDING', 'RUNNING', 'STALLED')"


def upgrade() -> None:
    op.create_table(
        "job",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("case_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("workflow_item_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("activity_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("state", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("step", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", models.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("input", sa.JSON(), nullable=False),
        sa.Column("progress", sa.JSON(), nullable=False),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("idempotency_key", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("serialization_key", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("created_at", models.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", models.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["case_id"],
            ["workflow_case.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.create_index(
            "ix_job_due",
            ["next_attempt_at"],
            unique=False,
            postgresql_where=sa.text(_UNFINISHED),
            sqlite_where=sa.text(_UNFINISHED),
        )
        batch_op.create_index("ix_job_serialization_key_id", ["serialization_key", "id"], unique=False)
        batch_op.create_index("ix_job_case_id", ["case_id", "id"], unique=False)
        batch_op.create_index("ix_job_state_id", ["state", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.drop_index("ix_job_state_id")
        batch_op.drop_index("ix_job_case_id")
        batch_op.drop_index("ix_job_serialization_key_id")
        batch_op.drop_index("ix_job_due")
    op.drop_table("job")
