"""signed anchors: where each chain's archived part ends is signed with the secret key

Revision ID: 0028
Revises: 0027
Create Date: 2026-11-29 07:30:00

``archived_chain.signature``: HMAC-SHA256 of the anchor under the server's secret key
(engine/history/checkpoints.py ``sign_anchor``), written by `caseway archive-history` when a key
is configured. Without it, whoever could write the database could delete a chain's oldest live
entries and move its anchor up to them, and `verify-history` (without the archive's files) would
accept the shorter chain. Anchors recorded before this revision have none: with a key,
`verify-history` reports them unsigned until checked against the archive (``--archive``).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("archived_chain", sa.Column("signature", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("archived_chain") as batch_op:  # SQLite rebuilds the table
        batch_op.drop_column("signature")
