"""the dashboard's reads at a million items (issue 52)

Revision ID: 0024
Revises: 0019
Create Date: 2026-11-28 20:00:00

- ``ix_workflow_case_workflow_id_id`` (workflow_id, id): a pick list ranks the players of a
  workflow's newest cases (engine/cases/assignment.py), a backward range of this index per
  version instead of every case of the workflow.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0024"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_workflow_case_workflow_id_id", "workflow_case", ["workflow_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_workflow_case_workflow_id_id", table_name="workflow_case")
