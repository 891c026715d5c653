"""Delivery choices for GraphQL: ``setNotificationDelivery``, ``User.notificationDelivery`` and who
may ``runDigests`` (engine/notify/delivery.py, engine/notify/digests.py); the digests themselves
run from server/digest_runs.py, beside timers and jobs."""

from datetime import datetime
from typing import Any

from engine.errors import DomainError, ErrorCode
from engine.notify import delivery, digests
from engine.people.actors import Actor
from models import User
from resolvers.context import Context
from resolvers.errors import UserErrorRow
from resolvers.mutations import run


def may_read(ctx: Context, user_id: str) -> bool:
    """A user's address, time zone and choices are theirs and admins' to read."""
    viewer = ctx.viewer
    return viewer.is_admin or viewer.user_id == user_id


async def choices(ctx: Context, user: Any) -> list[delivery.LevelDelivery] | None:
    if not may_read(ctx, user.id):
        return None
    rows = {row.level: row for row in await ctx.loaders.delivery_by_user.load(user.id)}
    return [delivery.as_choice(level, rows.get(level)) for level in delivery.LEVELS]


async def set_delivery(
    ctx: Context, *, user_id: str | None, levels: list[delivery.LevelDelivery] | None, **fields: Any
) -> tuple[User | None, list[UserErrorRow]]:
    async def op(session: Any, actor: Actor) -> User:
        return await delivery.set_delivery(session, actor=actor, user_id=user_id, levels=levels, **fields)

    return await run(ctx, op)


def check_run(actor: Actor, *, limit: int, now: datetime | None) -> None:
    """Closing windows by hand (tests, operations) is for admins; ``limit`` bounds the work, and
    ``now`` is a time windows can close at (a window's end a day later must exist)."""
    if not actor.is_admin:
        raise DomainError(ErrorCode.NOT_ALLOWED, "Only an admin may run digests.")
    if not 1 <= limit <= digests.MAX_RUN:
        raise DomainError(ErrorCode.INVALID_INPUT, f"limit must be between 1 and {digests.MAX_RUN}.", ["limit"])
    if now is not None and not 1970 <= now.year <= 9000:
        raise DomainError(ErrorCode.INVALID_INPUT, "now must be between the years 1970 and 9000.", ["now"])
