"""Who a user is at the organization's identity provider (OpenID Connect)."""

from datetime import datetime

from sqlalchemy import Column
from sqlmodel import Field, SQLModel

from models.types import UTCDateTime, utcnow


class UserIdentity(SQLModel, table=True):
    """One (issuer, subject) pair a provider vouches for, and the Caseway user it signs in as.
    The subject, not the login, is the key: a provider never reuses a ``sub`` for another person,
    while a ``preferred_username`` may change or be given to someone else."""

    __tablename__ = "user_identity"

    issuer: str = Field(primary_key=True)
    subject: str = Field(primary_key=True)
    user_id: str = Field(foreign_key="user.id", index=True)
    created_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
