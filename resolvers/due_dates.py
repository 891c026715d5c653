"""Due dates on the task list: ``myTasks(orderBy: DUE_DATE)``, and ``EnabledAction.dueDate`` /
``overdue`` (the item's due date; engine/cases/reminders.py tells people when it comes)."""

from datetime import date, timedelta
from typing import Any

from sqlalchemy import JSON, Date, literal, select
from sqlalchemy import case as when

from engine.clock import SYSTEM_CLOCK
from engine.notify.reminder_rows import due_start
from models import Case, EnabledAction, WorkflowItem
from resolvers import visibility
from resolvers.context import Context
from resolvers.loaders import with_loaded
from resolvers.pagination import (
    Page,
    check_first,
    check_id_cursor,
    keyset_page,
    nulls_last,
    past_nulls_last,
)
from resolvers.records import records
from resolvers.task_order import due_ranged, id_range, lent_rows, party_rows, task_total, viewer_tasks


def due_date(ctx: Context, instance: Any) -> Any:
    """The due date of the instance's item, none when the viewer may not see the item: read
    with the page when it was ordered by due date, else through the case and item loaders
    (which read only visible items)."""
    if hasattr(instance, "item_due"):
        return instance.item_due
    loaders = ctx.loaders
    return with_loaded(
        [(loaders.case_by_id, instance.case_id)],
        lambda case: with_loaded([(loaders.item_by_id, case.object_id)], lambda item: item and item.due_date),
    )


def is_overdue(due: date | None, status: str) -> bool:
    """Still waiting after the last day it was due (UTC)."""
    return status == "ENABLED" and due is not None and SYSTEM_CLOCK.now() >= due_start(due) + timedelta(days=1)


def overdue(ctx: Context, instance: Any) -> Any:
    found = due_date(ctx, instance)
    if isinstance(found, date) or found is None:
        return is_overdue(found, instance.status)

    async def later() -> bool:
        return is_overdue(await found, instance.status)

    return later()


async def my_tasks_by_due_date(
    ctx: Context, *, first: int | None, after: str | None, counted: bool = True
) -> Page[Any]:
    """The viewer's tasks as ``myTasks`` has them (the task index: their own, and those of the
    absent users they stand in for now, marked ``on_behalf_of`` unless their own too), soonest
    due first, those without a due date last, ties by id; the cursor is the last instance's id.
    On PostgreSQL each party's first page in that order is a range of the index
    (resolvers/task_order.py), so a page costs the same for a million tasks as for ten; SQLite
    sorts every task of the viewer."""
    limit = check_first(first)
    cursor = check_id_cursor(after)
    viewer = ctx.viewer
    # Hidden ≡ missing: the due date of an item the viewer may not see (a task assigned to them
    # directly, without a grant or a role in its case) is none, for the order as for the field.
    due = when((visibility.item_visible(viewer), WorkflowItem.due_date), else_=None)
    after_due = None
    if cursor is not None:
        after_due = await ctx.session.scalar(
            select(due)
            .join(Case, Case.object_id == WorkflowItem.id)
            .join(EnabledAction, EnabledAction.case_id == Case.id)
            .where(EnabledAction.id == cursor)
        )
    postgres = ctx.session.bind.dialect.name == "postgresql"
    own, lent = party_rows(literal(sorted(viewer.party_ids), JSON()), postgres), lent_rows(viewer.user_id)
    # PostgreSQL: each party's first page in due-date order past the cursor; SQLite: every task
    ranged = due_ranged(viewer, limit + 1, cursor, literal(after_due, type_=Date())) if postgres else id_range(False)
    tasks = viewer_tasks(own, lent, ranged).subquery("tasks")
    query = (
        select(EnabledAction.__table__, tasks.c.behalf.label("on_behalf_of"), due.label("item_due"))
        .join(tasks, tasks.c.id == EnabledAction.id)
        .join(Case, Case.id == EnabledAction.case_id)
        .join(WorkflowItem, WorkflowItem.id == Case.object_id)
    )
    if cursor is not None:
        query = query.where(past_nulls_last(due, EnabledAction.id, at=after_due, after=cursor))
    query = query.order_by(*nulls_last(due, EnabledAction.id)).limit(limit + 1)
    rows = records(await ctx.session.execute(query))
    total = None
    if counted:
        total = await ctx.session.scalar(select(task_total(own, lent, postgres))) or 0
    return keyset_page(rows, limit=limit, total=total, cursor=lambda r: r.id)
