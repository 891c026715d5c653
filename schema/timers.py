"""runDueTimers: fire the timers due at a given time, now (admin; tests and operations)."""

from datetime import datetime

import strawberry

from engine.cases import timers
from engine.clock import SYSTEM_CLOCK
from engine.errors import DomainError
from models import as_utc
from resolvers.errors import user_errors
from schema.activity import Activity
from schema.base import AppInfo, UserError


@strawberry.input
class RunDueTimersInput:
    now: datetime | None = strawberry.field(
        default=None, description="Fire what is due at this time, which the firings take as theirs; default: now."
    )
    limit: int = strawberry.field(default=100, description=f"At most this many timers (1-{timers.MAX_RUN}).")


@strawberry.type
class RunDueTimersPayload:
    fired: list[Activity] = strawberry.field(
        default_factory=list,
        description="The log entries of what fired, oldest timer first: each timer's (data.timer says which "
        "instance and when it was due), then the automatic actions that followed it.",
    )
    more: bool = strawberry.field(default=False, description="True when the limit stopped the run early.")
    user_errors: list[UserError] = strawberry.field(default_factory=list)


async def run_due_timers_mutation(info: AppInfo, input: RunDueTimersInput) -> RunDueTimersPayload:
    ctx = info.context
    try:
        timers.check_run(ctx.viewer, limit=input.limit)
    except DomainError as error:
        return RunDueTimersPayload(user_errors=user_errors(error))  # type: ignore[arg-type]
    now = SYSTEM_CLOCK.now() if input.now is None else as_utc(input.now)
    run = await ctx.background.run_due_timers(now=now, limit=input.limit)  # in this process
    await ctx.refresh()
    return RunDueTimersPayload(fired=run.fired, more=run.more)  # type: ignore[arg-type]
