"""Notifications: at most one per user per activity entry, and what users subscribed to."""

from datetime import datetime

from sqlalchemy import Column, Index, UniqueConstraint, text, true
from sqlmodel import Field, SQLModel

from models.types import UTCDateTime, utcnow


class Notification(SQLModel, table=True):
    __tablename__ = "notification"
    __table_args__ = (
        UniqueConstraint("recipient_id", "activity_id"),
        Index("ix_notification_recipient", "recipient_id", "id"),
        Index("ix_notification_activity", "activity_id"),
        # The unread badge (``unreadCount``): a range of the recipient's unread rows, not a scan
        # of every notification for the first thousand unread (issue 52).
        Index(
            "ix_notification_unread",
            "recipient_id",
            "id",
            postgresql_where=text("read_at IS NULL AND in_app"),
            sqlite_where=text("read_at IS NULL AND in_app"),
        ),
    )

    id: str = Field(primary_key=True)
    recipient_id: str = Field(foreign_key="user.id")
    activity_id: str
    level: str  # ASSIGNED | ROLE | CASE | WORKFLOW: why this user heard of it
    created_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
    read_at: datetime | None = Field(default=None, sa_column=Column(UTCDateTime))
    # False when the recipient chose email alone for its level (engine/notify/delivery.py): the row is
    # kept for their digests, and left out of every in-app list, count and stream.
    in_app: bool = Field(default=True, sa_column_kwargs={"server_default": true()})


class NotificationSubscription(SQLModel, table=True):
    """Opt-in levels: ROLE (target ''), CASE (a workflow item), WORKFLOW (a subproject or workflow)."""

    __tablename__ = "notification_subscription"
    __table_args__ = (Index("ix_notification_subscription_target", "level", "target_id"),)

    user_id: str = Field(primary_key=True, foreign_key="user.id")
    level: str = Field(primary_key=True)
    target_id: str = Field(default="", primary_key=True)
    created_at: datetime = Field(default_factory=utcnow, sa_column=Column(UTCDateTime, nullable=False))
