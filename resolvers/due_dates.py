"""Due dates on the task list: ``myTasks(orderBy: DUE_DATE)``, and ``EnabledAction.dueDate`` /
``overdue`` (the item's due date; engine/cases/reminders.py tells people when it comes)."""

from datetime import date, timedelta
from typing import Any

from sqlalchemy import (
    Date,
    String,
    column,
    distinct,
    func,
    literal,
    null,
    select,
    union_all,
    values,
)
from sqlalchemy import case as when

from engine.clock import SYSTEM_CLOCK
from engine.notify.reminder_rows import due_start
from engine.people import deputies
from models import Case, EnabledAction, TaskAssignment, WorkflowItem
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
from resolvers.task_order import due_range, kept_total


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
    tasks = _tasks(viewer, limit + 1 if postgres else None, cursor, after_due).subquery("tasks")
    query = (
        select(EnabledAction.__table__, tasks.c.behalf.label("on_behalf_of"), due.label("item_due"))
        .join(tasks, tasks.c.enabled_action_id == EnabledAction.id)
        .join(Case, Case.id == EnabledAction.case_id)
        .join(WorkflowItem, WorkflowItem.id == Case.object_id)
    )
    if cursor is not None:
        query = query.where(past_nulls_last(due, EnabledAction.id, at=after_due, after=cursor))
    query = query.order_by(*nulls_last(due, EnabledAction.id)).limit(limit + 1)
    rows = records(await ctx.session.execute(query))
    total = None
    if counted:
        total = await ctx.session.scalar(select(task_total(viewer))) or 0
    return keyset_page(rows, limit=limit, total=total, cursor=lambda r: r.id)


def _tasks(viewer: Any, limit: int | None, cursor: str | None, after_due: date | None) -> Any:
    """(enabled_action_id, behalf) of the viewer's tasks, once each: on PostgreSQL (``limit``
    given) only each party's first ``limit`` in due-date order past the cursor, else all."""
    represented = deputies.represented(viewer.user_id).subquery("represented")
    if limit is None:
        task = TaskAssignment.__table__.c
        own = select(task.enabled_action_id, null().label("behalf")).where(task.party_id.in_(sorted(viewer.party_ids)))
        lent = select(task.enabled_action_id, represented.c.absent_id.label("behalf")).join(
            represented, represented.c.party_id == task.party_id
        )
    else:
        parties = _parties(viewer)
        at_due = literal(after_due, type_=Date())
        own = due_range(parties, parties.c.value, null(), viewer, limit, "own", cursor, at_due)
        lent = due_range(
            represented, represented.c.party_id, represented.c.absent_id, viewer, limit, "lent", cursor, at_due
        )
    found = union_all(own, lent).subquery("found")
    columns = found.c
    id_ = columns.enabled_action_id if limit is None else columns.id
    own_too = func.max(when((columns.behalf.is_(None), 1), else_=0))
    return select(
        id_.label("enabled_action_id"), when((own_too == 1, None), else_=func.min(columns.behalf)).label("behalf")
    ).group_by(id_)


def _parties(viewer: Any) -> Any:
    """The viewer's parties as rows (``value``), for a range of the index each."""
    return values(column("value", String()), name="own_parties").data([(p,) for p in sorted(viewer.party_ids)])


def task_total(viewer: Any) -> Any:
    """``myTasks``' totalCount (both orders): the kept count when one of the viewer's parties
    (and those of everyone they stand in for) has tasks, else their tasks counted once each."""
    task = TaskAssignment.__table__.c
    represented = deputies.represented(viewer.user_id).subquery("represented")
    mine = select(task.enabled_action_id).where(task.party_id.in_(sorted(viewer.party_ids)))
    lent_ids = select(task.enabled_action_id).join(represented, represented.c.party_id == task.party_id)
    every = union_all(mine, lent_ids).subquery("every")
    counted = select(func.count(distinct(every.c.enabled_action_id))).scalar_subquery()
    lent_parties = deputies.represented(viewer.user_id).subquery("lent_parties")
    return kept_total(counted, sorted(viewer.party_ids), select(lent_parties.c.party_id))
