"""The SQL form of every field the planner compiles: the one place a field gets one.

``FORMS[type name][field name]`` is a ``Form``: its shape (a leaf, an object, a list of
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
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    String,
    and_,
    case,
    cast,
    false,
    func,
    literal_column,
    null,
    or_,
    select,
    true,
)

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
from resolvers.compiled.build import Build, Page
from resolvers.compiled.log import case_log, history
from resolvers.filters import ResourceFilterKey
from resolvers.pagination import check_first, check_id_cursor

__all__ = ["CONNECTION", "FORMS", "LEAF", "OBJECT", "PARTIES", "Form", "projects_page", "root_row"]

LEAF, OBJECT, PARTIES, CONNECTION = "leaf", "object", "parties", "connection"


@dataclass(frozen=True, slots=True)
class Form:
    shape: str
    build: Callable[[Build, Any, Any], Any]
    table: str | None = None  # the table a nested form reads rows from


def column(name: str) -> Form:
    return Form(LEAF, lambda b, source, field: source.c[name])


def _same_row(b: Build, source: Any, field: Any) -> Any:
    """An object made of the row the field is on (an enabled action's action, a role)."""
    return b.object(field.sub, source)


SAME_ROW = Form(OBJECT, _same_row)

_PROJECT, _SUBPROJECT, _ITEM = Project.__table__, Subproject.__table__, WorkflowItem.__table__
_CASE, _STATE, _ENABLED = Case.__table__, CaseState.__table__, EnabledAction.__table__
_PLAYER, _USER, _GROUP, _WORKFLOW = CaseRoleParty.__table__, User.__table__, Group.__table__, Workflow.__table__


def _page_args(b: Build, field: Any, table: Any) -> dict[str, Any]:
    """The page arguments as bound parameters (``first``, ``limit``: first + 1, ``after``),
    checked as the resolvers check them: a GraphQLError here or in ``Build.params`` sends the
    root field to the resolvers, which raise the same one. ``has_after``: whether a cursor is
    given (null or not is part of the plan's key). ``where``: the filter's conditions on
    ``table``'s rows, each true when its part of the filter is not given, so that one
    statement serves every filter (a filter variable's shape does not say which parts it has)."""
    first, _ = b.arg(field, "first", check_first)
    limit, _ = b.arg(field, "first", lambda value: check_first(value) + 1)
    after, value = b.arg(field, "after", check_id_cursor)
    return {
        "first": first,
        "limit": limit,
        "after": after,
        "has_after": value is not None,
        "where": _filter(b, field, table),
    }


def _filter_key(value: Any) -> ResourceFilterKey:
    """A ``ProjectFilter`` argument as the resolvers key it (its checks included)."""
    if value is None:
        return ResourceFilterKey()
    if isinstance(value, dict):
        status = value.get("status")
        return ResourceFilterKey(getattr(status, "value", status), value.get("tag"), value.get("search"))
    return value.key()  # type: ignore[no-any-return]


def _filter(b: Build, field: Any, table: Any) -> list[Any]:
    """``resolvers.filters.apply_resource_filter`` with the filter's parts as parameters."""
    status, _ = b.arg(field, "filter", lambda value: _filter_key(value).status, String())
    tag, _ = b.arg(
        field, "filter", lambda value: visibility.tag_pattern(t) if (t := _filter_key(value).tag) else None, String()
    )
    search, _ = b.arg(
        field,
        "filter",
        lambda value: visibility.contains_pattern(t) if (t := _filter_key(value).search) else None,
        String(),
    )
    if table is _ITEM:  # an item's status is its case's: OPEN = active or suspended, CLOSED = the rest
        case_status = select(_CASE.c.status).where(_CASE.c.object_id == table.c.id).correlate_except(_CASE)
        statuses = case(
            (status == "OPEN", case_status.where(_CASE.c.status.in_(["ACTIVE", "SUSPENDED"])).exists()),
            else_=case_status.where(_CASE.c.status.in_(["COMPLETED", "CANCELED"])).exists(),
        )
    else:
        statuses = table.c.status == status
    return [
        or_(status.is_(None), statuses),
        or_(tag.is_(None), visibility.tags_like(table.c.tags, tag)),
        or_(search.is_(None), visibility.name_like(table.c.display_name, search)),
    ]


def _by_id_page(b: Build, field: Any, table: Any, where: list[Any]) -> Page:
    """Children in id (creation) order past the cursor: projects, a project's subprojects."""
    args = _page_args(b, field, table)
    where = [*where, *args["where"]]
    page = (
        select(
            b.edge(field.sub, table).label("j"),
            table.c.id.label("c"),
            func.row_number().over(order_by=table.c.id).label("rn"),
        )
        .select_from(table)
        .where(*where, *([table.c.id > args["after"]] if args["has_after"] else []))
        .order_by(table.c.id)
        .limit(args["limit"])
        .correlate_except(table)
        .subquery()
    )
    total = None
    if b.counted(field.sub):
        total = select(func.count()).select_from(table).where(*where).correlate_except(table).scalar_subquery()
    return Page(page, args["first"], total)


def projects_page(b: Build, field: Any) -> Page:
    """``Query.projects``: the projects the viewer may view."""
    return _by_id_page(b, field, _PROJECT, [visibility.project_visible(b.actor)])


def _subprojects(b: Build, source: Any, field: Any) -> Any:
    page = _by_id_page(
        b, field, _SUBPROJECT, [_SUBPROJECT.c.project_id == source.c.id, visibility.subproject_visible(b.actor)]
    )
    return b.json.nested(b.connection(field.sub, page).correlate_except(page.query).scalar_subquery())


def _listed(b: Build, subproject: Any) -> Any:
    """(id, position) of each item id the subproject's ordering lists, first place only."""
    ordering = subproject.c.workflow_item_ordering
    if b.json.postgres:
        each = (
            func.json_array_elements_text(ordering).table_valued("value", with_ordinality="position").render_derived()
        )
        value, position = each.c.value, each.c.position
    else:
        each = func.json_each(ordering).table_valued("value", "key")
        value, position = each.c.value, each.c.key
    return select(value.label("id"), func.min(position).label("position")).select_from(each).group_by(value)


def _items(b: Build, source: Any, field: Any) -> Any:
    """A subproject's items in display order: the ordering's, in its order, then the others by
    id. Two parts, each read by index: the listed items (as many as the ordering names) and
    the first ``first`` + 1 unlisted ones past the cursor, never every item of the subproject."""
    args = _page_args(b, field, _ITEM)
    item = _ITEM
    visible = [item.c.subproject_id == source.c.id, visibility.item_visible(b.actor), *args["where"]]
    mine = list(visible)
    if b.json.postgres:
        found = _found(b, source, mine, args)
        order = [found.c.position.is_(None), found.c.position, found.c.id]
        rows, own = found.join(item, item.c.id == found.c.id), (item, found)
    else:  # nested shallower: SQLite's parser takes about five nested subqueries
        listed = _listed(b, source).correlate_except(item).subquery("listed")
        order = [listed.c.position.is_(None), listed.c.position, item.c.id]
        rows, own = item.outerjoin(listed, listed.c.id == item.c.id), (item, listed)
        if args["has_after"]:
            at = _cursor_place(b, source, args["after"])
            mine = [
                *mine,
                or_(
                    and_(at.is_not(None), or_(listed.c.position.is_(None), listed.c.position > at)),
                    and_(at.is_(None), listed.c.position.is_(None), item.c.id > args["after"]),
                ),
            ]
    page = (
        select(
            b.edge(field.sub, item).label("j"),
            item.c.id.label("c"),
            func.row_number().over(order_by=order).label("rn"),
        )
        .select_from(rows)
        .where(*([] if b.json.postgres else mine))  # PostgreSQL: _found has applied them
        .order_by(*order)
        .limit(args["limit"])
        .correlate_except(*own)
        .subquery("page")
    )
    total = None
    if b.counted(field.sub):
        total = select(func.count()).select_from(item).where(*visible).correlate_except(item).scalar_subquery()
    page_json = b.connection(field.sub, Page(page, args["first"], total)).correlate_except(page)
    return b.json.nested(page_json.scalar_subquery())


def _cursor_place(b: Build, subproject: Any, after: Any) -> Any:
    """The cursor's place in the subproject's ordering (NULL: not listed)."""
    cursor = _listed(b, subproject).correlate_except(_ITEM).subquery("cursor_place")
    return select(cursor.c.position).where(cursor.c.id == after).scalar_subquery()


def _found(b: Build, source: Any, mine: list[Any], args: dict[str, Any]) -> Any:
    """(id, position) of the page's candidates on PostgreSQL: the first ``first`` + 1 visible
    listed items past the cursor, and the first ``first`` + 1 unlisted ones past it.

    The listed ones are found by walking the ordering in its order and looking each id up by
    primary key (LATERAL) until the page is full: a join of the ordering with the
    subproject's items let PostgreSQL, which guesses 100 elements for any JSON array, compare
    every listed id with every visible item (25 s for a 20,000-item ordering, bench R4). The
    ordering names an item once (engine/ordering.py refuses a repeated id), so no grouping."""
    item = _ITEM
    ordering = source.c.workflow_item_ordering
    elements = (
        func.json_array_elements_text(ordering).table_valued("value", with_ordinality="position").render_derived()
    )
    ordered = select(elements.c.value.label("id"), elements.c.position.label("position"))
    after = args["after"]
    unlisted_part = select(item.c.id.label("id"), cast(null(), BigInteger).label("position")).where(
        item.c.id.not_in(select(_elements(ordering).c.value))
    )
    if args["has_after"]:
        at = _cursor_place(b, source, after)
        ordered = ordered.where(at.is_not(None), elements.c.position > at)
        unlisted_part = unlisted_part.where(or_(at.is_not(None), item.c.id > after))
    # OFFSET 0 keeps the ordering's ids sorted on their own (a sort of ids, not of items) and
    # stops PostgreSQL from pushing the lookup below that sort: the lookups then run in order
    # and stop when the page is full
    listed = ordered.order_by(elements.c.position).offset(0).subquery("listed")

    def listed_page(name: str) -> Any:
        # a scalar subquery (the id is the key), which PostgreSQL runs per listed id, where an
        # EXISTS or a join would be planned by its guesses again
        hit = select(item.c.id).where(item.c.id == listed.c.id, *mine).limit(1).correlate_except(item)
        return (
            select(listed.c.id.label("id"), listed.c.position.label("position"))
            .where(hit.scalar_subquery().is_not(None))
            .order_by(listed.c.position)
            .limit(args["limit"])
            .correlate_except(listed)
            .subquery(name)
        )

    listed_part = listed_page("listed_page")
    # A full page of listed items leaves no room for the unlisted ones: a one-time test spares
    # the scan of every item of the subproject that finding none would be.
    room = select(func.count()).select_from(listed_page("listed_full")).scalar_subquery() < args["limit"]
    unlisted_part = unlisted_part.where(room)
    unlisted_part = unlisted_part.where(*mine).order_by(item.c.id).limit(args["limit"]).correlate_except(item)
    unlisted = unlisted_part.subquery("unlisted")
    return (
        select(listed_part.c.id, listed_part.c.position)
        .union_all(select(unlisted.c.id, unlisted.c.position))
        .subquery("found")
    )


def _elements(ordering: Any) -> Any:
    """The ids of a subproject's ordering (PostgreSQL), for ``NOT IN``."""
    return func.json_array_elements_text(ordering).table_valued("value").render_derived()


def _item_status(b: Build, source: Any, field: Any) -> Any:
    """OPEN while the item's case is active or suspended (or it has none), else CLOSED."""
    status = select(_CASE.c.status).where(_CASE.c.object_id == source.c.id).correlate_except(_CASE).scalar_subquery()
    return case((status.in_(["COMPLETED", "CANCELED"]), "CLOSED"), else_="OPEN")


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
            func.json_each(spec.op("->")(literal_column("'roles'")))
            .table_valued("key", "value", with_ordinality="ordinality")
            .render_derived()
        )
        place = roles.c.ordinality
    else:
        roles = func.json_each(spec, "$.roles").table_valued("key", "id")
        place = roles.c.id
    cte = (
        select(_WORKFLOW.c.id.label("workflow_id"), roles.c.key.label("key"), place.label("place"))
        .select_from(_WORKFLOW.join(roles, true()))
        .cte("workflow_roles")
    )
    return cte.prefix_with("MATERIALIZED") if b.json.postgres else cte


