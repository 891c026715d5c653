"""the dashboard's reads at a million items (issue 52)

Revision ID: 0024
Revises: 0022
Create Date: 2026-11-28 20:00:00

- ``ix_workflow_case_workflow_id_id`` (workflow_id, id): a pick list ranks the players of a
  workflow's newest cases (engine/cases/assignment.py), a backward range of this index per
  version instead of every case of the workflow.
- ``task_assignment.due_date`` and ``ix_task_assignment_party_due`` (party, due date, instance):
  ``myTasks(orderBy: DUE_DATE)`` reads each party's tasks in that order from the index instead
  of sorting all of them; the rows are rebuilt with engine/cases/task_index.py's statement
  (frozen here: tests/api/test_task_index.py compares them).
- ``task_count``: each party's number of index rows, kept by the same statement that settles
  the rows, so ``myTasks { totalCount }`` is read, not counted.
- ``ix_notification_unread`` (recipient, id) of the unread in-app rows: the unread badge counts
  a range of them instead of scanning every notification (50,000 for the first 1,000 unread).

At a million tasks the rebuild writes a million rows: plan a minute.
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0024"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# engine/cases/task_index.py's rebuild_sql() and count_sql(), frozen here.
REBUILD = """INSERT INTO task_assignment (party_id, enabled_action_id, case_id, due_date)
SELECT ea.assignee_party_id AS party_id, ea.id AS enabled_action_id, ea.case_id AS case_id, wi.due_date AS due_date
FROM enabled_action ea JOIN workflow_case c ON c.id = ea.case_id JOIN workflow_item wi ON wi.id = c.object_id
WHERE ea.status = 'ENABLED' AND ea."trigger" = 'user' AND c.status IN ('ACTIVE', 'COMPLETED')
AND ea.assignee_party_id IS NOT NULL
UNION ALL
SELECT r.party_id AS party_id, ea.id AS enabled_action_id, ea.case_id AS case_id, wi.due_date AS due_date
FROM enabled_action ea JOIN workflow_case c ON c.id = ea.case_id JOIN workflow_item wi ON wi.id = c.object_id
JOIN case_role_party r ON r.case_id = ea.case_id AND r.role = ea.assigned_role
WHERE ea.status = 'ENABLED' AND ea."trigger" = 'user' AND c.status IN ('ACTIVE', 'COMPLETED')
AND ea.assignee_party_id IS NULL
"""
COUNT = "INSERT INTO task_count (party_id, tasks) SELECT party_id, count(*) FROM task_assignment GROUP BY party_id"


def upgrade() -> None:
    op.create_index("ix_workflow_case_workflow_id_id", "workflow_case", ["workflow_id", "id"])
    op.execute("DELETE FROM task_assignment")
    with op.batch_alter_table("task_assignment", schema=None) as batch_op:
        batch_op.add_column(sa.Column("due_date", sa.Date(), nullable=True))
    op.execute(REBUILD)
    op.create_index("ix_task_assignment_party_due", "task_assignment", ["party_id", "due_date", "enabled_action_id"])
    op.create_table(
        "task_count",
        sa.Column("party_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("tasks", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("party_id"),
    )
    op.execute(COUNT)
    unread = sa.text("read_at IS NULL AND in_app")
    op.create_index(
        "ix_notification_unread",
        "notification",
        ["recipient_id", "id"],
        postgresql_where=unread,
        sqlite_where=unread,
    )


def downgrade() -> None:
    op.drop_index("ix_notification_unread", table_name="notification")
    op.drop_table("task_count")
    op.drop_index("ix_task_assignment_party_due", table_name="task_assignment")
    with op.batch_alter_table("task_assignment", schema=None) as batch_op:
        batch_op.drop_column("due_date")
    op.drop_index("ix_workflow_case_workflow_id_id", table_name="workflow_case")
