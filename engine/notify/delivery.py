"""How each user's notifications reach them (docs/api.md, "Email and digests").

Per notification level a user chooses channels, ``IN_APP`` and/or ``EMAIL``, and for email a
frequency: ``IMMEDIATE`` (a message per transaction that notified them), ``HOURLY`` or ``DAILY``
(a digest per window, engine/notify/digests.py). A level nobody chose for is in-app only, as ever.

Notifications are still written as before (engine/notify/notifications.py); just before the
transaction commits, ``_deliver`` reads the choices of everyone it notified (one statement):
a row of a level without IN_APP is kept for email but left out of every in-app list and stream,
and immediate email becomes a job written in the same transaction. The ``email`` job kind
composes each message when it is sent, from what its reader may see then.
"""

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any
from zoneinfo import available_timezones

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.clock import SYSTEM_CLOCK
from engine.errors import DomainError, DomainErrors, ErrorCode, not_found
from engine.jobs.kinds import JobCall, JobKind, Permanent, register_job_kind
from engine.notify import digests, mail, messages
from engine.people.actors import Actor
from models import Notification, NotificationDelivery, User, unit_of_work

LEVELS = ("ASSIGNED", "ROLE", "CASE", "WORKFLOW")
CHANNELS = ("IN_APP", "EMAIL")
MAX_EMAIL = 254  # characters of an address (RFC 5321's path limit)
MAX_PER_MESSAGE = digests.MAX_LISTED  # notifications of one immediate message
_ADDRESS = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
UNSET: Any = object()


@dataclass(frozen=True, slots=True)
class LevelDelivery:
    level: str
    channels: tuple[str, ...] = ("IN_APP",)
    frequency: str = "IMMEDIATE"


@cache
def time_zones() -> frozenset[str]:
    return frozenset(available_timezones())


async def deliveries(session: AsyncSession, *, user_id: str) -> list[LevelDelivery]:
    """The user's choice for every level, in level order (defaults where they chose nothing)."""
    rows = {
        row.level: row
        for row in await session.scalars(select(NotificationDelivery).where(NotificationDelivery.user_id == user_id))
    }
    return [as_choice(level, rows.get(level)) for level in LEVELS]


def as_choice(level: str, row: NotificationDelivery | None) -> LevelDelivery:
    if row is None:
        return LevelDelivery(level)
    channels = tuple(c for c, on in (("IN_APP", row.in_app), ("EMAIL", row.email)) if on)
    return LevelDelivery(level, channels, row.frequency)


def _check(
    user: User, email: Any, time_zone: Any, digest_hour: Any, levels: list[LevelDelivery] | None
) -> list[DomainError]:
    problems = []
    if email is not UNSET and email is not None and email != "":
        if len(email) > MAX_EMAIL or not _ADDRESS.fullmatch(email) or not email.isprintable():
            problems.append(invalid("email is an address such as ada@example.org.", "email"))
    if time_zone is not UNSET and time_zone not in time_zones():
        shown = repr(time_zone[:64]) if isinstance(time_zone, str) else "that"
        problems.append(invalid(f"Unknown time zone {shown}: an IANA name such as Europe/Berlin.", "timeZone"))
    if digest_hour is not UNSET and not (isinstance(digest_hour, int) and 0 <= digest_hour <= 23):
        problems.append(invalid("digestHour is an hour of the day, 0 to 23.", "digestHour"))
    seen: set[str] = set()
    address = user.email if email is UNSET else email
    if levels is not None and len(levels) > len(LEVELS):  # bounded before any is looked at
        return [invalid(f"levels holds at most {len(LEVELS)} choices, one per level.", "levels")]
    for i, choice in enumerate(levels or []):
        path = ["levels", str(i)]
        if choice.level not in LEVELS:
            problems.append(invalid(f"level is one of {', '.join(LEVELS)}.", *path, "level"))
        elif choice.level in seen:
            problems.append(invalid(f"{choice.level} is given twice.", *path, "level"))
        seen.add(choice.level)
        if (
            not choice.channels
            or set(choice.channels) - set(CHANNELS)
            or len(set(choice.channels)) < len(choice.channels)
        ):
            problems.append(invalid("channels is IN_APP, EMAIL or both.", *path, "channels"))
        if choice.frequency not in digests.FREQUENCIES:
            problems.append(invalid(f"frequency is one of {', '.join(digests.FREQUENCIES)}.", *path, "frequency"))
        if "EMAIL" in choice.channels and mail.config() is None:
            problems.append(invalid("This server sends no email (CASEWAY_SMTP_URL is not set).", *path, "channels"))
        elif "EMAIL" in choice.channels and not address:
            problems.append(invalid("EMAIL needs an email address: give email.", *path, "channels"))
    return problems


def invalid(message: str, *field: str) -> DomainError:
    return DomainError(ErrorCode.INVALID_INPUT, message, list(field))


