"""Users, groups, membership and API tokens."""

from datetime import datetime

from sqlalchemy import Column, Index
from sqlmodel import Field, SQLModel

from models.types import UTCDateTime, utcnow


class User(SQLModel, table=True):
    __tablename__ = "user"

    id: str = Field(primary_key=True)
    login: str = Field(unique=True, index=True)
    display_name: str
    organization: str = ""
    password_hash: str
    is_admin: bool = False
    disabled: bool = False
    created_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
    # Where and when email reaches the user (engine/notify/delivery.py): an address, an IANA time zone
    # and the hour of that zone at which a daily digest goes out.
    email: str | None = None
    time_zone: str = Field(default="UTC", sa_column_kwargs={"server_default": "UTC"})
    digest_hour: int = Field(default=8, sa_column_kwargs={"server_default": "8"})
    # PERSON signs in with a password; SERVICE (an integration) has none and uses API tokens alone.
    kind: str = Field(default="PERSON", sa_column_kwargs={"server_default": "PERSON"})


class Group(SQLModel, table=True):
    __tablename__ = "group"

    id: str = Field(primary_key=True)
    name: str = Field(unique=True, index=True)
    display_name: str
    # "OIDC": the identity provider's groups claim sets who is in it (engine/people/oidc_identities.py).
    managed: str | None = None
    created_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))


class GroupMember(SQLModel, table=True):
    __tablename__ = "group_member"
    __table_args__ = (Index("ix_group_member_user", "user_id"),)

    group_id: str = Field(primary_key=True, foreign_key="group.id")
    user_id: str = Field(primary_key=True, foreign_key="user.id")


class ApiToken(SQLModel, table=True):
    __tablename__ = "api_token"

    id: str = Field(primary_key=True)
    user_id: str = Field(foreign_key="user.id", index=True)
    token_hash: str = Field(unique=True, index=True)
    expires_at: datetime = Field(sa_column=Column(UTCDateTime, nullable=False))
    revoked: bool = False
    created_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
    # An API token (createApiToken) has a name; a login's session token has none.
    name: str | None = None
    # The highest scope the token carries (READ, EXECUTE or WRITE); null: all its user may do.
    scopes: str | None = None
    # Written at most once a minute per token (engine/people/api_tokens.py's ``note_use``).
    last_used_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime, nullable=True))


class LoginAttempt(SQLModel, table=True):
    """Login attempts counted per key ("login:<name>", "pair:<name>|<address>" or
    "address:<address>"), shared by every server process, so guessing is throttled however many
    workers answer (engine/people/throttle.py). Indexed by ``last_failure_at``: forgotten counters
    are found and deleted a few at a time, without a table scan."""

    __tablename__ = "login_attempt"
    __table_args__ = (Index("ix_login_attempt_last_failure_at", "last_failure_at"),)

    key: str = Field(primary_key=True)
    failures: int = 0
    last_failure_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
    locked_until: datetime | None = Field(default=None, sa_column=Column(UTCDateTime, nullable=True))
