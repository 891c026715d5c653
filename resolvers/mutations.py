"""The one way a mutation runs: one transaction, domain errors become userErrors. What the
transaction wrote is published by the database's publisher once it commits
(models/unit_of_work.py, server/publisher.py); here the request only starts its reads afresh."""

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from engine.errors import DomainError
from engine.history import activity
from engine.people.actors import Actor
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
            activity.acting_through(session, actor)  # its entries name the API token it came with
            result = await operation(session, actor)
            if rollback:
                raise _DryRun(result)
    except _DryRun as dry:
        return dry.result, []
    except DomainError as error:
        return None, user_errors(error)
    await ctx.refresh()
    return result, []


class _DryRun(Exception):
    def __init__(self, result: Any) -> None:
        super().__init__("dry run")
        self.result = result
