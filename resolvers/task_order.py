"""The parts of ``myTasks`` that both roads build alike (resolvers/cases.py, resolvers/due_dates.py
and resolvers/compiled/tasks.py): a party's first tasks in due-date order, read from the task
index, and the task count, read from ``task_count``. Issue 52: at a million tasks sorting every
task for a page of the order by due date, and counting them for ``totalCount``, took seconds.

The order by due date is the viewer's: soonest due first, then those with none, ties by id; the
due date of an item the viewer may not see counts as none (hidden ≡ missing). So a party's tasks
fall in two runs, each a range of ``ix_task_assignment_party_due`` (party, due date, instance):
first the dated tasks the viewer may see, by (due date, id); then the others by id: the undated
(the index's NULLs, last, by id) merged with the dated ones the viewer may not see (a run of
the dated range, filtered). The second run is read only when the first ends before the page
does (PostgreSQL's Append under a LIMIT runs its second child only when the first is done), so a
first page of a viewer with a million dated tasks reads a page of the index. The page takes each
party's first ``limit`` and sorts that handful: a task in the viewer's first ``limit`` is among
the first ``limit`` of every party that has it."""

from typing import Any

from sqlalchemy import case, func, not_, or_, select, true, union_all

from engine.people.visibility import item_visible
from models import Case, TaskAssignment, TaskCount
from resolvers.pagination import past_keyed, past_keyless

_TASK, _CASE, _COUNT = TaskAssignment.__table__, Case.__table__, TaskCount.__table__


def due_range(
    source: Any, party: Any, behalf: Any, actor: Any, limit: Any, name: str, past: Any = None, at_due: Any = None
) -> Any:
    """(instance, ``behalf``) of the first ``limit`` tasks in due-date order of each row of
    ``source`` (its party: ``party``), past the cursor ``past`` whose due date for the viewer is
    ``at_due`` (NULL: it is in the second run). PostgreSQL: the party's ids gathered by a
    subquery correlated to it, unnested beside it."""

    def ranged(suffix: str) -> tuple[Any, Any]:
        task, case_ = _TASK.alias(f"{name}_{suffix}_task"), _CASE.alias(f"{name}_{suffix}_case")
        return task, case_

    task, case_ = ranged("dated")
    seen = item_visible(actor, case_.c.object_id)
    dated = (
        select(task.c.enabled_action_id.label("id"))
        .join(case_, case_.c.id == task.c.case_id)
        .where(task.c.party_id == party, task.c.due_date.is_not(None), seen)
    )
    if past is not None:
        dated = dated.where(past_keyed(task.c.due_date, task.c.enabled_action_id, at=at_due, after=past))
    dated = dated.order_by(task.c.due_date, task.c.enabled_action_id).limit(limit).correlate(source)

    undated_task = _TASK.alias(f"{name}_undated_task")
    undated = select(undated_task.c.enabled_action_id.label("id")).where(
        undated_task.c.party_id == party, undated_task.c.due_date.is_(None)
    )
    hidden_task, hidden_case = ranged("hidden")
    hidden = (
        select(hidden_task.c.enabled_action_id.label("id"))
        .join(hidden_case, hidden_case.c.id == hidden_task.c.case_id)
        .where(
            hidden_task.c.party_id == party,
            hidden_task.c.due_date.is_not(None),
            not_(item_visible(actor, hidden_case.c.object_id)),
        )
    )
    if past is not None:
        undated = undated.where(past_keyless(undated_task.c.enabled_action_id, at=at_due, after=past))
        hidden = hidden.where(past_keyless(hidden_task.c.enabled_action_id, at=at_due, after=past))
    undated = undated.order_by(undated_task.c.enabled_action_id).limit(limit).correlate(source)
    hidden = hidden.order_by(hidden_task.c.enabled_action_id).limit(limit).correlate(source)
    merged = union_all(
        select(undated.subquery(f"{name}_undated").c.id), select(hidden.subquery(f"{name}_hidden").c.id)
    ).subquery(f"{name}_others")
    others = select(merged.c.id).order_by(merged.c.id).limit(limit)
    runs = union_all(select(dated.subquery(f"{name}_first").c.id), select(others.subquery(f"{name}_second").c.id))
    first = select(runs.subquery(f"{name}_runs").c.id).limit(limit).subquery(f"{name}_page")
    ids = select(func.json_agg(first.c.id)).correlate(source).scalar_subquery()
    found = func.json_array_elements_text(ids).table_valued("value").render_derived(f"{name}_range")
    return select(found.c.value.label("id"), behalf.label("behalf")).select_from(source.join(found, true()))


def kept_total(counted: Any, *parties: Any) -> Any:
    """The number of the viewer's tasks, ``parties`` (lists or selects of party ids) being theirs
    and those of everyone they stand in for: when at most one of them has tasks, that party's kept
    count (``task_count``); else ``counted`` (the tasks counted once each: a task reached
    through two of them counts once, which no sum of counts can tell)."""
    held = _COUNT.c
    theirs = or_(*(held.party_id.in_(some) for some in parties))
    having = select(func.count()).where(theirs, held.tasks > 0).scalar_subquery()
    kept = select(func.coalesce(func.sum(held.tasks), 0)).where(theirs).scalar_subquery()
    return case((having <= 1, kept), else_=counted)