def _workflow_states(b: Build) -> Any:
    """(workflow id, state, pretty name, terminal) of every top-level state of every workflow,
    read once per statement like ``_workflow_roles``, with the spec parser's defaults
    (engine/specs.py: the pretty name defaults to the short name, terminal to false)."""
    spec = _WORKFLOW.c.spec
    if b.json.postgres:
        states = func.json_each(spec.op("->")(literal_column("'states'"))).table_valued("key", "value").render_derived()
        pretty = states.c.value.op("->>")(literal_column("'pretty_name'"))
        terminal = cast(states.c.value.op("->>")(literal_column("'terminal'")), Boolean)
    else:
        states = func.json_each(spec, "$.states").table_valued("key", "value")
        pretty = func.json_extract(states.c.value, "$.pretty_name")
        terminal = func.json_extract(states.c.value, "$.terminal") == 1
    cte = (
        select(
            _WORKFLOW.c.id.label("workflow_id"),
            states.c.key.label("key"),
            func.coalesce(pretty, states.c.key).label("pretty"),
            func.coalesce(terminal, false()).label("terminal"),
        )
        .select_from(_WORKFLOW.join(states, true()))
        .cte("workflow_states")
    )
    return cte.prefix_with("MATERIALIZED") if b.json.postgres else cte


