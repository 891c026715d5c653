"""The SQL forms of an enabled action's own fields and of its ``Action``, read from the spec.

An ``EnabledAction`` is read from an ``enabled_action`` row, or from a row of ``myTasks``' page
(resolvers/compiled/tasks.py), which carries more: ``on_behalf_of`` (the absent user a deputy's
task is lent by), ``item_due`` (its item's due date) and ``action_spec`` (the action's body in
its workflow's spec). A form uses what its row carries and looks up the rest; an enabled action
read elsewhere has no ``on_behalf_of``: null, as its resolver says outside ``myTasks``.

An ``Action`` is made of the same row (``SAME_ROW``): its fields read the action's body of the
stored spec with the parser's defaults (engine/spec/defaults.py: a pretty name defaults to the
short name, a past tense to the pretty name, a flag to false; a list is empty). The bodies of every
workflow's actions, children of parent actions included at any depth, are read once per
statement (``_workflow_actions``, a CTE), as ``forms._workflow_states`` reads the states.
"""

from datetime import UTC
from typing import Any

from sqlalchemy import Date, Integer, case, cast, exists, false, func, literal_column, null, select, true
from sqlalchemy.sql.util import ClauseAdapter

from engine.clock import SYSTEM_CLOCK
from engine.spec.defaults import name_sql, value_sql
from models import Case, Workflow, WorkflowItem
from resolvers import visibility
from resolvers.compiled.build import Build
from resolvers.compiled.form import LEAF, OBJECT, ON_BEHALF_OF, Form, timestamp
from resolvers.compiled.workflows import spec_flag
from resolvers.timestamps import date_sql

__all__ = ["FORMS", "action_spec", "visible_due", "workflow_actions"]

_CASE, _ITEM, _WORKFLOW = Case.__table__, WorkflowItem.__table__, Workflow.__table__


def workflow_actions(b: Build) -> Any:
    """(workflow id, action, body) of every action of every workflow, a parent action's children
    (``children``, nested up to engine.spec.spec_checker.MAX_CHILD_DEPTH) with the others: action
    names are unique in a spec, whatever scope they are in. One recursive CTE per statement."""

    def make() -> Any:
        spec = _WORKFLOW.c.spec
        top = func.json_each(b.json.object_at(spec, "actions")).table_valued("key", "value")
        top = top.render_derived("top_action") if b.json.postgres else top.alias("top_action")
        start = select(
            _WORKFLOW.c.id.label("workflow_id"), top.c.key.label("key"), top.c.value.label("value")
        ).select_from(_WORKFLOW.join(top, true()))
        actions = start.cte("workflow_actions", recursive=True)
        child = func.json_each(b.json.object_at(actions.c.value, "children")).table_valued("key", "value")
        child = child.render_derived("child_action") if b.json.postgres else child.alias("child_action")
        below = select(actions.c.workflow_id, child.c.key, child.c.value).select_from(actions.join(child, true()))
        return actions.union_all(below)

    return b.shared("workflow_actions", make)


def action_spec(b: Build, source: Any) -> Any:
    """The body of the action of the enabled action row ``source`` in its case's workflow."""
    if "action_spec" in source.c:
        return source.c.action_spec
    actions = workflow_actions(b)
    workflow = select(_CASE.c.workflow_id).where(_CASE.c.id == source.c.case_id).correlate_except(_CASE)
    found = select(actions.c.value).where(
        actions.c.workflow_id == workflow.scalar_subquery(), actions.c.key == source.c.action
    )
    return found.correlate_except(actions).scalar_subquery()


def _text(b: Build, body: Any, key: str) -> Any:
    """The text of ``body``'s ``key`` (a name of the spec's own, never a client's), else NULL."""
    if b.json.postgres:
        return body.op("->>")(literal_column(f"'{key}'"))
    return func.json_extract(body, f"$.{key}")


def _flags(b: Build, source: Any) -> Any:
    """The reading of a flag of the action's body, by key (NULL when the spec leaves it out)."""
    body = action_spec(b, source)
    return lambda key: spec_flag(b, body, key)


def _texts(b: Build, source: Any) -> Any:
    """The reading of a text of the action's body, by key (NULL when the spec leaves it out)."""
    body = action_spec(b, source)
    return lambda key: _text(b, body, key)


def _names(b: Build, source: Any, key: str) -> Any:
    """A list of names (``allowed_roles``...): empty when the spec leaves it out."""
    body = action_spec(b, source)
    if b.json.postgres:
        names = body.op("->")(literal_column(f"'{key}'"))
        return case((func.json_typeof(names) == literal_column("'array'"), names), else_=b.json.empty())
    return func.json(func.coalesce(func.json_extract(body, f"$.{key}"), "[]"))


def _leaf(build: Any) -> Form:
    return Form(LEAF, build)


def _trigger(b: Build, source: Any, field: Any) -> Any:
    """The ``Trigger`` enum's name (USER...) of the spec's value (user...)."""
    return func.upper(value_sql("trigger", _texts(b, source)))


def _timeout(b: Build, source: Any, field: Any) -> Any:
    return cast(_text(b, action_spec(b, source), "timeout_seconds"), Integer)


def _entries(b: Build, source: Any, field: Any, key: str) -> Any:
    """The rows (``key``, ``value``: text) of the spec's object ``key`` (outputs, resolutions),
    in the spec's order, each made into ``field``'s plan; empty when there is none."""
    body = b.json.object_at(action_spec(b, source), key)
    if b.json.postgres:
        each = func.json_each_text(body)
        each = each.table_valued("key", "value", with_ordinality="place").render_derived(f"{key}_entry")
        place = each.c.place
    else:
        each = func.json_each(body).table_valued("key", "value", "id").alias(f"{key}_entry")
        place = each.c.id
    # an output whose state is null is left out, as the parser leaves it out (its name is none);
    # a resolution's null pretty name is its code (``Resolution.prettyName``)
    where = [each.c.value.is_not(None)] if key == "outputs" else []
    return b.rows(field.sub, each, where, [place])


