"""The one way a mutation runs: one transaction, domain errors become userErrors."""

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from engine.activity import NEW_ACTIVITIES
from engine.actors import Actor
from engine.errors import DomainError
from engine.identity import IDENTITIES_CHANGED
from engine.jobs import jobs_written
from engine.transitions import written_timer
from resolvers.context import Context
from resolvers.errors import UserErrorRow, user_errors

T = TypeVar("T")


async def run(
    ctx: Context,
    operation: Callable[[AsyncSession, Actor], Awaitable[T]],
    *,
    rollback: bool = False,
    authenticated: bool = True,
) -> tuple[T | None, list[UserErrorRow]]:
    """Run ``operation`` as the viewer in its own transaction. On a DomainError everything is
    rolled back and the error is returned; ``rollback`` always rolls back (dry runs);
    ``authenticated=False`` runs without a viewer (login)."""
    actor = ctx.viewer if authenticated else None
    try:
        async with ctx.db.transaction() as session:
            result = await operation(session, actor)
            activities = list(session.info.get(NEW_ACTIVITIES, []))
            identities_changed = session.info.get(IDENTITIES_CHANGED, False)
            timer_at = written_timer(session)
            jobs_at = jobs_written(session)
            if rollback:
                raise _DryRun(result)
    except _DryRun as dry:
        return dry.result, []
    except DomainError as error:
        return None, user_errors(error)
    if identities_changed:
        ctx.identities_changed()
    await ctx.refresh()
    await ctx.published(activities)
    if timer_at is not None and ctx.hub is not None:  # wake the sweepers: a timer may fall due sooner
        ctx.hub.timer_written(timer_at)
    if jobs_at and ctx.hub is not None:  # wake the job runners
        ctx.hub.jobs_written()
    return result, []


class _DryRun(Exception):
    def __init__(self, result: Any) -> None:
        super().__init__("dry run")
        self.result = result
