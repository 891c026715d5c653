"""service users and API tokens: named, scoped tokens, their last use, and the token an entry came through

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28 20:30:00

``user.kind`` tells a person (signs in with a password) from a service user (no password, API
tokens only). An ``api_token`` row with a ``name`` is an API token (createApiToken), one without
is a login's session token; ``scopes`` narrows what a token may do (null: everything its user
may), ``last_used_at`` is written at most once a minute per token. ``activity.via`` names the API
token an entry was written through.

``last_used_at`` changes nothing about who a token stands for, so its writes must not make every
server process forget the actors it remembers: migration 0006's trigger on ``api_token`` fires,
from now on, only for updates of the columns that do (PostgreSQL's ``UPDATE OF``).
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import models.types

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TRIGGER = (
    'CREATE TRIGGER caseway_identity_changed AFTER {events} ON "api_token" '
    "FOR EACH STATEMENT EXECUTE FUNCTION caseway_identity_changed()"
)
# The columns whose change alters who an existing token stands for, or whether it works.
_IDENTITY_COLUMNS = "UPDATE OF id, user_id, token_hash, expires_at, revoked, scopes, name OR DELETE OR TRUNCATE"


def upgrade() -> None:
    op.add_column(
        "user", sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(), nullable=False, server_default="PERSON")
    )
    op.add_column("api_token", sa.Column("name", sqlmodel.sql.sqltypes.AutoString(), nullable=True))
    op.add_column("api_token", sa.Column("scopes", sqlmodel.sql.sqltypes.AutoString(), nullable=True))
    op.add_column("api_token", sa.Column("last_used_at", models.types.UTCDateTime(timezone=True), nullable=True))
    op.add_column("activity", sa.Column("via", sqlmodel.sql.sqltypes.AutoString(), nullable=True))
    if op.get_bind().dialect.name == "postgresql":
        op.execute('DROP TRIGGER caseway_identity_changed ON "api_token"')
        op.execute(_TRIGGER.format(events=_IDENTITY_COLUMNS))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute('DROP TRIGGER caseway_identity_changed ON "api_token"')
        op.execute(_TRIGGER.format(events="UPDATE OR DELETE OR TRUNCATE"))
    op.drop_column("activity", "via")
    for column in ("last_used_at", "scopes", "name"):
        op.drop_column("api_token", column)
    op.drop_column("user", "kind")