def _state_spec(b: Build, source: Any, column: str) -> Any:
    """A column of ``_workflow_states`` for the state of a ``case_state`` row (``source``),
    in its case's workflow."""
    states = b.shared("workflow_states", lambda: _workflow_states(b))
    workflow = select(_CASE.c.workflow_id).where(_CASE.c.id == source.c.case_id).correlate_except(_CASE)
    found = select(states.c[column]).where(
        states.c.workflow_id == workflow.scalar_subquery(), states.c.key == source.c.state
    )
    return found.correlate_except(states).scalar_subquery()


def _state_pretty(b: Build, source: Any, field: Any) -> Any:
    return _state_spec(b, source, "pretty")


def _state_terminal(b: Build, source: Any, field: Any) -> Any:
    return b.json.boolean(_state_spec(b, source, "terminal"))


def _created_at(b: Build, source: Any, field: Any) -> Any:
    return b.json.timestamp(source.c.created_at)


CREATED_AT = Form(LEAF, _created_at)


def _roles(b: Build, source: Any, field: Any) -> Any:
    """Every role of the case's workflow, in the spec's order, with who plays it."""
    roles = b.shared("workflow_roles", lambda: _workflow_roles(b))
    return b.rows(field.sub, roles, [roles.c.workflow_id == source.c.workflow_id], [roles.c.place])


