"""failed-login counters and signed history checkpoints

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 14:00:00

``login_attempt`` counts login attempts per login name, per (login name, client address) and
per client address in the database, so every server process throttles the same guesser; its
index on ``last_failure_at`` lets forgotten counters be deleted a few at a time. ``history_checkpoint`` holds
the newest signed head of each activity hash chain: the signature uses a key from the
server's settings, never stored in the database, so a rewrite of the log up to a checkpoint
is detected.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import models.types

revision: str = '0007'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'login_attempt',
        sa.Column('key', sa.String(), nullable=False),
        sa.Column('failures', sa.Integer(), nullable=False),
        sa.Column('last_failure_at', models.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column('locked_until', models.types.UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint('key'),
    )
    op.create_index('ix_login_attempt_last_failure_at', 'login_attempt', ['last_failure_at'], unique=False)
    op.create_table(
        'history_checkpoint',
        sa.Column('chain', sa.String(), nullable=False),
        sa.Column('seq', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
        sa.Column('hash', sa.String(), nullable=False),
        sa.Column('signed_at', models.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column('signature', sa.String(), nullable=False),
        sa.PrimaryKeyConstraint('chain'),
    )


def downgrade() -> None:
    op.drop_table('history_checkpoint')
    op.drop_index('ix_login_attempt_last_failure_at', table_name='login_attempt')
    op.drop_table('login_attempt')
