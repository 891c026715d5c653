"""The SQL forms of workflows and of a case's structure: ``Case.workflow``,
``Subproject.workflow``, a ``Workflow``'s own fields, roles and states, a case's ``states``,
``scopes``, ``timers`` and ``suspendedUntil``, and every ``State`` and ``Role`` field.
A workflow's ``spec`` and ``diagram`` stay with the resolvers (Python makes them).

A spec is read as stored (engine/spec/specs.py: the normalized input, keys in the order given,
defaults left out), once per statement into CTEs (``b.shared``): parsing a case's spec again
for each case cost R1 36 ms. The parser's defaults are read as SQL from where they are written
(engine/spec/defaults.py: a pretty name defaults to the short name, ``terminal`` to false);
``hidden_fields`` is none when left out.

States live in scopes: the top level's ``states``, then each parent action's (WORKFLOW,
PARALLEL or DYNAMIC, ``engine.spec.child_specs.PARENT_TRIGGERS``) own ``states`` and, below it, its
``children``' scopes, at most ``MAX_CHILD_DEPTH`` levels deep. ``engine.spec.specs._scope`` lists a
scope's states, then, for each of its actions in order, that action's scope, depth first:
``_spec_states`` walks the scopes the same way (a recursive CTE) and gives each state a sort
key that orders them so (``place``, compared byte by byte). State names are unique across
scopes, so a state is found by its workflow and name.

A ``State`` is read from a row that names it: a ``case_state`` row (``Case.state``), whose
spec columns are looked up, or a row that carries them (``Case.states``, ``Case.scopes``,
``Workflow.states``). A ``Role`` likewise: a row of the core's ``workflow_roles`` (``Case.roles``)
or of ``_spec_roles`` (``Workflow.roles``). ``Workflow.actions`` reads rows of the spec's
actions that carry what the ``Action`` forms read of an enabled action's row (``_spec_actions``).
"""

from typing import Any

from sqlalchemy import Boolean, String, and_, case, cast, func, literal_column, or_, select, true

from engine.spec.child_specs import PARENT_TRIGGERS
from engine.spec.defaults import name_sql, value_sql
from models import Case, CaseState, EnabledAction, Workflow
from resolvers.compiled.build import Build
from resolvers.compiled.form import LEAF, OBJECT, SAME_ROW, Form, column, timestamp

__all__ = ["FORMS", "spec_actions", "spec_flag", "spec_states", "spec_text"]

_WORKFLOW, _CASE, _STATE, _ENABLED = Workflow.__table__, Case.__table__, CaseState.__table__, EnabledAction.__table__
_PLACE_DIGITS = 10  # a scope's or state's place in its object, written with leading zeros


def _quoted(text: str) -> Any:
    """A key of a spec (one of this module's constants) as an SQL string literal: PostgreSQL
    could not tell a bound one for ``json -> text`` from ``json -> integer``."""
    return literal_column(f"'{text}'")


def _each(b: Build, value: Any, key: Any) -> Any:
    """The (key, value, place) rows of the JSON object under ``key`` (an SQL string) of
    ``value``, in the document's order; none when it is absent or not an object."""
    if b.json.postgres:
        part = value.op("->")(key)
        part = case((func.json_typeof(part) == _quoted("object"), part))
        return func.json_each(part).table_valued("key", "value", with_ordinality="place").render_derived()
    path = _quoted("$.").op("||")(key)  # a stored null (null stands for an empty object) has no rows
    part = case((func.json_type(value, path) == _quoted("object"), func.json_extract(value, path)), else_=_quoted("{}"))
    return func.json_each(part).table_valued("key", "value", "id")


def _place(b: Build, each: Any) -> Any:
    return each.c.place if b.json.postgres else each.c.id


def _text(b: Build, value: Any, key: str) -> Any:
    """The string under ``key`` of a JSON object, else NULL."""
    if b.json.postgres:
        return value.op("->>")(_quoted(key))
    return func.json_extract(value, _quoted("$." + key))


def _padded(b: Build, number: Any) -> Any:
    if b.json.postgres:
        return func.lpad(cast(number, String), _PLACE_DIGITS, _quoted("0"))
    return func.printf(_quoted(f"%0{_PLACE_DIGITS}d"), number)


def _then(*parts: Any) -> Any:
    """The SQL strings ``parts`` joined."""
    joined = parts[0]
    for part in parts[1:]:
        joined = joined.op("||")(part)
    return joined


