"""Digests: a user's notifications of one window, in one email (docs/api.md, "Email and digests").

A user who chose HOURLY or DAILY email for some level has a ``digest_schedule`` row per
frequency: the window it is filling (from ``window_start``) and when that window closes
(``due_at``: the top of an hour, or the user's ``digest_hour``, in the user's time zone). Once
it is due and ``SETTLE`` has passed, ``make_due`` closes the window at the latest boundary reached (so a server that was
down sends one digest for the time it missed, not one per hour), writes the digest's job, and
opens the next window, in one transaction. The job's key is ``digest:<user>:<frequency>:<window
end>``, unique among jobs: a window is sent once, whichever process (or how many at once)
finds it due, and across a crash (the row and the job commit together). A window without a
notification of its levels sends nothing.

What a message lists is read when it is sent (``compose``): only notifications whose entry the
reader may still read then (``engine.people.visibility``), as the in-app list shows them; one about
an item they can no longer see is left out, and a message left with nothing is not sent.
"""

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from email.message import EmailMessage
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from engine.notify import mail
from engine.people import identity
from engine.people.visibility import entry_readable
from models import Activity, DigestSchedule, Notification, NotificationDelivery, User, WorkflowItem

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
        if await session.scalar(select(Notification.id).where(*window).limit(1)) is not None:
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


async def next_due(session: AsyncSession) -> datetime | None:
    """When the next window may be closed (possibly already past): its end, settled."""
    due = await session.scalar(select(func.min(DigestSchedule.due_at)))
    return None if due is None else due + SETTLE


# --- Composing a message, when it is sent ------------------------------------------------

_ACTOR = aliased(User, name="entry_actor")


def _describe(kind: str, action: str | None, data: dict[str, Any]) -> str:
    if kind == "action_executed":
        return f"executed {action}"
    if kind == "action_reminded":
        return f"reminder {data.get('reminder')} of {data.get('of')}: {action} is waiting"
    if kind == "action_escalated":
        return f"{action} has waited too long"
    if kind == "workflow_item_due":
        return "is due today"
    if kind == "workflow_item_overdue":
        return "is overdue"
    return kind.replace("_", " ") + (f" ({action})" if action else "")


async def compose(session: AsyncSession, input: dict[str, Any], *, key: str) -> EmailMessage | None:
    """The message a job's input stands for, from what its reader may read now; None when there
    is nothing left to send (no address, a disabled user, every notification hidden since)."""
    user = await session.get(User, input.get("user", ""))
    if user is None or user.disabled or not user.email or mail.config() is None:
        return None
    actor = await identity.actor_for(session, user_id=user.id, login=user.login, is_admin=user.is_admin)
    # the rule of every notification read: its entry readable by its recipient now (entry_readable
    # over the joined entry, as notification_readable says it for a bare notification)
    mine = [Notification.recipient_id == user.id, entry_readable(actor)]
    if "notifications" in input:
        mine.append(Notification.id.in_(list(input["notifications"])[:MAX_LISTED]))
    else:
        start, end = datetime.fromisoformat(input["from"]), datetime.fromisoformat(input["to"])
        mine += [
            Notification.level.in_(input["levels"]),
            Notification.created_at >= start,
            Notification.created_at < end,
        ]
    query = (
        select(Notification.level, Activity, WorkflowItem.display_name, _ACTOR.display_name)
        .join(Activity, Activity.id == Notification.activity_id)
        .outerjoin(WorkflowItem, WorkflowItem.id == Activity.workflow_item_id)
        .outerjoin(_ACTOR, _ACTOR.id == Activity.actor_id)
        .where(*mine)
        .order_by(Notification.created_at, Notification.id)
        .limit(MAX_LISTED)
    )
    rows = (await session.execute(query)).all()
    if not rows:
        return None
    tz = ZoneInfo(user.time_zone)
    lines = []
    for level, entry, item, who in rows:
        at = entry.at.astimezone(tz).strftime("%Y-%m-%d %H:%M")
        what = _describe(entry.kind, entry.action, entry.data)
        line = f"- {at} [{level}] {item or 'Caseway'}: {who or 'Caseway'} {what}"
        if entry.comment:
            line += f' — "{entry.comment[:200]}"'
        lines.append(line)
    more = 0
    if len(rows) == MAX_LISTED and "notifications" not in input:
        counted = (
            (select(Notification.id).join(Activity, Activity.id == Notification.activity_id).where(*mine))
            .limit(MAX_COUNTED + MAX_LISTED)
            .subquery()
        )
        more = (await session.scalar(select(func.count()).select_from(counted)) or 0) - MAX_LISTED
    levels = sorted({level for level, *_ in rows}) if "notifications" in input else list(input["levels"])
    frequency = input.get("frequency")
    title = f"{frequency.lower()} digest" if frequency else "notification"
    subject = f"Caseway {title}: {len(rows) + more} notification{'s' if len(rows) + more != 1 else ''}"
    unsubscribe = mail.unsubscribe_url(user.id, levels)
    body = [f"Hello {user.display_name},", "", *lines]
    if more:
        body.append(f"… and {more} more: see them in Caseway.")
    body += ["", f"Stop these emails ({', '.join(levels)}): {unsubscribe}"]
    message = EmailMessage()
    mail.headers(message, to=user.email, subject=subject, key=key, unsubscribe=unsubscribe)
    message.set_content("\n".join(body) + "\n")
    return message


__all__ = [
    "DIGEST_FREQUENCIES",
    "FREQUENCIES",
    "MAX_RUN",
    "Made",
    "compose",
    "latest_boundary",
    "make_due",
    "next_boundary",
    "next_due",
    "reschedule",
]
