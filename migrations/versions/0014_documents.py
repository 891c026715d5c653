"""documents: what was uploaded, by whom, when, where its bytes are stored, and its removal

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-23 22:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import models.types

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # The defaults fill rows written before uploads existed (none were: nothing created one).
    with op.batch_alter_table("document", schema=None) as batch_op:
        batch_op.add_column(sa.Column("storage_key", sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch_op.add_column(sa.Column("size", sa.BigInteger(), nullable=False, server_default="0"))
        batch_op.add_column(
            sa.Column(
                "content_type",
                sqlmodel.sql.sqltypes.AutoString(),
                nullable=False,
                server_default="application/octet-stream",
            )
        )
        batch_op.add_column(
            sa.Column(
                "added_at",
                models.types.UTCDateTime(timezone=True),
                nullable=False,
                server_default=sa.text("CURRENT_TIMESTAMP"),
            )
        )
        batch_op.add_column(sa.Column("added_by", sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch_op.add_column(sa.Column("removed_at", models.types.UTCDateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("removed_by", sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch_op.create_index("ix_document_storage_key", ["storage_key"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("document", schema=None) as batch_op:
        batch_op.drop_index("ix_document_storage_key")
        batch_op.drop_column("removed_by")
        batch_op.drop_column("removed_at")
        batch_op.drop_column("added_by")
        batch_op.drop_column("added_at")
        batch_op.drop_column("content_type")
        batch_op.drop_column("size")
        batch_op.drop_column("storage_key")
