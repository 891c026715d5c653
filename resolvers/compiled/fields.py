"""The SQL forms of case fields, log titles and instance statuses (issue 48): ``Case.fields``,
``Activity.data`` (its ``fields`` changes), ``Activity.title``, ``EnabledAction.status`` and
``completedAt``; the rules are engine/cases/case_fields.py's and resolvers/case_fields.py's.

Hidden ≡ missing: a case field its top-level state hides (``hidden_fields``) is left out for a
viewer who is not an admin and plays none of the state's ``visible_to`` roles in the case (as a
deputy: the roles of the absent users they stand in for, engine/people/deputies.py). An
admin's statement (a plan is built per kind of viewer) reads the stored JSON as it is. The names
hidden from the viewer are one correlated subquery over the case, its top-level state and the
spec's states (``spec_states``, a CTE per statement); the object is rebuilt from its members
without them, in the stored order (PostgreSQL: ``json_each`` of a ``json`` value keeps the
text and order of each member; SQLite: ``json_each`` in document order, each member's type
kept).
"""

from typing import Any

from sqlalchemy import and_, case, exists, func, literal_column, null, select
from sqlalchemy.dialects.postgresql import aggregate_order_by

from engine.people import deputies
from engine.spec.defaults import name_sql
from models import Activity, Case, CaseRoleParty, CaseState, User
from resolvers.compiled.build import Build
from resolvers.compiled.form import LEAF, Form, column, timestamp
from resolvers.compiled.workflows import spec_actions, spec_states, spec_text

__all__ = ["FORMS"]

_CASE, _STATE, _PLAYER, _USER = Case.__table__, CaseState.__table__, CaseRoleParty.__table__, User.__table__
_ACTIVITY = Activity.__table__


def _q(text: str) -> Any:
    return literal_column(f"'{text}'")


def _members(b: Build, array: Any) -> Any:
    """The strings of a JSON array, as rows of one column."""
    if b.json.postgres:
        return select(func.json_array_elements_text(array).column_valued("value"))
    each = func.json_each(array).table_valued("value")
    return select(each.c.value)


def _lent(b: Build) -> Any:
    """The parties lent to the viewer as a deputy (``deputies.represented``), once per statement:
    a CTE, which SQLite parses at the statement's top (embedded in ``_hidden``, its parser's stack
    overflowed)."""
    actor = b.actor
    return b.shared("viewer_lent", lambda: deputies.represented(actor.user_id, actor.deputies_at).cte("viewer_lent"))


def _hidden(b: Build, case_id: Any) -> Any:
    """The JSON list of the names the case's top-level state hides from the (non-admin) viewer.
    Its tables are aliases of their own: the row around it may be a ``workflow_case`` row too."""
    states = spec_states(b)
    case_row, state, player = _CASE.alias("hiding_case"), _STATE.alias("hiding_state"), _PLAYER.alias("hiding_player")
    plays = exists(
        select(player.c.case_id).where(
            player.c.case_id == case_row.c.id,
            deputies.held_or_lent(b.actor, player.c.party_id, _lent(b)),  # a deputy plays the absent player's roles
            player.c.role.in_(_members(b, states.c.visible_to).scalar_subquery()),
        )
    )
    none = literal_column("'[]'::json") if b.json.postgres else _q("[]")
    return (
        select(case((plays, none), else_=states.c.hidden))
        .select_from(
            case_row.join(state, and_(state.c.case_id == case_row.c.id, state.c.scope == "")).join(
                states, and_(states.c.workflow_id == case_row.c.workflow_id, states.c.state == state.c.state)
            )
        )
        .where(case_row.c.id == case_id)
        .correlate_except(case_row, state, states, player)
        .scalar_subquery()
    )


def _without(b: Build, value: Any, hidden: Any) -> Any:
    """The JSON object ``value`` without the members ``hidden`` (a JSON list) names."""
    if b.json.postgres:
        each = func.json_each(value).table_valued("key", "value", with_ordinality="place").render_derived()
        agg = func.json_object_agg(each.c.key, aggregate_order_by(each.c.value, each.c.place))
        return (
            select(func.coalesce(agg, literal_column("'{}'::json")))
            .select_from(each)
            .where(each.c.key.not_in(_members(b, hidden).scalar_subquery()))
            .scalar_subquery()
        )
    each = func.json_each(value).table_valued("key", "value", "type")
    member = case(
        (each.c.type.in_(["object", "array"]), func.json(each.c.value)),
        (each.c.type == "true", func.json(_q("true"))),
        (each.c.type == "false", func.json(_q("false"))),
        (each.c.type == "null", func.json(_q("null"))),
        else_=each.c.value,
    )
    return (
        select(func.json_group_object(each.c.key, member))
        .select_from(each)
        .where(each.c.key.not_in(_members(b, hidden).scalar_subquery()))
        .scalar_subquery()
    )


