"""Notifications: four levels, at most one notification per user per activity.

1. ASSIGNED  - you are assigned to an action this activity enabled (always on)
2. ROLE      - any case where you play a role (opt-in)
3. CASE      - a workflow item you subscribed to (opt-in)
4. WORKFLOW  - every case of a subproject or workflow you subscribed to (opt-in)
A user gets the first level that applies; the actor is never notified of their own activity,
and nobody hears of an activity they may not read (``engine.people.visibility.entry_readable``). Rows
are written in the activity's transaction; the rule is checked again whenever they are read
(``readable_notifications``), so a revoked grant hides what it had let through.
"""

from collections.abc import Iterable

from sqlalchemy import ColumnElement, and_, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from engine import validation
from engine.clock import SYSTEM_CLOCK
from engine.errors import DomainError, ErrorCode, not_found
from engine.history.activity import LogEntry
from engine.notify import delivery
from engine.notify.subscribers import OPT_IN_LEVELS, CaseFacts, subscribers_query
from engine.people import deputies
from engine.people.actors import Actor
from engine.people.visibility import HISTORY_INTENTS, notification_readable
from models import (
    GroupMember,
    Notification,
    NotificationSubscription,
    Permission,
    User,
    kind_of,
    new_id,
)

LEVELS = ("ASSIGNED", "ROLE", "CASE", "WORKFLOW")


async def users_of(session: AsyncSession, parties: Iterable[str]) -> set[str]:
    """Parties expanded to users: users as they are, groups to their members."""
    parties = set(parties)
    users = {p for p in parties if kind_of(p) == "User"}
    groups = parties - users
    if groups:
        users |= set((await session.scalars(select(GroupMember.user_id).where(GroupMember.group_id.in_(groups)))).all())
    return users


# Built once: every change that is not to a locked case asks it (engine.cases.context reads it
# with the case otherwise).
_SUBSCRIBERS = subscribers_query()


async def _subscribers(session: AsyncSession, ctx: CaseFacts) -> dict[str, set[str]]:
    """Who opted in, per level, to news of this case (see ``subscribers_query``)."""
    if ctx.subscribers is not None:
        return ctx.subscribers
    params = {"item": ctx.item.id, "case": ctx.case.id, "subproject": ctx.subproject.id, "workflow": ctx.workflow_id}
    result: dict[str, set[str]] = {level: set() for level in OPT_IN_LEVELS}
    for level, user_id in await session.execute(_SUBSCRIBERS, params):
        result[level].add(user_id)
    return result


async def notify(
    ctx: CaseFacts, entry: LogEntry, *, assigned_parties: Iterable[str], already: set[str] | None = None
) -> set[str]:
    """Write the notifications of one case activity; returns who heard of it (and the actor).
    ``already``: users who heard of the activity this one follows from (a child's completion
    that fired its parent): they are not told twice, unless newly assigned."""
    session = ctx.session
    role_players = await users_of(session, {p for parties in ctx.roles.values() for p in parties})
    assigned = await users_of(session, assigned_parties)
    subscribed = await _subscribers(session, ctx)
    levels: list[tuple[str, set[str]]] = [
        ("ASSIGNED", assigned),
        ("ROLE", role_players & subscribed["ROLE"]),
        ("CASE", subscribed["CASE"]),
        ("WORKFLOW", subscribed["WORKFLOW"]),
    ]
    # Assignees and role players may read the case's log; other subscribers need viewHistory.
    may_read = role_players | assigned
    outsiders = (subscribed["CASE"] | subscribed["WORKFLOW"]) - may_read
    if outsiders:
        may_read |= await _may_read_history(session, ctx, outsiders)
    notified: set[str] = {entry.actor_id or ""}
    written: list[Notification] = []
    heard: dict[str, str] = {}
    for level, users in levels:
        if already and level != "ASSIGNED":
            users = users - already
        for user_id in sorted((users & may_read) - notified):
            written.append(
                Notification(
                    id=new_id("ntf"), recipient_id=user_id, activity_id=entry.id, level=level, created_at=entry.at
                )
            )
            notified.add(user_id)
            heard[user_id] = level
    session.add_all(written)
    deputized = await deputies.notify_deputies(session, entry, heard, notified)
    notified |= deputized
    if deputized:  # the deputies' copies, still pending: they reach them as they chose, too
        written += [
            row
            for row in session.new
            if isinstance(row, Notification) and row.activity_id == entry.id and row.recipient_id in deputized
        ]
    delivery.notified(session, written)  # in-app or not, email: settled before the commit
    # Not flushed here: the rows go with the operation's other writes, by its next read or at
    # commit (a timer's firing sends its instance, state and case changes in one flush).
    return notified | (already or set())


