"""Notifications (seed 004): four levels, at most one notification per user per activity.

1. ASSIGNED  - you are assigned to an action this activity enabled (always on)
2. ROLE      - any case where you play a role (opt-in)
3. CASE      - a workflow item you subscribed to (opt-in)
4. WORKFLOW  - every case of a subproject or workflow you subscribed to (opt-in)
A user gets the first level that applies; the actor is never notified of their own activity,
and nobody hears of a case they may not view. Rows are written in the activity's transaction.
"""

from collections.abc import Iterable

from sqlalchemy import and_, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from engine import validation
from engine.activity import LogEntry
from engine.actors import Actor
from engine.context import OPT_IN_LEVELS, CaseContext, subscribers_query
from engine.errors import DomainError, ErrorCode
from models import (
    GroupMember,
    Notification,
    NotificationSubscription,
    Permission,
    User,
    kind_of,
    new_id,
    utcnow,
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


# Built once: every change that is not to a locked case asks it (engine.context reads it
# with the case otherwise).
_SUBSCRIBERS = subscribers_query()


async def _subscribers(session: AsyncSession, ctx: CaseContext) -> dict[str, set[str]]:
    """Who opted in, per level, to news of this case (see ``subscribers_query``)."""
    if ctx.subscribers is not None:
        return ctx.subscribers
    params = {"item": ctx.item.id, "case": ctx.case.id, "subproject": ctx.subproject.id, "workflow": ctx.workflow_id}
    result: dict[str, set[str]] = {level: set() for level in OPT_IN_LEVELS}
    for level, user_id in await session.execute(_SUBSCRIBERS, params):
        result[level].add(user_id)
    return result


async def notify(ctx: CaseContext, entry: LogEntry, *, assigned_parties: Iterable[str]) -> None:
    """Write the notifications of one case activity."""
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
    # Assignees and role players see the case; only other subscribers need a visibility check.
    may_view = role_players | assigned
    outsiders = (subscribed["CASE"] | subscribed["WORKFLOW"]) - may_view
    if outsiders:
        may_view |= await _may_view_item(session, ctx.item.id, outsiders)
    notified: set[str] = {entry.actor_id or ""}
    for level, users in levels:
        for user_id in sorted((users & may_view) - notified):
            session.add(
                Notification(
                    id=new_id("ntf"), recipient_id=user_id, activity_id=entry.id, level=level, created_at=entry.at
                )
            )
            notified.add(user_id)
    await session.flush()


async def _may_view_item(session: AsyncSession, item_id: str, user_ids: set[str]) -> set[str]:
    """Which of these users hold workflowItem.view on the item (themselves or through a group),
    or are admins."""
    holders = await users_of(
        session,
        (
            await session.scalars(
                select(Permission.party_id).where(
                    Permission.resource_id == item_id, Permission.intent == "workflowItem.view"
                )
            )
        ).all(),
    )
    admins = set((await session.scalars(select(User.id).where(User.id.in_(user_ids), User.is_admin))).all())
    return (holders | admins) & user_ids


async def subscribe(session: AsyncSession, *, actor: Actor, level: str, target_id: str | None) -> None:
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
    """Mark the actor's notifications read; returns how many are still unread."""
    if not all and not ids:
        raise DomainError(ErrorCode.INVALID_INPUT, "Give ids, or all: true.", ["ids"])
    if ids:
        validation.bounded_list(ids, "ids", max_items=validation.MAX_NOTIFICATION_IDS)
    condition = and_(Notification.recipient_id == actor.user_id, Notification.read_at.is_(None))
    if not all:
        condition = and_(condition, Notification.id.in_(ids or []))
    await session.execute(update(Notification).where(condition).values(read_at=utcnow()))
    return await unread_count(session, user_id=actor.user_id)


async def unread_count(session: AsyncSession, *, user_id: str) -> int:
    return (
        await session.scalar(
            select(func.count())
            .select_from(Notification)
            .where(Notification.recipient_id == user_id, Notification.read_at.is_(None))
        )
        or 0
    )


__all__ = ["LEVELS", "mark_read", "notify", "subscribe", "unread_count", "unsubscribe", "users_of"]
