"""The parts of ``myTasks`` that both roads build alike (resolvers/cases.py, resolvers/due_dates.py
and resolvers/compiled/tasks.py): whose tasks they are and on behalf of whom (``viewer_tasks``),
a party's first tasks in id or due-date order, read from the task index, and the task count,
read from ``task_count``.

Whose: a viewer's tasks are the enabled actions of their own parties (the user and their groups)
and of the parties of the absent users they stand in for (``engine.people.deputies.represented``),
one row per task, carrying as ``behalf`` the absent user it is lent by (the first by id when
several lend it), NULL when the task is the viewer's own too. Each road reads the parties' ranges
its own way (``ranged``), and every road collapses them here.

Issue 52: at a million tasks sorting every task for a page of the order by due date, and
counting them for ``totalCount``, took seconds.

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

from collections.abc import Callable
from typing import Any

from sqlalchemy import and_, case, func, not_, null, or_, select, true, union_all

from engine.people import deputies
from engine.people.visibility import item_visible
from models import Case, TaskAssignment, TaskCount
from resolvers.pagination import past_id, past_keyed, past_keyless

_TASK, _CASE, _COUNT = TaskAssignment.__table__, Case.__table__, TaskCount.__table__

# (rows of parties, their party column, the behalf column, a name) -> select of (id, behalf)
Ranged = Callable[[Any, Any, Any, str], Any]


def party_rows(parties: Any, postgres: bool) -> Any:
    """The viewer's parties (``parties``: a JSON array, a bound parameter) as rows (``value``):
    their number varies from viewer to viewer, and one statement serves every viewer of a kind."""
    if postgres:
        return func.json_array_elements_text(parties).table_valued("value").render_derived("party")
    return func.json_each(parties).table_valued("value").alias("party")


def lent_rows(user: Any, at: Any = None) -> Any:
    """(``absent_id``, ``party_id``) of everyone ``user`` stands in for at ``at`` (default: now)."""
    return deputies.represented(user, at).subquery("represented")


def viewer_tasks(own: Any, lent: Any, ranged: Ranged) -> Any:
    """(``id``, ``behalf``): the viewer's tasks, one row per task. ``own``: the viewer's parties
    (``party_rows``), ``lent``: the parties lent to them (``lent_rows``); ``ranged(source,
    party, behalf, name)`` reads the tasks of each row of ``source`` (its party: ``party``) with
    ``behalf`` beside each. A task is the viewer's own (``behalf`` NULL) when any of their
    parties has it, else the first absent user's (by id) it is lent by."""
    found = union_all(
        ranged(own, own.c.value, null(), "own"), ranged(lent, lent.c.party_id, lent.c.absent_id, "lent")
    ).subquery("found")
    own_too = func.max(case((found.c.behalf.is_(None), 1), else_=0))
    behalf = case((own_too == 1, None), else_=func.min(found.c.behalf))
    return select(found.c.id, behalf.label("behalf")).group_by(found.c.id)


def id_range(postgres: bool, past: Any = None, limit: Any = None) -> Ranged:
    """``ranged`` in id order: the tasks of each party past the cursor ``past`` when given, the
    first ``limit`` of each when given: one range of the index per party, read by its key however
    many tasks the others have (PostgreSQL: LATERAL; SQLite, which has none: the range's ids
    gathered into a JSON array by a subquery correlated to the party)."""

    def ranged(source: Any, party: Any, behalf: Any, name: str) -> Any:
        task = _TASK.alias(f"{name}_task")
        wanted = [task.c.party_id == party, *([past_id(task.c.enabled_action_id, past)] if past is not None else [])]
        if limit is None:
            rows = select(task.c.enabled_action_id.label("id"), behalf.label("behalf"))
            return rows.select_from(source.join(task, and_(*wanted)))
        first = select(task.c.enabled_action_id.label("id")).where(*wanted).order_by(task.c.enabled_action_id)
        first = first.limit(limit)
        if postgres:
            found = first.lateral(f"{name}_range")
            return select(found.c.id, behalf.label("behalf")).select_from(source.join(found, true()))
        ids = select(func.json_group_array(first.correlate(source).subquery(f"{name}_ids").c.id)).scalar_subquery()
        found = func.json_each(ids).table_valued("value").alias(f"{name}_range")
        return select(found.c.value.label("id"), behalf.label("behalf")).select_from(source.join(found, true()))

    return ranged


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


def due_ranged(actor: Any, limit: Any, past: Any = None, at_due: Any = None) -> Ranged:
    """``ranged`` in due-date order (PostgreSQL): each party's first ``limit`` (``due_range``)."""
    return lambda source, party, behalf, name: due_range(source, party, behalf, actor, limit, name, past, at_due)


def task_total(own: Any, lent: Any, postgres: bool) -> Any:
    """``myTasks``' totalCount (both orders, both roads): the viewer's tasks counted once each,
    or the kept count when only one of their parties (and those lent to them) has tasks."""
    counted = select(func.count()).select_from(viewer_tasks(own, lent, id_range(postgres)).subquery("counted"))
    return kept_total(counted.scalar_subquery(), select(own.c.value), select(lent.c.party_id))


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
