"""indexes for a project's history filtered by kind or by actor

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-23 22:40:00

`history(filter: {kind})` and `history(filter: {actor})` of a project read its entries in seq
order, the filter's first; by ``ix_activity_project_seq`` alone that scans every entry of the
project until a page is found, all of them when few match (bench R5 at 1M items: 8,240 entries
read for one of a commenter's, 10x what the same page reads at 10k items, and every one a heap
visit on a server whose projects' entries are interleaved). With the filter's column between
the project and the seq, a page is an index range of its matching entries. Plain CREATE INDEX
(the migrations run in a transaction): on a database of 1M items it holds writes to ``activity``
for the seconds the two builds take.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("activity", schema=None) as batch_op:
        batch_op.create_index("ix_activity_project_kind_seq", ["project_id", "kind", "seq"], unique=False)
        batch_op.create_index("ix_activity_project_actor_seq", ["project_id", "actor_id", "seq"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("activity", schema=None) as batch_op:
        batch_op.drop_index("ix_activity_project_actor_seq")
        batch_op.drop_index("ix_activity_project_kind_seq")
