"""Digests: a user's notifications of one window, in one email (docs/api.md, "Email and digests").

A user who chose HOURLY or DAILY email for some level has a ``digest_schedule`` row per
frequency: the window it is filling (from ``window_start``) and when that window closes
(``due_at``: the top of an hour, or the user's ``digest_hour``, in the user's time zone). Once
it is due and ``SETTLE`` has passed, ``make_due`` closes the window at the latest boundary reached (so a server that was
down sends one digest for the time it missed, not one per hour), writes the digest's job, and
opens the next window, in one transaction. The job's key is ``digest:<user>:<frequency>:<window
end>``, unique among jobs: a window is sent once, whichever process (or how many at once)
finds it due, and across a crash (the row and the job commit together).

**Open tasks (seed 003, S003-28).** The digest of the frequency chosen for the ASSIGNED level
also lists every open task of its reader (engine/notify/open_tasks.py: enabled date, due date,
overdue marked, a link). A window sends when it holds a notification of its levels; one without
any still sends the open tasks, but at most once a day: when it reaches the user's
``digest_hour`` (every DAILY window does; one HOURLY window a day), so that an hourly choice is
not an hourly nag about the same tasks. Otherwise a window without news sends nothing.

What a message lists is read when it is sent (engine/notify/messages.py): only notifications
whose entry the reader may still read then (``engine.people.visibility``), as the in-app list
shows them, and the tasks whose item they may see; a message left with nothing is not sent.
"""

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.notify import mail, open_tasks
from engine.people import identity
from models import DigestSchedule, Notification, NotificationDelivery, User

FREQUENCIES = ("IMMEDIATE", "HOURLY", "DAILY")
DIGEST_FREQUENCIES = ("HOURLY", "DAILY")
MAX_LISTED = 50  # notifications one message lists; the rest are counted
MAX_COUNTED = 1000  # where that count stops ("1000 more")
MAX_RUN = 1000  # digests one runDigests call may make
SETTLE = timedelta(seconds=10)
"""How long after its boundary a window is closed. A notification is stamped when its
transaction starts (the log entry's time) and becomes visible when it commits: closing a window
the moment it ends would miss one stamped just before the boundary and committed just after,
and the next window, which starts at the boundary, would not list it either. A write lasts at
most the operation timeout (10 s by default), so a window closed this much later holds all of
its notifications."""


def next_boundary(after: datetime, *, frequency: str, zone: str, hour: int) -> datetime:
    """The first window end strictly after ``after``: the next top of an hour of the user's
    zone (HOURLY; zones half an hour off UTC included), or the next ``hour`` o'clock there (DAILY)."""
    tz = ZoneInfo(zone)
    local = after.astimezone(tz)
    if frequency == "HOURLY":
        top = local.replace(minute=0, second=0, microsecond=0).astimezone(UTC)
        return top + timedelta(hours=1)
    day: date = local.date()
    for _ in range(3):  # today, tomorrow, or the day after when a DST gap swallowed the hour
        candidate = datetime.combine(day, time(hour), tzinfo=tz).astimezone(UTC)
        if candidate > after:
            return candidate
        day += timedelta(days=1)
    raise AssertionError("a daily hour always comes within three days")


def latest_boundary(now: datetime, *, due_at: datetime, frequency: str, zone: str, hour: int) -> datetime:
    """The last window end at or before ``now`` (at least ``due_at``, which is one)."""
    period = timedelta(hours=1) if frequency == "HOURLY" else timedelta(days=1)
    start = max(due_at, now - period - timedelta(hours=3))  # a boundary lies within a period (DST: +3 h)
    end = due_at if start == due_at else next_boundary(start, frequency=frequency, zone=zone, hour=hour)
    while (following := next_boundary(end, frequency=frequency, zone=zone, hour=hour)) <= now:
        end = following
    return end


