"""caseway_chain_head: lock an activity chain and read its head in one round trip

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 08:10:00

Appending to a chain takes that chain's advisory lock and then reads its head; the read must
come after the lock, in a statement of its own (a statement sees what had committed when it
started). A VOLATILE PL/pgSQL function takes a fresh snapshot for each statement it runs, so
both fit in one call. PostgreSQL only: SQLite has a single writer and needs no lock.
"""

from collections.abc import Sequence

from alembic import op

revision: str = '0004'
down_revision: str | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# 730522: the class of the chain locks (any constant shared by every writer of the log).
CREATE = """
CREATE FUNCTION caseway_chain_head(chain_id text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(730522, hashtext(chain_id));
    RETURN (SELECT hash FROM activity WHERE chain = chain_id ORDER BY seq DESC LIMIT 1);
END
$$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        op.execute(CREATE)


def downgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        op.execute('DROP FUNCTION caseway_chain_head(text)')