def _spec_states(b: Build) -> Any:
    return b.shared("spec_states", lambda: _make_spec_states(b))


def spec_states(b: Build) -> Any:
    """The states of every workflow's spec, once per statement (for resolvers/compiled/fields.py)."""
    return _spec_states(b)


def spec_actions(b: Build) -> Any:
    """The actions of every workflow's spec, once per statement (for resolvers/compiled/fields.py)."""
    return _spec_actions(b)


def spec_text(b: Build, value: Any, key: str) -> Any:
    return _text(b, value, key)


def spec_flag(b: Build, value: Any, key: str) -> Any:
    """The boolean under ``key`` of a JSON object of the spec, else NULL."""
    if b.json.postgres:
        return cast(_text(b, value, key), Boolean)
    return func.json_extract(value, _quoted("$." + key)) == 1


def _spec_scopes(b: Build) -> Any:
    """(workflow_id, body, depth, place) of every scope of every workflow, once per statement. A
    scope's ``place``: '' for the top one, else its parent's scope's, '1' and the parent's place
    among that scope's actions. One recursive term (PostgreSQL takes no more): the top scope's
    actions are under ``actions``, a parent's under ``children``."""

    def make() -> Any:
        scopes = select(
            _WORKFLOW.c.id.label("workflow_id"),
            _WORKFLOW.c.spec.label("body"),
            literal_column("0").label("depth"),
            _quoted("").label("place"),
        ).cte("spec_scopes", recursive=True)
        actions = _each(b, scopes.c.body, _actions_key(scopes))
        trigger = value_sql("trigger", lambda key: _text(b, actions.c.value, key))
        return scopes.union_all(
            select(
                scopes.c.workflow_id,
                actions.c.value,
                scopes.c.depth + 1,
                _then(scopes.c.place, _quoted("1"), _padded(b, _place(b, actions))),
            )
            .select_from(scopes.join(actions, true()))
            .where(trigger.in_([_quoted(t) for t in PARENT_TRIGGERS]))
        )

    return b.shared("spec_scopes", make)


def _actions_key(scopes: Any) -> Any:
    """Where a scope's actions are: the top scope's ``actions``, a parent action's ``children``."""
    return case((scopes.c.depth == 0, _quoted("actions")), else_=_quoted("children"))


def _sortable(b: Build, place: Any) -> Any:
    """A place compared byte by byte, whatever the database's collation."""
    return place.collate("C") if b.json.postgres else place


def _make_spec_states(b: Build) -> Any:
    """(workflow_id, state, pretty, terminal, hidden, place) of every state of every scope of
    every workflow. A state's ``place`` is its scope's, '0' and its place among the scope's
    states: a scope's states sort before the scopes of its actions, those in the actions' order
    (engine.spec.specs._scope)."""
    scopes = _spec_scopes(b)
    states = _each(b, scopes.c.body, _quoted("states"))
    place = _sortable(b, _then(scopes.c.place, _quoted("0"), _padded(b, _place(b, states))))
    terminal = value_sql("terminal", lambda key: spec_flag(b, states.c.value, key))
    if b.json.postgres:
        given = states.c.value.op("->")(_quoted("hidden_fields"))
        names, roles = given.op("->")(_quoted("names")), given.op("->")(_quoted("visible_to"))
        none = literal_column("'[]'::json")
        hidden = case(
            (func.json_typeof(given) == _quoted("array"), given),
            (func.json_typeof(names) == _quoted("array"), names),  # {names, visible_to}
            else_=none,
        )
        visible_to = case((func.json_typeof(roles) == _quoted("array"), roles), else_=none)
    else:
        form = func.json_type(states.c.value, _quoted("$.hidden_fields"))
        hidden = case(
            (form == _quoted("array"), func.json_extract(states.c.value, _quoted("$.hidden_fields"))),
            (
                func.json_type(states.c.value, _quoted("$.hidden_fields.names")) == _quoted("array"),
                func.json_extract(states.c.value, _quoted("$.hidden_fields.names")),
            ),
            else_=_quoted("[]"),
        )
        roles = func.json_extract(states.c.value, _quoted("$.hidden_fields.visible_to"))
        visible_to = case(
            (func.json_type(states.c.value, _quoted("$.hidden_fields.visible_to")) == _quoted("array"), roles),
            else_=_quoted("[]"),
        )
    cte = (
        select(
            scopes.c.workflow_id,
            states.c.key.label("state"),
            name_sql("pretty_name", lambda key: _text(b, states.c.value, key), states.c.key).label("pretty"),
            terminal.label("terminal"),
            hidden.label("hidden"),
            visible_to.label("visible_to"),  # the roles that see the hidden case fields (resolvers/compiled/fields.py)
            place.label("place"),
        )
        .select_from(scopes.join(states, true()))
        .cte("spec_states")
    )
    return cte.prefix_with("MATERIALIZED") if b.json.postgres else cte


