"""delivery by email and reminders: users' addresses, time zones and choices per level, digest
windows, reminder timers, jobs of no case (emails) and one job per idempotency key

Revision ID: 0017
Revises: 0018
Create Date: 2026-11-26 07:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import models.types

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_UNFINISHED = "state IN ('PENDING', 'RUNNING', 'STALLED')"
_PARTIAL = ("ix_job_due", ["next_attempt_at"]), ("ix_job_unfinished_key", ["serialization_key"])


def _job_columns_nullable(nullable: bool) -> None:
    """An email is a job of no case: its case, item and log entry are null. SQLite rebuilds the
    table for it, so the partial indexes are made again, with their condition, afterwards."""
    for name, _ in _PARTIAL:
        op.drop_index(name, table_name="job")
    with op.batch_alter_table("job", schema=None) as batch_op:
        for column in ("case_id", "workflow_item_id", "activity_id"):
            batch_op.alter_column(column, existing_type=sqlmodel.sql.sqltypes.AutoString(), nullable=nullable)
    for name, columns in _PARTIAL:
        op.create_index(
            name,
            "job",
            columns,
            unique=False,
            postgresql_where=sa.text(_UNFINISHED),
            sqlite_where=sa.text(_UNFINISHED),
        )


def upgrade() -> None:
    with op.batch_alter_table("user", schema=None) as batch_op:
        batch_op.add_column(sa.Column("email", sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch_op.add_column(
            sa.Column("time_zone", sqlmodel.sql.sqltypes.AutoString(), nullable=False, server_default="UTC")
        )
        batch_op.add_column(sa.Column("digest_hour", sa.Integer(), nullable=False, server_default="8"))
    with op.batch_alter_table("notification", schema=None) as batch_op:
        batch_op.add_column(sa.Column("in_app", sa.Boolean(), nullable=False, server_default=sa.true()))
    op.create_table(
        "notification_delivery",
        sa.Column("user_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("level", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("in_app", sa.Boolean(), nullable=False),
        sa.Column("email", sa.Boolean(), nullable=False),
        sa.Column("frequency", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"]),
        sa.PrimaryKeyConstraint("user_id", "level"),
    )
    op.create_table(
        "digest_schedule",
        sa.Column("user_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("frequency", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("window_start", models.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("due_at", models.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"]),
        sa.PrimaryKeyConstraint("user_id", "frequency"),
    )
    op.create_index("ix_digest_schedule_due_at", "digest_schedule", ["due_at"], unique=False)
    op.create_table(
        "reminder",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("case_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("enabled_action_id", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("fire_at", models.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("sent", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["case_id"], ["workflow_case.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_reminder_fire_at", "reminder", ["fire_at"], unique=False)
    op.create_index("ix_reminder_case_id", "reminder", ["case_id"], unique=False)
    _job_columns_nullable(True)
    op.create_index("ux_job_idempotency_key", "job", ["idempotency_key"], unique=True)


def downgrade() -> None:
    op.drop_index("ux_job_idempotency_key", table_name="job")
    op.execute("DELETE FROM job WHERE case_id IS NULL")  # emails: nothing before this revision knew them
    _job_columns_nullable(False)
    op.drop_index("ix_reminder_case_id", table_name="reminder")
    op.drop_index("ix_reminder_fire_at", table_name="reminder")
    op.drop_table("reminder")
    op.drop_index("ix_digest_schedule_due_at", table_name="digest_schedule")
    op.drop_table("digest_schedule")
    op.drop_table("notification_delivery")
    with op.batch_alter_table("notification", schema=None) as batch_op:
        batch_op.drop_column("in_app")
    with op.batch_alter_table("user", schema=None) as batch_op:
        batch_op.drop_column("digest_hour")
        batch_op.drop_column("time_zone")
        batch_op.drop_column("email")
