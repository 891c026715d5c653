"""the task index: (party, enabled instance) rows, so a task list is a range scan from the
viewer's parties (engine/cases/task_index.py keeps them)

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-23 22:45:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# engine/cases/task_index.py's rebuild_sql(), frozen here (tests/engine/test_task_index.py compares them).
REBUILD = """INSERT INTO task_assignment (party_id, enabled_action_id, case_id)
SELECT ea.assignee_party_id AS party_id, ea.id AS enabled_action_id, ea.case_id AS case_id
FROM enabled_action ea JOIN workflow_case c ON c.id = ea.case_id
WHERE ea.status = 'ENABLED' AND ea."trigger" = 'user' AND c.status IN ('ACTIVE', 'COMPLETED')
AND ea.assignee_party_id IS NOT NULL
UNION ALL
SELECT r.party_id AS party_id, ea.id AS enabled_action_id, ea.case_id AS case_id
FROM enabled_action ea JOIN workflow_case c ON c.id = ea.case_id
JOIN case_role_party r ON r.case_id = ea.case_id AND r.role = ea.assigned_role
WHERE ea.status = 'ENABLED' AND ea."trigger" = 'user' AND c.status IN ('ACTIVE', 'COMPLETED')
AND ea.assignee_party_id IS NULL
"""


def upgrade() -> None:
    op.create_table(
        "task_assignment",
        sa.Column("party_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("enabled_action_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("case_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.PrimaryKeyConstraint("party_id", "enabled_action_id"),
    )
    with op.batch_alter_table("task_assignment", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_task_assignment_case_id"), ["case_id"], unique=False)
    op.execute(REBUILD)  # an existing database's tasks, so its task lists are right at once


def downgrade() -> None:
    with op.batch_alter_table("task_assignment", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_task_assignment_case_id"))
    op.drop_table("task_assignment")
