"""The SQL form of every field the planner compiles: the one place a field gets one.

``FORMS[type name][field name]`` is a ``Form`` (``resolvers.compiled.form``): its shape (a leaf, an object, a list of
parties, a connection), the table its rows come from (none when it reads the row it is on),
and ``build(b, source, field)``, the SQL value of the field over the current row of
``source`` (b is the execution's ``Build``). A field missing here is answered by its
resolver: the whole root field that selects it is (see ``plan``). To compile a new field,
add its form here and let the differential tests (tests/api/test_compiled_reads.py) compare
it with the resolver's answer.

Visibility is the same SQL the loaders use (``resolvers.visibility``), inside each
statement; pages follow ``resolvers.child_pages``' display order and cursors.
"""

from collections.abc import Callable
from typing import Any

from sqlalchemy import (
    case,
    func,
    or_,
    select,
    true,
)

from engine.tree.item_status import item_status_sql
from models import (
    Case,
    CaseRoleParty,
    CaseState,
    EnabledAction,
    Group,
    Project,
    Subproject,
    User,
    Workflow,
    WorkflowItem,
)
from resolvers import visibility
from resolvers.compiled.actions import FORMS as ACTION_FORMS
from resolvers.compiled.build import Build
from resolvers.compiled.fields import FORMS as FIELD_FORMS
from resolvers.compiled.form import (
    CONNECTION,
    CREATED_AT,
    LEAF,
    OBJECT,
    ON_BEHALF_OF,
    PARTIES,
    SAME_ROW,
    Form,
    column,
    party,
    timestamp,
)
from resolvers.compiled.log import case_log, history
from resolvers.compiled.pages import items_page, subprojects_page
from resolvers.compiled.relations import FORMS as RELATION_FORMS
from resolvers.compiled.resource_fields import FORMS as RESOURCE_FIELDS
from resolvers.compiled.workflows import FORMS as WORKFLOW_FORMS

__all__ = ["CONNECTION", "FORMS", "LEAF", "OBJECT", "PARTIES", "Form", "combine", "root_row"]

_PROJECT, _SUBPROJECT, _ITEM = Project.__table__, Subproject.__table__, WorkflowItem.__table__
_CASE, _STATE, _ENABLED = Case.__table__, CaseState.__table__, EnabledAction.__table__
_PLAYER, _USER, _GROUP, _WORKFLOW = CaseRoleParty.__table__, User.__table__, Group.__table__, Workflow.__table__


def _item_status(b: Build, source: Any, field: Any) -> Any:
    """OPEN while the item's case is active or suspended (or it has none), else CLOSED."""
    status = select(_CASE.c.status).where(_CASE.c.object_id == source.c.id).correlate_except(_CASE).scalar_subquery()
    return item_status_sql(status)  # engine/tree/item_status.py


def _case(b: Build, source: Any, field: Any) -> Any:
    return b.one(field.sub, _CASE, "object_id", source.c.id)


def _state(b: Build, source: Any, field: Any) -> Any:
    """The top-level scope's state ('' sorts first among the case's scopes)."""
    return b.one(field.sub, _STATE, "case_id", source.c.id, (_STATE.c.scope == "",))


def _enabled_actions(b: Build, source: Any, field: Any) -> Any:
    """The case's ENABLED user-triggered instances, in the order they were enabled."""
    where = [_ENABLED.c.case_id == source.c.id, _ENABLED.c.status == "ENABLED", _ENABLED.c.trigger == "user"]
    return b.rows(field.sub, _ENABLED, where, [_ENABLED.c.enabled_at, _ENABLED.c.id])


def _workflow_roles(b: Build) -> Any:
    """(workflow id, role, place) of every role of every workflow, read once per statement (a
    CTE): parsing a case's workflow spec again for each of 200 cases cost R1 36 ms."""
    spec = _WORKFLOW.c.spec
    if b.json.postgres:
        roles = (
            func.json_each(b.json.object_at(spec, "roles"))
            .table_valued("key", "value", with_ordinality="ordinality")
            .render_derived()
        )
        place = roles.c.ordinality
    else:
        roles = func.json_each(b.json.object_at(spec, "roles")).table_valued("key", "id")
        place = roles.c.id
    cte = (
        select(_WORKFLOW.c.id.label("workflow_id"), roles.c.key.label("key"), place.label("place"))
        .select_from(_WORKFLOW.join(roles, true()))
        .cte("workflow_roles")
    )
    return cte.prefix_with("MATERIALIZED") if b.json.postgres else cte