def _fire_at(b: Build, source: Any, field: Any) -> Any:
    return b.json.timestamp(source.c.fire_at)


def visible_due(b: Build) -> Any:
    """An item's due date, none when the viewer may not see the item (hidden ≡ missing, as the
    item loader reads it): over the ``workflow_item`` row of the enclosing select."""
    return case((visibility.item_visible(b.actor), _ITEM.c.due_date), else_=null())


def _due(b: Build, source: Any) -> Any:
    """The due date of the instance's item: carried by a task's row (``visible_due``), else
    looked up. The lookup needs no visibility rule of its own: an instance outside ``myTasks`` is
    reached through its case, and a case through its item (a page, a node, a parent pointer),
    each checked; from a task (whose item may be hidden) to its case's instances the planner
    refuses the enabled_action table twice, and the resolvers answer. (The rule here would also
    nest one EXISTS too deep for SQLite's parser on a case's instances.)"""
    if "item_due" in source.c:
        return source.c.item_due
    item = select(_CASE.c.object_id).where(_CASE.c.id == source.c.case_id).correlate_except(_CASE)
    due = select(_ITEM.c.due_date).where(_ITEM.c.id == item.scalar_subquery()).correlate_except(_ITEM)
    return due.scalar_subquery()


def _due_date(b: Build, source: Any, field: Any) -> Any:
    """A Date as GraphQL writes it (resolvers/timestamps.py)."""
    return date_sql(_due(b, source), postgres=b.json.postgres)


def _today(actor: Any) -> Any:
    return SYSTEM_CLOCK.now().astimezone(UTC).date()


def _overdue(b: Build, source: Any, field: Any) -> Any:
    """``resolvers.due_dates.is_overdue``: ENABLED and now at or past the day after the due
    date (UTC), that is a due date before today's (a parameter of each execution)."""
    today = b.value("today", _today, Date())
    due = _due(b, source)
    late = (source.c.status == "ENABLED") & due.is_not(None) & (due < today)
    return b.json.boolean(func.coalesce(late, false()))


def _case(b: Build, source: Any, field: Any) -> Any:
    """The instance's case, null when the viewer may not see its item (``resolvers.cases.case_of``:
    a task may be assigned to someone who may not see its item), the item's rule adapted to a
    fresh alias of its table as the parent pointers read it (``relations._parent``)."""
    item = _ITEM.alias()
    seen = exists().where(
        item.c.id == _CASE.c.object_id, ClauseAdapter(item).traverse(visibility.item_visible(b.actor))
    )
    return b.one(field.sub, _CASE, "id", source.c.case_id, (seen,))


FORMS: dict[str, dict[str, Form]] = {
    "EnabledAction": {
        "fireAt": Form(LEAF, _fire_at),
        "enabledAt": timestamp("enabled_at"),
        "dueDate": Form(LEAF, _due_date),
        "overdue": Form(LEAF, _overdue),
        "onBehalfOf": ON_BEHALF_OF,
        "case": Form(OBJECT, _case, "workflow_case"),
    },
    "Action": {  # read from the enabled action's row, with its body in the spec
        "prettyName": _leaf(lambda b, s, f: name_sql("pretty_name", _texts(b, s), s.c.action)),
        "prettyPastTense": _leaf(lambda b, s, f: name_sql("pretty_past_tense", _texts(b, s), s.c.action)),
        "trigger": _leaf(_trigger),
        "assignedRole": _leaf(lambda b, s, f: _text(b, action_spec(b, s), "assigned_role")),
        "newState": _leaf(lambda b, s, f: _text(b, action_spec(b, s), "new_state")),
        "timeoutSeconds": _leaf(_timeout),
        "attachDocuments": _leaf(lambda b, s, f: b.json.boolean(value_sql("attach_documents", _flags(b, s)))),
        "alwaysEnabled": _leaf(lambda b, s, f: b.json.boolean(value_sql("always_enabled", _flags(b, s)))),
        "allowedRoles": _leaf(lambda b, s, f: _names(b, s, "allowed_roles")),
        "privileges": _leaf(lambda b, s, f: _names(b, s, "privileges")),
        "enabledStates": _leaf(lambda b, s, f: _names(b, s, "enabled_states")),
        "assignedStates": _leaf(lambda b, s, f: _names(b, s, "assigned_states")),
        "fields": _leaf(lambda b, s, f: _names(b, s, "fields")),  # the case fields it sets (issue 48)
        "requiredFields": _leaf(lambda b, s, f: _names(b, s, "required_fields")),
        "logTitle": _leaf(lambda b, s, f: _text(b, action_spec(b, s), "log_title")),
        "outputs": Form(OBJECT, lambda b, s, f: _entries(b, s, f, "outputs")),
        "resolutions": Form(OBJECT, lambda b, s, f: _entries(b, s, f, "resolutions")),
    },
    "ActionOutput": {"name": _leaf(lambda b, s, f: s.c.key), "newState": _leaf(lambda b, s, f: s.c.value)},
    "Resolution": {
        "code": _leaf(lambda b, s, f: s.c.key),
        # a resolution's value is its pretty name, its code its short name
        "prettyName": _leaf(lambda b, s, f: name_sql("pretty_name", lambda key: s.c.value, s.c.key)),
    },
}
