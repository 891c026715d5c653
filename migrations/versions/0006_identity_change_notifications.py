"""identity changes NOTIFY every server process

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 03:20:00

Server processes remember who a bearer token stands for for a few seconds instead of asking
the database on every request (server/actor_cache.py). A change to a token, a user or a group
membership, whoever makes it and however (the API, a tool, plain SQL), sends a notification
on ``caseway_identity`` when its transaction commits; each process's event hub listens and
forgets what it remembered. Statement-level triggers: one notification per statement, and
none for a new token (nobody can have remembered it). PostgreSQL only: SQLite has no
notifications; there a change made by another process takes effect within the cache's
lifetime (``CASEWAY_AUTH_CACHE_SECONDS``).
"""

from collections.abc import Sequence

from alembic import op

revision: str = '0006'
down_revision: str | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FUNCTION = """
CREATE FUNCTION caseway_identity_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('caseway_identity', '');
    RETURN NULL;
END
$$
"""
# table -> the changes that can alter who an existing token stands for
TRIGGERS = {
    'api_token': 'UPDATE OR DELETE OR TRUNCATE',
    'user': 'UPDATE OR DELETE OR TRUNCATE',
    'group_member': 'INSERT OR UPDATE OR DELETE OR TRUNCATE',
}


def upgrade() -> None:
    if op.get_bind().dialect.name != 'postgresql':
        return
    op.execute(FUNCTION)
    for table, events in TRIGGERS.items():
        op.execute(
            f'CREATE TRIGGER caseway_identity_changed AFTER {events} ON "{table}" '
            'FOR EACH STATEMENT EXECUTE FUNCTION caseway_identity_changed()'
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != 'postgresql':
        return
    for table in TRIGGERS:
        op.execute(f'DROP TRIGGER caseway_identity_changed ON "{table}"')
    op.execute('DROP FUNCTION caseway_identity_changed()')