def _case_fields(b: Build, source: Any, field: Any) -> Any:
    if b.actor.is_admin:
        return b.json.nested(source.c.fields)
    return b.json.nested(_without(b, source.c.fields, _hidden(b, source.c.id)))


def _entry_data(b: Build, source: Any, field: Any) -> Any:
    """The entry's JSON as stored (both databases keep the text: key order, number forms),
    but for the changes of case fields hidden from the viewer (``data.fields``)."""
    data = source.c.data
    if b.actor.is_admin:
        return b.json.nested(data)
    hidden = _hidden(b, source.c.case_id)
    if b.json.postgres:
        changes = data.op("->")(_q("fields"))
        each = func.json_each(data).table_valued("key", "value", with_ordinality="place").render_derived()
        filtered = _without(b, each.c.value, hidden)
        member = case((each.c.key == _q("fields"), filtered), else_=each.c.value)
        rebuilt = func.json_object_agg(each.c.key, aggregate_order_by(member, each.c.place))
        ordered = select(rebuilt).select_from(each).scalar_subquery()
        has_fields = and_(func.json_typeof(changes) == _q("object"), source.c.case_id.is_not(None))
        return case((has_fields, ordered), else_=data)
    has_fields = and_(func.json_type(data, _q("$.fields")) == _q("object"), source.c.case_id.is_not(None))
    filtered = func.json_set(
        data, _q("$.fields"), func.json(_without(b, func.json_extract(data, _q("$.fields")), hidden))
    )
    return func.json(case((has_fields, filtered), else_=data))


def _sealed(name: str) -> Any:
    """``hash`` / ``prevHash``: null for an entry that records changes of case fields hidden from
    the viewer (as resolvers/case_fields.py ``sealed``): the hash is over every value, so with the
    rest of the entry in hand a reader could test guesses of a hidden value against it."""

    def form(b: Build, source: Any, field: Any) -> Any:
        value = source.c[name]
        if b.actor.is_admin:
            return value
        data, hidden = source.c.data, _hidden(b, source.c.case_id)
        if b.json.postgres:
            each = func.json_each(data.op("->")(_q("fields"))).table_valued("key", "value").render_derived()
            changes_object = func.json_typeof(data.op("->")(_q("fields"))) == _q("object")
        else:
            each = func.json_each(data, _q("$.fields")).table_valued("key", "value")
            changes_object = func.json_type(data, _q("$.fields")) == _q("object")
        names = select(each.c.key).where(each.c.key.in_(_members(b, hidden).scalar_subquery()))
        touches_hidden = and_(source.c.case_id.is_not(None), changes_object, exists(names))
        return case((touches_hidden, null()), else_=value)

    return form


def _title(b: Build, source: Any, field: Any) -> Any:
    """The stored title, else for an executed action "<past tense> by <actor>" (the past tense
    alone when no user made it), else null."""
    actions = spec_actions(b)
    spec = actions.c.action_spec
    past = name_sql("pretty_past_tense", lambda key: spec_text(b, spec, key), source.c.action)
    case_row = _CASE.alias("titled_case")
    past_of_case = (
        select(past)
        .select_from(
            case_row.outerjoin(
                actions, and_(actions.c.workflow_id == case_row.c.workflow_id, actions.c.action == source.c.action)
            )
        )
        .where(case_row.c.id == source.c.case_id)
        .correlate_except(case_row, actions)
        .scalar_subquery()
    )
    user = _USER.alias("titled_actor")
    name = select(user.c.display_name).where(user.c.id == source.c.actor_id).correlate_except(user)
    by = func.coalesce(_q(" by ").op("||")(name.scalar_subquery()), _q(""))
    default = case(
        (
            and_(source.c.kind == "action_executed", source.c.action.is_not(None), source.c.case_id.is_not(None)),
            past_of_case.op("||")(by),
        )
    )
    return func.coalesce(source.c.title, default)


FORMS = {
    "Case": {"fields": Form(LEAF, _case_fields)},
    "Activity": {
        "data": Form(LEAF, _entry_data),
        "title": Form(LEAF, _title),
        "hash": Form(LEAF, _sealed("hash")),
        "prevHash": Form(LEAF, _sealed("prev_hash")),
    },
    "EnabledAction": {"status": column("status"), "completedAt": timestamp("completed_at")},
}
