"""insights: the figures of a workflow's cases (engine/cases/insights.py) for the viewer."""

from datetime import datetime

from engine.cases import insights as figures
from engine.clock import SYSTEM_CLOCK, Clock
from engine.errors import DomainError
from resolvers.context import Context
from resolvers.errors import UserErrorRow, user_errors

clock: Clock = SYSTEM_CLOCK  # tests set their own: the open ages and "now" figures follow it


async def insights(
    ctx: Context,
    *,
    workflow: str,
    version: int | None,
    project_id: str | None,
    subproject_id: str | None,
    since: datetime | None,
    until: datetime | None,
) -> tuple[figures.Insights | None, list[UserErrorRow]]:
    """The viewer's figures, or why there are none (bad input; a hidden project or subproject is
    answered as a missing one)."""
    actor = ctx.viewer
    try:
        async with ctx.db.read_session() as session:
            found = await figures.insights(
                session,
                actor=actor,
                workflow=workflow,
                version=version,
                project_id=project_id,
                subproject_id=subproject_id,
                since=since,
                until=until,
                now=clock.now(),
            )
    except DomainError as error:
        return None, user_errors(error)
    return found, []
