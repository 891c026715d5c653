"""history_checkpoint: a signed sequence of checkpoints instead of one row per chain

Revision ID: 0018
Revises: 0016
Create Date: 2026-11-26 07:40:00

Each checkpoint now names the one before it (counter and signature) and is kept, so a deleted
or rolled-back checkpoint shows (issue 40, finding 2). The checkpoints of the old form cannot be
re-signed without the server's key, which a migration does not have: they are dropped, and the
next checkpoint pass signs the head of every chain again (`caseway checkpoint-history`).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import models.types

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.drop_table("history_checkpoint")
    op.create_table(
        "history_checkpoint",
        sa.Column("counter", _SEQ, autoincrement=False, nullable=False),
        sa.Column("chain", sa.String(), nullable=False),
        sa.Column("seq", _SEQ, nullable=False),
        sa.Column("hash", sa.String(), nullable=False),
        sa.Column("signed_at", models.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("prev_counter", _SEQ, nullable=True),
        sa.Column("prev_signature", sa.String(), nullable=True),
        sa.Column("signature", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("counter"),
    )
    op.create_index("ix_history_checkpoint_chain_counter", "history_checkpoint", ["chain", "counter"])
    op.create_index("ix_history_checkpoint_seq", "history_checkpoint", ["seq"])


def downgrade() -> None:
    # Back to one row per chain: its newest checkpoint (signed in the new form, so the old code
    # reports them as bad signatures until its next pass; nothing better is possible without the key).
    op.drop_table("history_checkpoint")
    op.create_table(
        "history_checkpoint",
        sa.Column("chain", sa.String(), nullable=False),
        sa.Column("seq", _SEQ, nullable=False),
        sa.Column("hash", sa.String(), nullable=False),
        sa.Column("signed_at", models.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("signature", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("chain"),
    )
    op.create_index("ix_history_checkpoint_seq", "history_checkpoint", ["seq"])
