"""jobs: a fencing token, and the per-key index on unfinished jobs only

``claims`` counts every claim of a job (never reset, not by ``retryJob`` either), so a runner
that outlived its lease cannot record an outcome over the runner that claimed the job after it:
``attempts`` could not fence, as a reconciliation reuses it and ``retryJob`` resets it.

The per-key check of a claim ("is a job of this key running, or an earlier one waiting?") now
reads only unfinished jobs; the old (serialization_key, id) index also held every finished job.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23 22:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_UNFINISHED = "state IN ('PENDING', 'RUNNING', 'STALLED')"


def upgrade() -> None:
    with op.batch_alter_table("job", schema=None) as batch_op:
        # Jobs written before start at 0: their next claim is 1, as for a new job.
        batch_op.add_column(sa.Column("claims", sa.Integer(), nullable=False, server_default="0"))
        batch_op.drop_index("ix_job_serialization_key_id")
        batch_op.create_index(
            "ix_job_unfinished_key",
            ["serialization_key"],
            unique=False,
            postgresql_where=sa.text(_UNFINISHED),
            sqlite_where=sa.text(_UNFINISHED),
        )


def downgrade() -> None:
    with op.batch_alter_table("job", schema=None) as batch_op:
        batch_op.drop_index("ix_job_unfinished_key")
        batch_op.create_index("ix_job_serialization_key_id", ["serialization_key", "id"], unique=False)
        batch_op.drop_column("claims")
