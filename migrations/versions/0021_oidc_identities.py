"""oidc: user identities at the organization's provider, and groups its groups claim manages

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-28 20:30:00

``user_identity`` maps a provider's (issuer, subject) to the Caseway user it signs in as
(engine/people/oidc_identities.py); ``group.managed`` is "OIDC" for a group whose members the
provider's groups claim sets. Both are new: nothing existing changes.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import models.types

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "user_identity",
        sa.Column("issuer", sa.String(), nullable=False),
        sa.Column("subject", sa.String(), nullable=False),
        sa.Column("user_id", sa.String(), nullable=False),
        sa.Column("created_at", models.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"]),
        sa.PrimaryKeyConstraint("issuer", "subject"),
    )
    op.create_index("ix_user_identity_user_id", "user_identity", ["user_id"])
    with op.batch_alter_table("group") as batch_op:
        batch_op.add_column(sa.Column("managed", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("group") as batch_op:
        batch_op.drop_column("managed")
    op.drop_index("ix_user_identity_user_id", "user_identity")
    op.drop_table("user_identity")
