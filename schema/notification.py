"""Notifications: the viewer's inbox, read marks and subscriptions."""

from datetime import datetime
from enum import Enum
from typing import Any

import strawberry

from engine.notify import notifications, wording
from engine.notify.notifications import UNREAD_COUNT_CAP as CAP
from resolvers import notifications as notification_reads
from resolvers import sentences as sentence_reads
from resolvers.lookahead import selects
from resolvers.mutations import run
from schema.activity import Activity
from schema.base import AppInfo, Edge, Node, PageInfo, UserError, by_id_prefix
from schema.execution import context_only


@strawberry.enum(description="Why you were notified; the first level that applies wins.")
class NotificationLevel(Enum):
    ASSIGNED = "ASSIGNED"
    ROLE = "ROLE"
    CASE = "CASE"
    WORKFLOW = "WORKFLOW"


@strawberry.type(description="You heard of an activity entry, at one level.")
class Notification(Node):
    level: NotificationLevel
    created_at: datetime
    read_at: datetime | None

    is_type_of = by_id_prefix("Notification")

    @strawberry.field
    async def activity(self, info: AppInfo) -> Activity | None:
        return await info.context.loaders.activity_by_id.load(self.activity_id)  # type: ignore[attr-defined]

    @strawberry.field(
        description="What happened, in words for you (as Activity.sentence): addressed to you while it asks you "
        'to act ("Start review is yours: Office chairs (due 15 Dec)").'
    )
    @context_only
    def sentence(self, info: AppInfo) -> str:
        return sentence_reads.notification_sentence(info.context, self)

    @strawberry.field(description='Why it reached you, in words ("you follow this item"), from its level.')
    def reason(self) -> str:
        return wording.level_reason(getattr(self.level, "value", self.level)) or ""


@strawberry.type
class NotificationConnection:
    edges: list[Edge[Notification]]
    page_info: PageInfo
    total_count: int = strawberry.field(
        description="How many notifications you have in all: counted only when asked for, and a count checks "
        "every one of them."
    )
    unread_count: int = strawberry.field(
        description=f'How many of them are unread, up to {CAP} (read {CAP} as "{CAP} or more"): counted only '
        "when asked for, each unread one checked up to that bound."
    )


async def notifications_query(
    info: AppInfo, first: int | None = None, after: str | None = None, unread_only: bool | None = False
) -> NotificationConnection:
    page, unread = await notification_reads.page(
        info.context,
        first=first,
        after=after,
        unread_only=bool(unread_only),
        counted=selects(info, "totalCount"),
        unread_counted=selects(info, "unreadCount"),
    )
    return NotificationConnection(
        edges=[Edge(cursor=c, node=n) for c, n in zip(page.cursors, page.nodes, strict=True)],
        page_info=PageInfo(has_next_page=page.has_next_page, end_cursor=page.cursors[-1] if page.cursors else None),
        total_count=page.total_count,
        unread_count=unread,
    )


@strawberry.input(description="Give ids, or all: true.")
class MarkNotificationsReadInput:
    ids: list[strawberry.ID] | None = None
    all: bool = False


@strawberry.type
class MarkNotificationsReadPayload:
    unread_count: int | None = strawberry.field(
        default=None, description=f"What is left unread, counted as `unreadCount` is (up to {CAP})."
    )
    user_errors: list[UserError] = strawberry.field(default_factory=list)


@strawberry.input(description="ROLE needs no target; CASE a workflow item; WORKFLOW a subproject or workflow.")
class NotificationSubscriptionInput:
    level: NotificationLevel
    target_id: strawberry.ID | None = None


@strawberry.type
class NotificationSubscriptionPayload:
    ok: bool = False
    user_errors: list[UserError] = strawberry.field(default_factory=list)


async def mark_notifications_read(info: AppInfo, input: MarkNotificationsReadInput) -> MarkNotificationsReadPayload:
    unread, errors = await run(
        info.context, lambda s, a: notifications.mark_read(s, actor=a, ids=list(input.ids or []), all=input.all)
    )
    return MarkNotificationsReadPayload(unread_count=unread, user_errors=errors)


async def _subscription(
    info: AppInfo, input: NotificationSubscriptionInput, verb: Any
) -> NotificationSubscriptionPayload:
    _, errors = await run(
        info.context, lambda s, a: verb(s, actor=a, level=input.level.value, target_id=input.target_id)
    )
    return NotificationSubscriptionPayload(ok=not errors, user_errors=errors)


async def subscribe_to_notifications(
    info: AppInfo, input: NotificationSubscriptionInput
) -> NotificationSubscriptionPayload:
    return await _subscription(info, input, notifications.subscribe)


async def unsubscribe_from_notifications(
    info: AppInfo, input: NotificationSubscriptionInput
) -> NotificationSubscriptionPayload:
    return await _subscription(info, input, notifications.unsubscribe)