async def set_delivery(
    session: AsyncSession,
    *,
    actor: Actor,
    user_id: str | None = None,
    email: Any = UNSET,
    time_zone: Any = UNSET,
    digest_hour: Any = UNSET,
    levels: list[LevelDelivery] | None = None,
    now: datetime | None = None,
) -> User:
    """``setNotificationDelivery``: one's own address, time zone, digest hour and choices per
    level (the levels given; the others keep theirs). An admin may set anyone's. Every problem
    is reported at once, and nothing changes unless there is none."""
    target = user_id or actor.user_id
    if target != actor.user_id and not actor.is_admin:
        raise DomainError(ErrorCode.NOT_ALLOWED, "Only an admin may choose how another user is notified.", ["userId"])
    user = await session.get(User, target, with_for_update=True) if target.startswith("usr_") else None
    if user is None:
        raise not_found("user", target, "userId")
    problems = _check(user, email, time_zone, digest_hour, levels)
    if problems:
        raise DomainErrors(problems[:20])
    if email is not UNSET:
        user.email = email or None
    if time_zone is not UNSET:
        user.time_zone = time_zone
    if digest_hour is not UNSET:
        user.digest_hour = digest_hour
    for choice in levels or []:
        row = await session.get(NotificationDelivery, (user.id, choice.level))
        if row is None:
            row = NotificationDelivery(user_id=user.id, level=choice.level)
            session.add(row)
        row.in_app, row.email, row.frequency = "IN_APP" in choice.channels, "EMAIL" in choice.channels, choice.frequency
    if not user.email:  # no address left: no level can be emailed
        for row in await session.scalars(
            select(NotificationDelivery).where(NotificationDelivery.user_id == user.id, NotificationDelivery.email)
        ):
            row.email, row.in_app = False, True
    await session.flush()
    await digests.reschedule(session, user=user, now=now or SYSTEM_CLOCK.now())
    return user


async def unsubscribe(session: AsyncSession, *, user_id: str, levels: list[str], now: datetime) -> int:
    """A signed link's one click: email off for these levels of the user (in-app on, so that
    the level still reaches them somewhere); how many levels changed."""
    user = await session.get(User, user_id, with_for_update=True)
    if user is None:
        return 0
    changed = 0
    for level in (level for level in levels if level in LEVELS):
        row = await session.get(NotificationDelivery, (user.id, level))
        if row is not None and row.email:
            row.email, row.in_app = False, True
            changed += 1
    await session.flush()
    await digests.reschedule(session, user=user, now=now)
    return changed


# --- Notifications just written ----------------------------------------------------------

NOTIFIED = "caseway.notified"


def notified(session: AsyncSession, rows: list[Notification]) -> None:
    """Notifications this transaction wrote; their delivery is settled just before it commits."""
    if not rows:
        return
    pending = session.info.setdefault(NOTIFIED, [])
    if not pending:  # first, before the log's own hook: no lock is held while choices are read
        unit_of_work(session).before_commit.insert(0, _deliver)
    pending.extend(rows)


async def _deliver(session: AsyncSession) -> None:
    # Only the rows still in the session: a savepoint that rolled back (a migration's batch,
    # engine/migration/migration_moves.py) took its rows out of it, and what it notified never
    # happened, so it must not be emailed either.
    rows: list[Notification] = [row for row in session.info.pop(NOTIFIED, []) if row in session]
    if not rows:
        return
    users = sorted({row.recipient_id for row in rows})
    choices = {
        (row.user_id, row.level): row
        for row in await session.scalars(select(NotificationDelivery).where(NotificationDelivery.user_id.in_(users)))
    }
    if not choices:
        return
    immediate: dict[str, list[Notification]] = defaultdict(list)
    for row in rows:
        choice = choices.get((row.recipient_id, row.level))
        if choice is None:
            continue
        if not choice.in_app:
            row.in_app = False
        if choice.email and choice.frequency == "IMMEDIATE" and mail.config() is not None:
            immediate[row.recipient_id].append(row)
    for user_id, mine in immediate.items():
        for start in range(0, len(mine), MAX_PER_MESSAGE):
            part = mine[start : start + MAX_PER_MESSAGE]
            input = {"user": user_id, "notifications": [row.id for row in part]}
            # due at once: a notification stamped later (a timer run for a time to come) is news now
            due = min(part[0].created_at, SYSTEM_CLOCK.now())
            await mail.enqueue(session, key=f"email:{part[0].id}", input=input, now=due)


# --- The job kind that sends -------------------------------------------------------------


class Email(JobKind):
    """One message: composed from the database when it runs (what its reader may see then),
    then handed to the SMTP server. Nothing to send (every notification hidden since, no
    address any more): done, without a message."""

    name = mail.KIND
    first_step = "send"

    def check_args(self, args: Mapping[str, Any], *, defining: bool) -> list[str]:
        return ["email is sent by notification delivery (setNotificationDelivery), not named by a workflow."]

    def timeout_seconds(self, input: Mapping[str, Any]) -> float:
        return mail.SMTP_TIMEOUT + 5.0

    async def run(self, call: JobCall) -> dict[str, Any]:
        db = mail.database()
        if db is None or mail.config() is None:
            raise Permanent("NO_SMTP", "No SMTP server is configured (CASEWAY_SMTP_URL).")
        async with db.read_session() as session:
            message = await messages.compose(session, dict(call.input), key=call.idempotency_key)
        if message is None:
            return {"skipped": "Nothing its reader may still see, or no address."}
        await mail.send(message)
        return {"sent": {"to": message["To"], "messageId": message["Message-ID"], "attempt": call.attempt}}


EMAIL = register_job_kind(Email())

__all__ = [
    "CHANNELS",
    "EMAIL",
    "LEVELS",
    "LevelDelivery",
    "as_choice",
    "deliveries",
    "notified",
    "set_delivery",
    "time_zones",
    "unsubscribe",
]
