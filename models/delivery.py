"""How notifications reach people beyond the in-app list: each user's choice per level, the
digest windows still to send, and the reminders of waiting work (engine/notify/delivery.py,
engine/notify/digests.py, engine/cases/reminders.py)."""

from datetime import datetime

from sqlalchemy import Column, Index
from sqlmodel import Field, SQLModel

from models.types import UTCDateTime


class NotificationDelivery(SQLModel, table=True):
    """A user's choice for one notification level; a level without a row is in-app only, as
    notifications always were. ``frequency`` says when email goes out (IMMEDIATE, HOURLY or
    DAILY); it means nothing while ``email`` is off."""

    __tablename__ = "notification_delivery"

    user_id: str = Field(primary_key=True, foreign_key="user.id")
    level: str = Field(primary_key=True)
    in_app: bool = True
    email: bool = False
    frequency: str = "IMMEDIATE"


class DigestSchedule(SQLModel, table=True):
    """The next digest of one user and frequency: it covers the notifications from
    ``window_start`` to the window's end, and falls due at ``due_at`` (that end, in the user's
    time zone). A row exists while some level of the user is emailed at that frequency."""

    __tablename__ = "digest_schedule"
    __table_args__ = (Index("ix_digest_schedule_due_at", "due_at"),)

    user_id: str = Field(primary_key=True, foreign_key="user.id")
    frequency: str = Field(primary_key=True)
    window_start: datetime = Field(sa_column=Column(UTCDateTime, nullable=False))
    due_at: datetime = Field(sa_column=Column(UTCDateTime, nullable=False))


class Reminder(SQLModel, table=True):
    """A timer that tells people about waiting work rather than firing an action: a reminder or
    an escalation of an enabled instance, or an item's due date (``kind``: REMIND, ESCALATE,
    DUE, OVERDUE). Its id names what it is about (``remind:<instance>``, ``due:<item>``), so
    there is one of each. ``sent`` counts the reminders already sent."""

    __tablename__ = "reminder"
    __table_args__ = (Index("ix_reminder_fire_at", "fire_at"), Index("ix_reminder_case_id", "case_id"))

    id: str = Field(primary_key=True)
    kind: str
    case_id: str = Field(foreign_key="workflow_case.id")
    enabled_action_id: str | None = None
    fire_at: datetime = Field(sa_column=Column(UTCDateTime, nullable=False))
    sent: int = 0
