"""an index for the sweepers' next suspension end

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23 18:00:00

Every sweep of every server process asks which SUSPENDED case's ``suspended_until`` comes
first (engine/cases/lifecycle.py ``next_suspension_end``) and which are due; without an index that
is a scan of every case.
"""

from collections.abc import Sequence

from alembic import op

revision: str = '0009'
down_revision: str | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('workflow_case', schema=None) as batch_op:
        batch_op.create_index('ix_workflow_case_status_suspended_until', ['status', 'suspended_until'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('workflow_case', schema=None) as batch_op:
        batch_op.drop_index('ix_workflow_case_status_suspended_until')