def _roles(b: Build, source: Any, field: Any) -> Any:
    """Every role of the case's workflow, in the spec's order, with who plays it.

    On PostgreSQL each ``assignees`` selection's lists of every role of the case are read in
    one grouped subquery per case, joined to the roles by key (a column ``assignees_<response
    name>`` that ``_players`` reads): a subquery per role and case cost R1 (200 cases, two
    roles each) 0.5 ms more of PostgreSQL's time. SQLite keeps a subquery per role."""
    roles = b.shared("workflow_roles", lambda: _workflow_roles(b))
    if not b.json.postgres:
        return b.rows(field.sub, roles, [roles.c.workflow_id == source.c.workflow_id], [roles.c.place])
    rows, columns, grouped = roles, list(roles.c), []  # every column: other forms read the role's row
    for part in field.sub.fields:
        if part.name == "assignees":
            players = _players_by_role(b, part.sub, f"players_{part.response}")
            rows = rows.outerjoin(players, players.c.role == roles.c.key)
            columns.append(func.coalesce(players.c.j, b.json.empty()).label(f"assignees_{part.response}"))
            grouped.append(players)
    case_roles = (
        select(*columns)
        .select_from(rows)
        .where(roles.c.workflow_id == source.c.workflow_id)
        .correlate_except(roles, *grouped)
        .subquery("case_roles")
    )
    return b.rows(field.sub, case_roles, [], [case_roles.c.place])


def _role_key(b: Build, source: Any, field: Any) -> Any:
    return source.c.key


def _players(b: Build, source: Any, field: Any) -> Any:
    """The parties playing the role (``source``: a row of the spec's roles) in the case
    around it, by party id; ids of parties that no longer exist are left out (PostgreSQL: read
    by ``_roles`` for all the case's roles at once)."""
    if b.json.postgres:
        return source.c[f"assignees_{field.response}"]
    return _played(b, field.sub, [_PLAYER.c.case_id == _CASE.c.id, _PLAYER.c.role == source.c.key])


def _players_by_role(b: Build, by_kind: dict[str, Any], name: str) -> Any:
    """(role, JSON list of its parties by party id) for each role played in the case around
    it (PostgreSQL), the parties that no longer exist left out, as ``_played`` lists them."""
    as_user = b.object(by_kind["User"], _USER)
    as_group = b.object(by_kind["Group"], _GROUP)
    party_json = case((_USER.c.id.is_not(None), as_user), else_=as_group)
    return (
        select(_PLAYER.c.role.label("role"), b.json.array(party_json, [_PLAYER.c.party_id]).label("j"))
        .select_from(
            _PLAYER.outerjoin(_USER, _USER.c.id == _PLAYER.c.party_id).outerjoin(
                _GROUP, _GROUP.c.id == _PLAYER.c.party_id
            )
        )
        .where(_PLAYER.c.case_id == _CASE.c.id, or_(_USER.c.id.is_not(None), _GROUP.c.id.is_not(None)))
        .group_by(_PLAYER.c.role)
        .correlate_except(_PLAYER, _USER, _GROUP)
        .subquery(name)
    )


def _played(b: Build, by_kind: dict[str, Any], where: list[Any]) -> Any:
    """The JSON list of the parties of the ``case_role_party`` rows that satisfy ``where``, by
    party id (as ``resolvers.cases.parties`` lists them), those that no longer exist left out
    (sorted by the aggregate on PostgreSQL, by the subquery on SQLite: ``Build.rows``)."""
    as_user = b.object(by_kind["User"], _USER)
    as_group = b.object(by_kind["Group"], _GROUP)
    players = (
        select(
            case((_USER.c.id.is_not(None), as_user), else_=as_group).label("j"),
            _PLAYER.c.party_id.label("o0"),
        )
        .select_from(
            _PLAYER.outerjoin(_USER, _USER.c.id == _PLAYER.c.party_id).outerjoin(
                _GROUP, _GROUP.c.id == _PLAYER.c.party_id
            )
        )
        .where(*where, or_(_USER.c.id.is_not(None), _GROUP.c.id.is_not(None)))
        .correlate_except(_PLAYER, _USER, _GROUP)
    )
    if not b.json.postgres:
        players = players.order_by(_PLAYER.c.party_id)
    inner = players.subquery("players")
    return b.json.nested(select(b.json.array(inner.c.j, [inner.c.o0])).scalar_subquery())


def _action_assignees(b: Build, source: Any, field: Any) -> Any:
    """An enabled instance's assignees (``resolvers.cases.assignees``): the party it is
    assigned to (none if that party is gone), else the players of its assigned role in its
    case, else none."""
    direct = party(b, field.sub, source.c.assignee_party_id)
    players = _played(b, field.sub, [_PLAYER.c.case_id == source.c.case_id, _PLAYER.c.role == source.c.assigned_role])
    chosen = case(
        (source.c.assignee_party_id.is_not(None), case((direct.is_(None), b.json.empty()), else_=b.json.one(direct))),
        (source.c.assigned_role.is_(None), b.json.empty()),
        else_=players,
    )
    return b.json.nested(chosen)