def _spec_actions(b: Build) -> Any:
    """(workflow_id, action, action_spec, place) of every action of every scope of every
    workflow, once per statement: ``engine.spec.specs._scope`` lists a scope's actions, then each
    parent's child scope's, depth first (the order of ``_make_spec_states``). The columns are
    those an ``Action``'s forms read of a row: ``action`` (its name) and ``action_spec`` (its
    body, as a task's row of ``myTasks`` carries it), so every ``Action`` field compiled over an
    enabled action compiles over these rows too."""

    def make() -> Any:
        scopes = _spec_scopes(b)
        actions = _each(b, scopes.c.body, _actions_key(scopes))
        cte = (
            select(
                scopes.c.workflow_id,
                actions.c.key.label("action"),
                actions.c.value.label("action_spec"),
                _sortable(b, _then(scopes.c.place, _quoted("0"), _padded(b, _place(b, actions)))).label("place"),
            )
            .select_from(scopes.join(actions, true()))
            .cte("spec_actions")
        )
        return cte.prefix_with("MATERIALIZED") if b.json.postgres else cte

    return b.shared("spec_actions", make)


def _spec_roles(b: Build) -> Any:
    """(workflow_id, key, pretty, place) of every role of every workflow, once per statement."""

    def make() -> Any:
        roles = _each(b, _WORKFLOW.c.spec, _quoted("roles"))
        cte = (
            select(
                _WORKFLOW.c.id.label("workflow_id"),
                roles.c.key.label("key"),
                name_sql("pretty_name", lambda key: _text(b, roles.c.value, key), roles.c.key).label("pretty"),
                _place(b, roles).label("place"),
            )
            .select_from(_WORKFLOW.join(roles, true()))
            .cte("spec_roles")
        )
        return cte.prefix_with("MATERIALIZED") if b.json.postgres else cte

    return b.shared("spec_roles", make)


# -- State and Role: read from a row that carries the spec's columns, or looked up -------------


def _state_spec(b: Build, source: Any, name: str) -> Any:
    """A spec column of the state ``source`` names: its own, when the row carries it, else found
    by the row's case's workflow (a ``case_state`` row)."""
    if name in source.c:
        return source.c[name]
    states = _spec_states(b)
    workflow = select(_CASE.c.workflow_id).where(_CASE.c.id == source.c.case_id).correlate_except(_CASE)
    found = select(states.c[name]).where(
        states.c.workflow_id == workflow.scalar_subquery(), states.c.state == source.c.state
    )
    return found.correlate_except(states).scalar_subquery()


def _role_pretty(b: Build, source: Any, field: Any) -> Any:
    """A role's pretty name: its row's, or found by its workflow and key (``Case.roles``)."""
    if "pretty" in source.c:
        return source.c.pretty
    roles = _spec_roles(b)
    found = select(roles.c.pretty).where(roles.c.workflow_id == source.c.workflow_id, roles.c.key == source.c.key)
    return found.correlate_except(roles).scalar_subquery()


# -- a case's scopes --------------------------------------------------------------------------


def _scope_rows(b: Build) -> Any:
    """Every scope of every case with what its fields read: (case_id, scope, state,
    owner_status: the status of the instance owning a child scope, NULL at the top level,
    case_status, and the state's spec columns). Read for one case at a time: a page's
    planner pushes ``case_id =`` into it."""
    states = _spec_states(b)
    owner = _ENABLED.alias("scope_owner")
    rows = (
        select(
            _STATE.c.case_id,
            _STATE.c.scope,
            _STATE.c.state,
            owner.c.status.label("owner_status"),
            _CASE.c.status.label("case_status"),
            states.c.pretty,
            states.c.terminal,
            states.c.hidden,
        )
        .select_from(
            _STATE.join(_CASE, _CASE.c.id == _STATE.c.case_id)
            .join(states, and_(states.c.workflow_id == _CASE.c.workflow_id, states.c.state == _STATE.c.state))
            .outerjoin(owner, owner.c.id == _STATE.c.scope)
        )
        .subquery("case_scopes")
    )
    return rows


