"""The SQL form of ``Query.myTasks``: a page of the viewer's tasks as the resolvers read it
(``resolvers.cases.my_tasks``, ``resolvers.due_dates.my_tasks_by_due_date``).

The tasks are read from the task index (``task_assignment``, keyed by party then instance): the
viewer's own parties, and those of the absent users they stand in for now
(``engine.people.deputies.represented``; such a task carries ``on_behalf_of`` unless it is the
viewer's own too), once each: ``resolvers.task_order.viewer_tasks``, the rule the resolvers
build with too, and its ranges (``id_range``, ``due_range``). Oldest first (the default), each
of the viewer's parties is a range of the index read past the cursor up to ``first`` + 1 rows,
so a page costs the same however many tasks there are: the parties are rows of one JSON
parameter (their number varies from viewer to viewer, and one statement serves every viewer of
its kind), each with its range (PostgreSQL: LATERAL; SQLite, which has none: the range's ids
gathered into a JSON array by a subquery correlated to the party). By due date (soonest first,
none last, ties by id) each party's first page in that order is read from the index on
PostgreSQL and the handful sorted (resolvers/task_order.py, as the resolver reads them); SQLite
sorts every task. ``totalCount`` is the kept count of the one party that has tasks, when only
one has (``task_total``).

The viewer's parties, their id and the instant deputyships are judged at are parameters of
each execution, for admins too: an admin's task list is theirs, not everyone's. The page's
rows (a CTE) carry what ``EnabledAction``'s forms would otherwise look up for each task
(resolvers/compiled/actions.py): ``on_behalf_of``, ``item_due``, and ``action_spec`` when an
``Action`` field reads the spec.
"""

from typing import Any

from sqlalchemy import JSON, String, and_, func, select

from engine.people import deputies
from models import Case, Deputyship, EnabledAction, WorkflowItem
from resolvers.compiled.actions import visible_due, workflow_actions
from resolvers.compiled.build import Build, Page
from resolvers.pagination import check_first, check_id_cursor, nulls_last, past_nulls_last
from resolvers.task_order import due_ranged, id_range, lent_rows, party_rows, task_total, viewer_tasks

__all__ = ["my_tasks"]

_ENABLED = EnabledAction.__table__
_CASE, _ITEM = Case.__table__, WorkflowItem.__table__
_SPEC_FREE = frozenset({"shortName", "__typename"})  # Action fields read without the spec


def _parties(b: Build) -> Any:
    """The viewer's parties as rows (``value``), a parameter of each execution."""
    return party_rows(b.value("task_parties", lambda actor: sorted(actor.party_ids), JSON()), b.json.postgres)


def _lent(b: Build) -> Any:
    """(absent user, party) of everyone the viewer stands in for at this execution's instant."""
    user = b.value("task_user", lambda actor: actor.user_id, String())
    at = b.value("task_at", lambda actor: deputies.now(), Deputyship.__table__.c.starts_at.type)
    return lent_rows(user, at)


def _tasks(b: Build, ranged: Any) -> Any:
    """(instance, NULL or the absent user it is lent by) of the viewer's tasks, once each
    (``resolvers.task_order.viewer_tasks``), each party's range read by ``ranged``."""
    return viewer_tasks(_parties(b), _lent(b), ranged)


def _wants_spec(plan: Any) -> bool:
    """Whether the edges' nodes read an ``Action`` field from the spec."""
    for edges in (f for f in plan.fields if f.name == "edges"):
        for node in (f for f in edges.sub.fields if f.name == "node"):
            for action in (f for f in node.sub.fields if f.name == "action"):
                if any(f.name not in _SPEC_FREE for f in action.sub.fields):
                    return True
    return False


def my_tasks(b: Build, field: Any) -> Any:
    """The select of ``myTasks``' connection JSON (one row)."""
    first, _ = b.arg(field, "first", check_first)
    limit, _ = b.arg(field, "first", lambda value: check_first(value) + 1)
    after, cursor = b.arg(field, "after", check_id_cursor, String())
    order = b.args(field).get("orderBy")
    by_due = getattr(order, "value", order) == "DUE_DATE"
    has_after = cursor is not None
    task, due = _ENABLED, visible_due(b)
    at_due = None
    if by_due and has_after:  # the viewer's due date of the cursor's task
        cursor_due = (
            select(visible_due(b).label("due"))
            .join(_CASE, _CASE.c.object_id == _ITEM.c.id)
            .join(_ENABLED, _ENABLED.c.case_id == _CASE.c.id)
            .where(_ENABLED.c.id == after)
            .cte("cursor_due")
        )
        at_due = select(cursor_due.c.due).scalar_subquery()  # once, however many ranges compare with it
    if by_due:
        if b.json.postgres:  # each party's first page in this order, from the index
            ids = _tasks(b, due_ranged(b.actor, limit, after if has_after else None, at_due)).subquery("tasks")
        else:  # SQLite sorts every task of the viewer
            ids = _tasks(b, id_range(False)).subquery("tasks")
        joined = ids.join(task, task.c.id == ids.c.id).join(_CASE, _CASE.c.id == task.c.case_id)
        joined = joined.join(_ITEM, _ITEM.c.id == _CASE.c.object_id)
        order_by = nulls_last(due, task.c.id)
    else:
        ranged = id_range(b.json.postgres, after if has_after else None, limit)
        ids = _tasks(b, ranged).order_by("id").limit(limit).subquery("page_ids")
        joined = ids.join(task, task.c.id == ids.c.id).outerjoin(_CASE, _CASE.c.id == task.c.case_id)
        joined = joined.outerjoin(_ITEM, _ITEM.c.id == _CASE.c.object_id)
        order_by = [task.c.id]
    columns = [*task.c, ids.c.behalf.label("on_behalf_of"), due.label("item_due")]
    if _wants_spec(field.sub):
        actions = workflow_actions(b)
        joined = joined.outerjoin(
            actions, and_(actions.c.workflow_id == _CASE.c.workflow_id, actions.c.key == task.c.action)
        )
        columns.append(actions.c.value.label("action_spec"))
    rows = select(*columns, func.row_number().over(order_by=order_by).label("rn")).select_from(joined)
    if by_due:
        if has_after:
            rows = rows.where(past_nulls_last(due, task.c.id, at=at_due, after=after))
        rows = rows.limit(limit)
    tasks = rows.order_by(*order_by).cte("my_tasks")
    page = (
        select(b.edge(field.sub, tasks, view=False).label("j"), tasks.c.id.label("c"), tasks.c.rn)
        .select_from(tasks)
        .order_by(tasks.c.rn)
        .subquery("task_page")
    )
    total = None
    if b.counted(field.sub):
        total = task_total(_parties(b), _lent(b), b.json.postgres)
    return b.connection(field.sub, Page(page, first, total))