def _role_key(b: Build, source: Any, field: Any) -> Any:
    return source.c.key


def _players(b: Build, source: Any, field: Any) -> Any:
    """The parties playing the role (``source``: a row of the spec's roles) in the case
    around it, by party id; ids of parties that no longer exist are left out."""
    return _played(b, field.sub, [_PLAYER.c.case_id == _CASE.c.id, _PLAYER.c.role == source.c.key])


def _played(b: Build, by_kind: dict[str, Any], where: list[Any]) -> Any:
    """The JSON list of the parties of the ``case_role_party`` rows that satisfy ``where``, by
    party id (as ``resolvers.cases.parties`` lists them), those that no longer exist left out."""
    as_user = b.object(by_kind["User"], _USER)
    as_group = b.object(by_kind["Group"], _GROUP)
    inner = (
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
        .order_by(_PLAYER.c.party_id)
        .correlate_except(_PLAYER, _USER, _GROUP)
        .subquery("players")
    )
    return b.json.nested(select(b.json.array(inner.c.j, [inner.c.o0])).scalar_subquery())


def _action_assignees(b: Build, source: Any, field: Any) -> Any:
    """An enabled instance's assignees (``resolvers.cases.assignees``): the party it is
    assigned to (none if that party is gone), else the players of its assigned role in its
    case, else none."""
    direct = _party(b, field.sub, source.c.assignee_party_id)
    players = _played(b, field.sub, [_PLAYER.c.case_id == source.c.case_id, _PLAYER.c.role == source.c.assigned_role])
    chosen = case(
        (source.c.assignee_party_id.is_not(None), case((direct.is_(None), b.json.empty()), else_=b.json.one(direct))),
        (source.c.assigned_role.is_(None), b.json.empty()),
        else_=players,
    )
    return b.json.nested(chosen)