def _states(b: Build, source: Any, field: Any) -> Any:
    """The state of every running scope, top level first (``resolvers.cases.states``: a
    child scope runs while the instance owning it is ENABLED), by scope as the loader orders."""
    rows = _scope_rows(b)
    running = or_(rows.c.owner_status.is_(None), rows.c.owner_status == "ENABLED")
    return b.rows(field.sub, rows, [rows.c.case_id == source.c.id, running], [rows.c.scope])


def _scopes(b: Build, source: Any, field: Any) -> Any:
    rows = _scope_rows(b)
    return b.rows(field.sub, rows, [rows.c.case_id == source.c.id], [rows.c.scope])


def _scope_status(b: Build, source: Any, field: Any) -> Any:
    """``resolvers.cases.scope_status``: the top level's is its case's; a child scope is
    CANCELED with its owner, COMPLETED in a terminal state or once its owner completed, else
    ACTIVE (SUSPENDED with its case)."""
    owner = source.c.owner_status
    return case(
        (owner.is_(None), source.c.case_status),
        (owner == "CANCELED", "CANCELED"),
        (or_(owner == "COMPLETED", source.c.terminal), "COMPLETED"),
        (source.c.case_status == "SUSPENDED", "SUSPENDED"),
        else_="ACTIVE",
    )


def _scope_parent(b: Build, source: Any, field: Any) -> Any:
    """The enabled instance owning the scope; null at the top level ('' names none)."""
    return b.one(field.sub, _ENABLED, "id", source.c.scope)


def _timers(b: Build, source: Any, field: Any) -> Any:
    """The case's ENABLED instances with a fireAt, of every trigger, soonest first."""
    where = [_ENABLED.c.case_id == source.c.id, _ENABLED.c.status == "ENABLED", _ENABLED.c.fire_at.is_not(None)]
    return b.rows(field.sub, _ENABLED, where, [_ENABLED.c.fire_at, _ENABLED.c.id])


# -- workflows --------------------------------------------------------------------------------


def _workflow(b: Build, source: Any, field: Any) -> Any:
    """The definition the row follows (every viewer may read definitions)."""
    return b.one(field.sub, _WORKFLOW, "id", source.c.workflow_id)


def _workflow_roles(b: Build, source: Any, field: Any) -> Any:
    roles = _spec_roles(b)
    return b.rows(field.sub, roles, [roles.c.workflow_id == source.c.id], [roles.c.place])


def _workflow_actions(b: Build, source: Any, field: Any) -> Any:
    actions = _spec_actions(b)
    return b.rows(field.sub, actions, [actions.c.workflow_id == source.c.id], [actions.c.place])


def _workflow_states(b: Build, source: Any, field: Any) -> Any:
    states = _spec_states(b)
    return b.rows(field.sub, states, [states.c.workflow_id == source.c.id], [states.c.place])


_WORKFLOW_FORM = Form(OBJECT, _workflow, "workflow")

FORMS: dict[str, dict[str, Form]] = {
    "Case": {
        "workflow": _WORKFLOW_FORM,
        "suspendedUntil": timestamp("suspended_until"),
        "states": Form(OBJECT, _states, "case_state"),
        "scopes": Form(OBJECT, _scopes, "case_state"),
        "timers": Form(OBJECT, _timers, "enabled_action"),
    },
    "Subproject": {"workflow": _WORKFLOW_FORM},
    "Workflow": {
        "id": column("id"),
        "shortName": column("short_name"),
        "prettyName": column("pretty_name"),
        "version": column("version"),
        "roles": Form(OBJECT, _workflow_roles, "spec_roles"),
        "states": Form(OBJECT, _workflow_states, "spec_states"),
        "actions": Form(OBJECT, _workflow_actions, "spec_actions"),
    },
    "CaseScope": {
        "state": SAME_ROW,
        "status": Form(LEAF, _scope_status),
        "parent": Form(OBJECT, _scope_parent, "enabled_action"),
    },
    "State": {
        "shortName": column("state"),
        "prettyName": Form(LEAF, lambda b, source, field: _state_spec(b, source, "pretty")),
        "terminal": Form(LEAF, lambda b, source, field: b.json.boolean(_state_spec(b, source, "terminal"))),
        "hiddenFields": Form(LEAF, lambda b, source, field: b.json.nested(_state_spec(b, source, "hidden"))),
    },
    "Role": {"prettyName": Form(LEAF, _role_pretty)},
}
