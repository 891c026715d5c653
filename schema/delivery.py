"""How notifications reach a user (in-app, email, digests): ``setNotificationDelivery``, the
choices as ``User.notificationDelivery`` reads them, and ``runDigests`` (server/digest_runs.py)."""

from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import strawberry

from engine.clock import SYSTEM_CLOCK
from engine.errors import DomainError, ErrorCode
from engine.notify import delivery, digests
from models import as_utc
from resolvers import delivery as delivery_reads
from resolvers.errors import user_errors
from schema.base import AppInfo, UserError
from schema.notification import NotificationLevel

if TYPE_CHECKING:
    from schema.identity import User


@strawberry.enum(description="Where a notification reaches you: the in-app list and stream, and/or email.")
class NotificationChannel(Enum):
    IN_APP = "IN_APP"
    EMAIL = "EMAIL"


@strawberry.enum(
    description="When email goes out: a message per change that notified you (IMMEDIATE), or one digest per "
    "hour or per day (at your digestHour), in your time zone."
)
class DeliveryFrequency(Enum):
    IMMEDIATE = "IMMEDIATE"
    HOURLY = "HOURLY"
    DAILY = "DAILY"


@strawberry.type(description="How notifications of one level reach you.")
class NotificationDelivery:
    level: NotificationLevel
    channels: list[NotificationChannel]
    frequency: DeliveryFrequency = strawberry.field(description="For EMAIL; in-app is always immediate.")


@strawberry.input(description="One level's channels (at least one) and, for EMAIL, how often.")
class NotificationDeliveryLevelInput:
    level: NotificationLevel
    channels: list[NotificationChannel]
    frequency: DeliveryFrequency = DeliveryFrequency.IMMEDIATE


@strawberry.input(
    description="Your email address, time zone and digest hour, and your choice for the levels given (the others "
    "keep theirs). An admin may name another user."
)
class SetNotificationDeliveryInput:
    user_id: strawberry.ID | None = strawberry.field(default=None, description="Default: you. Admins only.")
    email: str | None = strawberry.field(default=strawberry.UNSET, description="null or empty: no address.")
    time_zone: str | None = strawberry.field(
        default=strawberry.UNSET, description="An IANA time zone, e.g. Europe/Berlin (default UTC)."
    )
    digest_hour: int | None = strawberry.field(
        default=strawberry.UNSET, description="The hour (0-23) of your time zone a DAILY digest goes out (default 8)."
    )
    levels: list[NotificationDeliveryLevelInput] | None = None


@strawberry.type
class SetNotificationDeliveryPayload:
    user: Annotated["User", strawberry.lazy("schema.identity")] | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


def _given(value: Any) -> Any:
    return delivery.UNSET if value is strawberry.UNSET else value


async def set_notification_delivery(
    info: AppInfo, input: SetNotificationDeliveryInput
) -> SetNotificationDeliveryPayload:
    levels = (
        None
        if input.levels is None
        else [
            delivery.LevelDelivery(
                level=choice.level.value,
                channels=tuple(c.value for c in choice.channels),
                frequency=choice.frequency.value,
            )
            for choice in input.levels
        ]
    )
    user, errors = await delivery_reads.set_delivery(
        info.context,
        user_id=input.user_id,
        levels=levels,
        email=_given(input.email),
        time_zone=_given(input.time_zone),
        digest_hour=_given(input.digest_hour),
    )
    if user is not None:
        user = await info.context.loaders.party_by_id.load(user.id)
    return SetNotificationDeliveryPayload(user=user, user_errors=errors)  # type: ignore[arg-type]


@strawberry.input
class RunDigestsInput:
    now: datetime | None = strawberry.field(
        default=None, description="Close the digest windows due at this time; default: now."
    )
    limit: int = strawberry.field(default=100, description=f"At most this many windows (1-{digests.MAX_RUN}).")


@strawberry.type
class RunDigestsPayload:
    queued: int = strawberry.field(default=0, description="Digest messages written as email jobs.")
    empty: int = strawberry.field(default=0, description="Windows closed without a notification to send.")
    more: bool = strawberry.field(default=False, description="True when the limit stopped the run early.")
    user_errors: list[UserError] = strawberry.field(default_factory=list)


async def run_digests(info: AppInfo, input: RunDigestsInput) -> RunDigestsPayload:
    ctx = info.context
    try:
        now = SYSTEM_CLOCK.now() if input.now is None else as_utc(input.now)
        delivery_reads.check_run(ctx.viewer, limit=input.limit, now=now)
    except OverflowError:
        return RunDigestsPayload(
            user_errors=user_errors(DomainError(ErrorCode.INVALID_INPUT, "now is out of range.", ["now"]))
        )  # type: ignore[arg-type]
    except DomainError as error:
        return RunDigestsPayload(user_errors=user_errors(error))  # type: ignore[arg-type]
    run = await ctx.background.run_digests(now=now, limit=input.limit)  # in this process (server/digest_runs.py)
    await ctx.refresh()
    return RunDigestsPayload(queued=run.jobs, empty=run.empty, more=run.more)
