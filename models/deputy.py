"""Deputyships: one user acts for another (absent) one during a period."""

from datetime import datetime

from sqlalchemy import Column, Index
from sqlmodel import Field, SQLModel

from models.types import UTCDateTime, utcnow


class Deputyship(SQLModel, table=True):
    """``deputy_id`` acts for ``user_id`` from ``starts_at`` (inclusive) until ``ends_at``
    (exclusive). Nothing runs at either instant: whether one is active is decided whenever it is
    read or used (engine/people/deputies.py). Indexed by deputy, for the question every task list and
    visibility check asks ("whom do I stand in for now?"), and by the absent user."""

    __tablename__ = "deputyship"
    __table_args__ = (
        Index("ix_deputyship_deputy_ends", "deputy_id", "ends_at"),
        Index("ix_deputyship_user_ends", "user_id", "ends_at"),
    )

    id: str = Field(primary_key=True)
    user_id: str = Field(foreign_key="user.id")
    deputy_id: str = Field(foreign_key="user.id")
    starts_at: datetime = Field(sa_column=Column(UTCDateTime, nullable=False))
    ends_at: datetime = Field(sa_column=Column(UTCDateTime, nullable=False))
    comment: str = ""
    created_by: str
    created_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
