"""Delivery choices and digests for GraphQL, the sweeper and the CLI: ``setNotificationDelivery``,
``User.notificationDelivery`` and ``runDigests`` (engine/notify/delivery.py, engine/notify/digests.py)."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from engine.errors import DomainError, ErrorCode
from engine.notify import delivery, digests
from engine.people.actors import Actor
from models import Database, User
from resolvers.context import Context
from resolvers.errors import UserErrorRow
from resolvers.mutations import run

BATCH = 50  # windows closed per transaction


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


@dataclass
class DigestRun:
    jobs: int = 0  # digest messages queued
    empty: int = 0  # windows closed with nothing to send
    more: bool = False  # the limit stopped the run while a window was still due


def check_run(actor: Actor, *, limit: int, now: datetime | None) -> None:
    """Closing windows by hand (tests, operations) is for admins; ``limit`` bounds the work, and
    ``now`` is a time windows can close at (a window's end a day later must exist)."""
    if not actor.is_admin:
        raise DomainError(ErrorCode.NOT_ALLOWED, "Only an admin may run digests.")
    if not 1 <= limit <= digests.MAX_RUN:
        raise DomainError(ErrorCode.INVALID_INPUT, f"limit must be between 1 and {digests.MAX_RUN}.", ["limit"])
    if now is not None and not 1970 <= now.year <= 9000:
        raise DomainError(ErrorCode.INVALID_INPUT, "now must be between the years 1970 and 9000.", ["now"])


async def run_digests(
    db: Database, *, now: datetime | None = None, clock: Callable[[], datetime] | None = None, limit: int
) -> DigestRun:
    """Close the digest windows due at ``now`` (or the clock's time, read per batch), up to
    ``limit``, ``BATCH`` per transaction; each window's message is a job the runner sends (woken
    when the transaction's unit of work is published)."""
    result = DigestRun()
    async with db.read_session() as session:
        due = await digests.next_due(session)
    at = now if now is not None else clock()  # type: ignore[misc]
    if due is None or due > at:
        return result
    while result.jobs + result.empty < limit:
        at = now if now is not None else clock()  # type: ignore[misc]
        async with db.transaction() as session:
            made = await digests.make_due(session, now=at, limit=min(BATCH, limit - result.jobs - result.empty))
        result.jobs += made.jobs
        result.empty += made.empty
        if made.jobs + made.empty == 0:
            return result
    async with db.read_session() as session:
        due = await digests.next_due(session)
    result.more = due is not None and due <= at
    return result