def _assignee(b: Build, source: Any, field: Any) -> Any:
    """The user or group the resource is assigned to (null when none, or gone)."""
    return b.json.nested(party(b, field.sub, source.c.assignee_id))


ASSIGNEE = Form(PARTIES, _assignee, "party")


def _entry_actor(b: Build, source: Any, field: Any) -> Any:
    """Who made a log entry: the user ``actor_id`` names (null for the system, or a user gone)."""
    return b.one(field.sub, _USER, "id", source.c.actor_id)


def root_row(kind: str) -> tuple[Any, Callable[[Any], Any]] | None:
    """``node(id:)`` of a kind the planner compiles: its table and visibility rule."""
    return _ROOTS.get(kind)


_ROOTS: dict[str, tuple[Any, Callable[[Any], Any]]] = {
    "Project": (_PROJECT, visibility.project_visible),
    "Subproject": (_SUBPROJECT, visibility.subproject_visible),
    "WorkflowItem": (_ITEM, visibility.item_visible),
}

_RESOURCE = {
    "id": column("id"),
    "displayName": column("display_name"),
    "description": column("description"),
    "assignee": ASSIGNEE,
    "createdAt": CREATED_AT,
}

_CORE: dict[str, dict[str, Form]] = {
    "Project": {
        **_RESOURCE,
        "status": column("status"),
        "subprojects": Form(CONNECTION, subprojects_page, "subproject"),
        "history": Form(CONNECTION, history("project_id"), "activity"),
    },
    "Subproject": {
        **_RESOURCE,
        "status": column("status"),
        "currency": column("currency"),
        "workflowMode": column("workflow_mode"),
        "workflowItems": Form(CONNECTION, items_page, "workflow_item"),
        "history": Form(CONNECTION, history("subproject_id"), "activity"),
    },
    "WorkflowItem": {
        **_RESOURCE,
        "status": Form(LEAF, _item_status),
        "amountType": column("amount_type"),
        "amount": column("amount"),
        "currency": column("currency"),
        "exchangeRate": column("exchange_rate"),
        "rejectReason": column("reject_reason"),
        "case": Form(OBJECT, _case, "workflow_case"),
        "history": Form(CONNECTION, history("workflow_item_id"), "activity"),
    },
    "Case": {
        "id": column("id"),
        "status": column("status"),
        "version": column("version"),
        "createdAt": CREATED_AT,
        "state": Form(OBJECT, _state, "case_state"),
        "enabledActions": Form(OBJECT, _enabled_actions, "enabled_action"),
        "roles": Form(OBJECT, _roles, "case_role"),
        "log": Form(CONNECTION, case_log, "activity"),
    },
    "Activity": {  # a log entry (resolvers.compiled.log); not its project, subproject, item
        "id": column("id"),
        "seq": column("seq"),
        "at": timestamp("at"),
        "kind": column("kind"),
        "comment": column("comment"),
        "action": column("action"),
        "actor": Form(OBJECT, _entry_actor, "party"),
        "onBehalfOf": ON_BEHALF_OF,
        "via": column("via"),
    },
    "EnabledAction": {
        "id": column("id"),
        "action": SAME_ROW,
        "assignees": Form(PARTIES, _action_assignees, "case_role_party"),
    },
    "Action": {"shortName": column("action")},  # read from the enabled_action row
    "CaseRole": {"role": SAME_ROW, "assignees": Form(PARTIES, _players, "case_role_party")},
    "Role": {"shortName": Form(LEAF, _role_key)},  # read from the spec's roles
    "User": {
        "id": column("id"),
        "login": column("login"),
        "displayName": column("display_name"),
        "organization": column("organization"),
        "kind": column("kind"),
    },
    "Group": {"id": column("id"), "name": column("name"), "displayName": column("display_name")},
}


def combine(*parts: dict[str, dict[str, Form]]) -> dict[str, dict[str, Form]]:
    """The forms of every domain module, by type; a field given two forms is a mistake."""
    combined: dict[str, dict[str, Form]] = {}
    for part in parts:
        for type_name, forms in part.items():
            into = combined.setdefault(type_name, {})
            twice = into.keys() & forms.keys()
            if twice:
                raise ValueError(f"{type_name} has two forms for {sorted(twice)}")
            into.update(forms)
    return combined


# Each domain module that gives fields SQL forms joins the registry here.
FORMS = combine(_CORE, RELATION_FORMS, WORKFLOW_FORMS, RESOURCE_FIELDS, ACTION_FORMS, FIELD_FORMS)