async def _may_read_history(session: AsyncSession, ctx: CaseFacts, user_ids: set[str]) -> set[str]:
    """Which of these users may read the case's entries by a grant: viewHistory on its item,
    subproject or project (themselves or through a group), or admins (engine.people.visibility)."""
    resources = {
        ctx.item.id: HISTORY_INTENTS["workflow_item_id"],
        ctx.subproject.id: HISTORY_INTENTS["subproject_id"],
        ctx.subproject.project_id: HISTORY_INTENTS["project_id"],
    }
    grants = await session.execute(
        select(Permission.resource_id, Permission.intent, Permission.party_id).where(
            Permission.resource_id.in_(resources), Permission.intent.in_(resources.values())
        )
    )
    holders = await users_of(session, {party for resource, intent, party in grants if resources[resource] == intent})
    admins = set((await session.scalars(select(User.id).where(User.id.in_(user_ids), User.is_admin))).all())
    return (holders | admins) & user_ids


async def subscribe(session: AsyncSession, *, actor: Actor, level: str, target_id: str | None) -> None:
    """Opt in to news of a target. The target is not checked for existence or visibility: one
    may subscribe to an item before being let see it (nothing is delivered until then), and a
    hidden id and a made-up one get the same answer."""
    target = _check_subscription(level, target_id)
    exists = await session.get(NotificationSubscription, (actor.user_id, level, target))
    if exists is None:
        session.add(NotificationSubscription(user_id=actor.user_id, level=level, target_id=target))
        await session.flush()


async def unsubscribe(session: AsyncSession, *, actor: Actor, level: str, target_id: str | None) -> None:
    target = _check_subscription(level, target_id)
    await session.execute(
        delete(NotificationSubscription).where(
            NotificationSubscription.user_id == actor.user_id,
            NotificationSubscription.level == level,
            NotificationSubscription.target_id == target,
        )
    )


def _check_subscription(level: str, target_id: str | None) -> str:
    if level == "ASSIGNED":
        raise DomainError(ErrorCode.INVALID_INPUT, "Notifications of your own assignments are always on.", ["level"])
    if level not in OPT_IN_LEVELS:
        raise DomainError(ErrorCode.INVALID_INPUT, "level is ROLE, CASE or WORKFLOW.", ["level"])
    if level == "ROLE":
        return ""
    expected = ("WorkflowItem", "Case") if level == "CASE" else ("Subproject", "Workflow")
    if not target_id or kind_of(target_id) not in expected:
        raise DomainError(
            ErrorCode.INVALID_INPUT, f"A {level} subscription needs the id of a {' or '.join(expected)}.", ["targetId"]
        )
    return target_id


async def mark_read(session: AsyncSession, *, actor: Actor, ids: list[str] | None, all: bool = False) -> int:
    """Mark the actor's notifications read; returns how many are still unread (of those the
    actor may read, as ``unread_count``). An id that is not one of the actor's readable
    notifications is NOT_FOUND (as if it did not exist), and nothing is marked."""
    if not all and not ids:
        raise DomainError(ErrorCode.INVALID_INPUT, "Give ids, or all: true.", ["ids"])
    if ids:
        validation.bounded_list(ids, "ids", max_items=validation.MAX_NOTIFICATION_IDS)
        found = set(
            await session.scalars(
                select(Notification.id).where(readable_notifications(actor), Notification.id.in_(ids))
            )
        )
        missing = next((i for i in ids if i not in found), None)
        if missing is not None:
            raise not_found("notification", str(missing)[:100], "ids")
    condition = and_(Notification.recipient_id == actor.user_id, Notification.read_at.is_(None))
    if not all:
        condition = and_(condition, Notification.id.in_(ids or []))
    await session.execute(update(Notification).where(condition).values(read_at=SYSTEM_CLOCK.now()))
    return await unread_count(session, actor=actor)


def readable_notifications(actor: Actor, *, unread_only: bool = False) -> ColumnElement[bool]:
    """The actor's notifications whose activity they may read now: what every list and count
    of notifications shows (an unreadable one is left out, as if it had never been written)."""
    condition = and_(
        Notification.recipient_id == actor.user_id,
        Notification.in_app,  # a level its recipient chose email alone for is not listed in-app
        notification_readable(actor, Notification.activity_id),
    )
    return and_(condition, Notification.read_at.is_(None)) if unread_only else condition


UNREAD_COUNT_CAP = 1000
"""Where the unread count stops: each unread notification is checked against what its reader may
see now, so an exact count of 50,000 took 660 ms at a million items (R5), and a badge shown on
every page must not. A badge reads the cap as "1000+"."""


async def unread_count(session: AsyncSession, *, actor: Actor) -> int:
    """The actor's readable unread notifications, counted up to ``UNREAD_COUNT_CAP``."""
    readable = readable_notifications(actor, unread_only=True)
    # Newest first, as the list: a range of ``ix_notification_unread``. Unordered, PostgreSQL
    # scanned the table for the first thousand unread (50,000 rows read at 1M items, issue 52).
    unread = select(Notification.id).where(readable).order_by(Notification.id.desc()).limit(UNREAD_COUNT_CAP)
    unread = unread.subquery()
    return await session.scalar(select(func.count()).select_from(unread)) or 0


__all__ = [
    "LEVELS",
    "UNREAD_COUNT_CAP",
    "mark_read",
    "notify",
    "readable_notifications",
    "subscribe",
    "unread_count",
    "unsubscribe",
    "users_of",
]