async def reschedule(session: AsyncSession, *, user: User, now: datetime) -> None:
    """Bring the user's digest rows in line with their choices: a row per frequency some level
    is emailed at (a new one's window starts now), none for the others; a change of time zone
    or hour moves the end of the open window."""
    chosen = set(
        await session.scalars(
            select(NotificationDelivery.frequency).where(
                NotificationDelivery.user_id == user.id,
                NotificationDelivery.email,
                NotificationDelivery.frequency.in_(DIGEST_FREQUENCIES),
            )
        )
    )
    rows = {
        row.frequency: row
        for row in await session.scalars(select(DigestSchedule).where(DigestSchedule.user_id == user.id))
    }
    for frequency in DIGEST_FREQUENCIES:
        row = rows.get(frequency)
        if frequency not in chosen:
            if row is not None:
                await session.delete(row)
            continue
        if row is None:
            row = DigestSchedule(user_id=user.id, frequency=frequency, window_start=now, due_at=now)
            session.add(row)
        row.due_at = next_boundary(
            max(row.window_start, now), frequency=frequency, zone=user.time_zone, hour=user.digest_hour
        )


_DUE = (
    select(DigestSchedule, User)
    .join(User, User.id == DigestSchedule.user_id)
    .order_by(DigestSchedule.due_at)
    .with_for_update(of=DigestSchedule, skip_locked=True)
)


@dataclass
class Made:
    jobs: int = 0  # digest jobs written
    empty: int = 0  # windows closed without a notification


async def make_due(session: AsyncSession, *, now: datetime, limit: int) -> Made:
    """Close up to ``limit`` windows due at ``now`` (locked: several processes each take other
    rows), each with its digest's job if it holds a notification of its levels."""
    made = Made()
    settled = now - SETTLE
    rows = (await session.execute(_DUE.where(DigestSchedule.due_at <= settled).limit(limit))).all()
    for row, user in rows:
        levels = sorted(
            await session.scalars(
                select(NotificationDelivery.level).where(
                    NotificationDelivery.user_id == user.id,
                    NotificationDelivery.email,
                    NotificationDelivery.frequency == row.frequency,
                )
            )
        )
        if not levels:  # the choice changed under us: nothing is emailed at this frequency now
            await session.execute(
                delete(DigestSchedule).where(
                    DigestSchedule.user_id == user.id, DigestSchedule.frequency == row.frequency
                )
            )
            made.empty += 1
            continue
        end = latest_boundary(
            settled, due_at=row.due_at, frequency=row.frequency, zone=user.time_zone, hour=user.digest_hour
        )
        window = (Notification.recipient_id == user.id, Notification.level.in_(levels))
        window += (Notification.created_at >= row.window_start, Notification.created_at < end)
        news = await session.scalar(select(Notification.id).where(*window).limit(1)) is not None
        if news or ("ASSIGNED" in levels and await _tasks_due(session, user, row.window_start, end, now)):
            input = {
                "user": user.id,
                "frequency": row.frequency,
                "levels": levels,
                "from": row.window_start.isoformat(),
                "to": end.isoformat(),
            }
            key = f"digest:{user.id}:{row.frequency}:{end.isoformat()}"
            made.jobs += await mail.enqueue(session, key=key, input=input, now=now)
        else:
            made.empty += 1
        row.window_start = end
        row.due_at = next_boundary(end, frequency=row.frequency, zone=user.time_zone, hour=user.digest_hour)
    return made


async def _tasks_due(session: AsyncSession, user: User, start: datetime, end: datetime, now: datetime) -> bool:
    """A window without news sends the open tasks when it reaches the user's digest hour and
    the user has an open task they may see."""
    if next_boundary(start, frequency="DAILY", zone=user.time_zone, hour=user.digest_hour) > end:
        return False
    actor = await identity.actor_for(session, user_id=user.id, login=user.login, is_admin=user.is_admin)
    today = now.astimezone(ZoneInfo(user.time_zone)).date()
    return bool((await open_tasks.open_tasks(session, actor=actor, today=today, limit=1, counted=False)).tasks)


async def next_due(session: AsyncSession) -> datetime | None:
    """When the next window may be closed (possibly already past): its end, settled."""
    due = await session.scalar(select(func.min(DigestSchedule.due_at)))
    return None if due is None else due + SETTLE


__all__ = [
    "DIGEST_FREQUENCIES",
    "FREQUENCIES",
    "MAX_COUNTED",
    "MAX_LISTED",
    "MAX_RUN",
    "Made",
    "latest_boundary",
    "make_due",
    "next_boundary",
    "next_due",
    "reschedule",
]