def _party(b: Build, by_kind: dict[str, Any], party_id: Any) -> Any:
    """The JSON of the user or group ``party_id`` names, else null."""
    as_user = select(b.object(by_kind["User"], _USER)).where(_USER.c.id == party_id)
    as_group = select(b.object(by_kind["Group"], _GROUP)).where(_GROUP.c.id == party_id)
    return func.coalesce(
        as_user.correlate_except(_USER).scalar_subquery(), as_group.correlate_except(_GROUP).scalar_subquery()
    )


def _assignee(b: Build, source: Any, field: Any) -> Any:
    """The user or group the resource is assigned to (null when none, or gone)."""
    return b.json.nested(_party(b, field.sub, source.c.assignee_id))


ASSIGNEE = Form(PARTIES, _assignee, "party")


def _entry_actor(b: Build, source: Any, field: Any) -> Any:
    """Who made a log entry: the user ``actor_id`` names (null for the system, or a user gone)."""
    return b.one(field.sub, _USER, "id", source.c.actor_id)


def _on_behalf_of(b: Build, source: Any, field: Any) -> Any:
    """The absent user (or group) a deputy acted for: null when none, or gone."""
    return b.json.nested(_party(b, field.sub, source.c.on_behalf_of))


def _entry_data(b: Build, source: Any, field: Any) -> Any:
    """The entry's JSON as stored (both databases keep the text: key order, number forms)."""
    return b.json.nested(source.c.data)


def _entry_at(b: Build, source: Any, field: Any) -> Any:
    return b.json.timestamp(source.c.at)


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

FORMS: dict[str, dict[str, Form]] = {
    "Project": {
        **_RESOURCE,
        "status": column("status"),
        "subprojects": Form(CONNECTION, _subprojects, "subproject"),
        "history": Form(CONNECTION, history("project_id"), "activity"),
    },
    "Subproject": {
        **_RESOURCE,
        "status": column("status"),
        "currency": column("currency"),
        "workflowMode": column("workflow_mode"),
        "workflowItems": Form(CONNECTION, _items, "workflow_item"),
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
        "at": Form(LEAF, _entry_at),
        "kind": column("kind"),
        "comment": column("comment"),
        "data": Form(LEAF, _entry_data),
        "action": column("action"),
        "hash": column("hash"),
        "prevHash": column("prev_hash"),
        "actor": Form(OBJECT, _entry_actor, "party"),
        "onBehalfOf": Form(PARTIES, _on_behalf_of, "party"),
    },
    "State": {  # read from the case_state row
        "shortName": column("state"),
        "prettyName": Form(LEAF, _state_pretty),
        "terminal": Form(LEAF, _state_terminal),
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
    },
    "Group": {"id": column("id"), "name": column("name"), "displayName": column("display_name")},
}
