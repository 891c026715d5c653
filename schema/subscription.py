"""Live activity and notifications over WebSocket (graphql-transport-ws)."""

from collections.abc import AsyncGenerator, AsyncIterator, Callable

import strawberry
from graphql import GraphQLError
from sqlalchemy import exists, or_, select

from engine.errors import not_found
from engine.notify.events import Event, Subscriber, SubscriberDropped, audiences
from models import Activity as ActivityRow
from models import Project, kind_of
from models import Subproject as SubprojectRow
from models import WorkflowItem as WorkflowItemRow
from resolvers.context import Context
from resolvers.pagination import parse_seq_cursor
from resolvers.visibility import entry_readable, item_visible, project_visible, subproject_visible
from schema.activity import Activity
from schema.base import AppInfo
from schema.notification import Notification

REPLAY_PAGE = 200


def _scope_filter(project_id: str | None, subproject_id: str | None, workflow_item_id: str | None):  # type: ignore[no-untyped-def]
    def matches(entry: ActivityRow) -> bool:
        return (
            (project_id is None or entry.project_id == project_id)
            and (subproject_id is None or entry.subproject_id == subproject_id)
            and (workflow_item_id is None or entry.workflow_item_id == workflow_item_id)
        )

    return matches


# (column and argument, what it is called in a sentence, id kind, the argument's GraphQL name)
_SCOPES = (
    ("project_id", "project", "Project", "projectId"),
    ("subproject_id", "subproject", "Subproject", "subprojectId"),
    ("workflow_item_id", "workflow item", "WorkflowItem", "workflowItemId"),
)


async def _check_scope(ctx: Context, **ids: str | None) -> None:
    """A scope id the viewer knows nothing of — it does not exist, or they may neither view it
    nor read any of its history (a role in one of its items, say) — is refused at once with
    the same sentence either way, rather than giving a subscription that never receives
    anything. One query per scope given, at subscription time only."""
    for column, what, kind, argument in _SCOPES:
        value = ids[column]
        if value is None:
            continue
        known = kind_of(value) == kind
        if known:
            async with ctx.db.read_session() as session:
                visible = {"Project": project_visible, "Subproject": subproject_visible, "WorkflowItem": item_visible}
                model = {"Project": Project, "Subproject": SubprojectRow, "WorkflowItem": WorkflowItemRow}[kind]
                readable = exists().where(getattr(ActivityRow, column) == value, entry_readable(ctx.viewer))
                viewable = exists().where(model.id == value, visible[kind](ctx.viewer))
                known = bool(await session.scalar(select(or_(viewable, readable))))
        if not known:
            error = not_found(what, value, argument)
            raise GraphQLError(error.message, extensions={"code": error.code.value})


def _open(ctx: Context) -> None:
    limit = ctx.settings.ws_max_subscriptions
    if ctx.active_subscriptions >= limit:
        raise GraphQLError(
            f"At most {limit} subscriptions per connection.", extensions={"code": "TOO_MANY_SUBSCRIPTIONS"}
        )
    if ctx.hub is None:
        raise GraphQLError("Live events are not available on this server.", extensions={"code": "UNAVAILABLE"})
    ctx.active_subscriptions += 1


async def _events(ctx: Context, subscriber: Subscriber, cursor: Callable[[], str | None]) -> AsyncIterator[Event]:
    """The subscriber's events; one that fell too far behind is told how to resume."""
    try:
        async for event in subscriber.events():
            yield event
    except SubscriberDropped:
        resume = f" Reconnect with after: {cursor()!r}." if cursor() else " Reconnect."
        raise GraphQLError(
            f"This subscription fell more than {subscriber.maxsize} events behind and was dropped." + resume,
            extensions={"code": "SLOW_SUBSCRIBER"},
        ) from None


@strawberry.type
class Subscription:
    @strawberry.subscription(
        description=(
            "New log entries in scope that you may see, in seq order. With `after` (a seq cursor), first the "
            "entries after it, then live: reconnecting with your last cursor gives every entry exactly once."
        )
    )
    async def activity(
        self,
        info: AppInfo,
        project_id: strawberry.ID | None = None,
        subproject_id: strawberry.ID | None = None,
        workflow_item_id: strawberry.ID | None = None,
        after: str | None = None,
    ) -> AsyncGenerator[Activity, None]:
        ctx = info.context
        ctx.viewer  # noqa: B018 - authentication check
        after_seq = parse_seq_cursor(after)
        in_scope = _scope_filter(project_id, subproject_id, workflow_item_id)
        await _check_scope(ctx, project_id=project_id, subproject_id=subproject_id, workflow_item_id=workflow_item_id)
        _open(ctx)
        subscriber = None
        try:
            subscriber = await ctx.hub.subscribe()
            last = subscriber.start_seq if after_seq is None else after_seq
            while last < subscriber.start_seq:  # replay what the hub had already passed
                async with ctx.db.read_session() as session:
                    query = select(ActivityRow).where(ActivityRow.seq > last, ActivityRow.seq <= subscriber.start_seq)
                    for column, value in (
                        ("project_id", project_id),
                        ("subproject_id", subproject_id),
                        ("workflow_item_id", workflow_item_id),
                    ):
                        if value is not None:
                            query = query.where(getattr(ActivityRow, column) == value)
                    entries = list((await session.scalars(query.order_by(ActivityRow.seq).limit(REPLAY_PAGE))).all())
                    audience = await audiences(session, entries)
                if not entries:
                    break
                for entry in entries:
                    if audience[entry.id].admits(ctx.viewer):
                        yield entry  # type: ignore[misc]
                    last = entry.seq or last
            # late binding on purpose: the resume cursor is the last entry seen when dropped
            async for event in _events(ctx, subscriber, lambda: str(last)):  # noqa: B023
                entry = event.entry
                if entry.seq <= last:
                    continue
                last = entry.seq
                # Checked per event: an expired token ends the stream, a revoked grant hides the entry.
                if in_scope(entry) and event.audience.admits(ctx.viewer):
                    ctx.start_event(entry, event.shared, event.results)
                    yield entry  # type: ignore[misc]
        finally:
            if subscriber is not None:
                ctx.hub.unsubscribe(subscriber)
            ctx.active_subscriptions -= 1

    @strawberry.subscription(description="Your new notifications, as they are written.")
    async def notifications(self, info: AppInfo) -> AsyncGenerator[Notification, None]:
        ctx = info.context
        user_id = ctx.viewer.user_id
        _open(ctx)
        subscriber = None
        try:
            subscriber = await ctx.hub.subscribe(notifications_for=user_id)
            async for event in _events(ctx, subscriber, lambda: None):
                viewer = ctx.viewer  # token expiry ends the stream
                # The entry's audience is read from the grants as they are now (engine.people.visibility):
                # a notification whose activity the viewer may no longer read is not delivered.
                if not event.audience.admits(viewer):
                    continue
                for note in event.notifications:
                    if note.recipient_id == user_id:
                        yield note  # type: ignore[misc]
        finally:
            if subscriber is not None:
                ctx.hub.unsubscribe(subscriber)
            ctx.active_subscriptions -= 1


__all__ = ["Subscription"]
