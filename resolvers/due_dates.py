"""Due dates on the task list: ``myTasks(orderBy: DUE_DATE)``, and ``EnabledAction.dueDate`` /
``overdue`` (the item's due date; engine/cases/reminders.py tells people when it comes)."""

from datetime import date, timedelta
from typing import Any

from sqlalchemy import and_, func, null, or_, select, union_all
from sqlalchemy import case as when

from engine.clock import SYSTEM_CLOCK
from engine.notify.reminder_rows import due_start
from engine.people import deputies
from models import Case, EnabledAction, TaskAssignment, WorkflowItem
from resolvers import visibility
from resolvers.context import Context
from resolvers.loaders import with_loaded
from resolvers.pagination import Page, check_first, check_id_cursor, keyset_page
from resolvers.records import records


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
    Unlike the order by id, every one of the viewer's tasks is sorted for a page: its cost grows
    with their task list."""
    limit = check_first(first)
    cursor = check_id_cursor(after)
    task = TaskAssignment.__table__.c
    viewer = ctx.viewer
    represented = deputies.represented(viewer.user_id).subquery("represented")
    own = select(task.enabled_action_id, null().label("behalf")).where(task.party_id.in_(sorted(viewer.party_ids)))
    lent = select(task.enabled_action_id, represented.c.absent_id.label("behalf")).join(
        represented, represented.c.party_id == task.party_id
    )
    found = union_all(own, lent).subquery("found")
    own_too = func.max(when((found.c.behalf.is_(None), 1), else_=0))
    tasks = (
        select(found.c.enabled_action_id, when((own_too == 1, None), else_=func.min(found.c.behalf)).label("behalf"))
        .group_by(found.c.enabled_action_id)
        .subquery("tasks")
    )
    # Hidden ≡ missing: the due date of an item the viewer may not see (a task assigned to them
    # directly, without a grant or a role in its case) is none, for the order as for the field.
    due = when((visibility.item_visible(viewer), WorkflowItem.due_date), else_=None)
    query = (
        select(EnabledAction.__table__, tasks.c.behalf.label("on_behalf_of"), due.label("item_due"))
        .join(tasks, tasks.c.enabled_action_id == EnabledAction.id)
        .join(Case, Case.id == EnabledAction.case_id)
        .join(WorkflowItem, WorkflowItem.id == Case.object_id)
    )
    if cursor is not None:
        after_due = await ctx.session.scalar(
            select(due)
            .join(Case, Case.object_id == WorkflowItem.id)
            .join(EnabledAction, EnabledAction.case_id == Case.id)
            .where(EnabledAction.id == cursor)
        )
        later = EnabledAction.id > cursor
        if after_due is None:
            query = query.where(due.is_(None), later)
        else:
            query = query.where(or_(due.is_(None), due > after_due, and_(due == after_due, later)))
    query = query.order_by(due.is_(None), due, EnabledAction.id).limit(limit + 1)
    rows = records(await ctx.session.execute(query))
    total = None
    if counted:
        total = await ctx.session.scalar(select(func.count()).select_from(tasks)) or 0
    return keyset_page(rows, limit=limit, total=total, cursor=lambda r: r.id)
