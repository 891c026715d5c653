"""The SQL forms of the connections of resources: ``projects``, a project's ``subprojects`` and
a subproject's ``workflowItems`` (``FORMS`` in resolvers/compiled/forms.py names them).

Each is a page as ``resolvers.child_pages`` reads it: the same display order (a subproject's
ordering first, then creation order) and the same cursors, both written once in
resolvers/pagination.py, ``first`` + 1 rows to know whether another page follows, the filter's
parts as bound parameters, and ``totalCount`` only when it is selected. On PostgreSQL an ordered
subproject's page walks its ordering by key, as the resolvers' road does (a join of the ordering
was planned on a guess of its length).
"""

from typing import Any

from sqlalchemy import (
    BigInteger,
    String,
    case,
    cast,
    func,
    null,
    or_,
    select,
    true,
)
from sqlalchemy.sql import visitors
from sqlalchemy.sql.selectable import Exists

from engine.tree.item_status import case_statuses
from models import Case, Project, Subproject, WorkflowItem
from resolvers import visibility
from resolvers.compiled.build import Build, Page
from resolvers.filters import ResourceFilterKey
from resolvers.pagination import (
    check_first,
    check_id_cursor,
    nulls_last,
    past_id,
    past_keyed,
    past_keyless,
    past_nulls_last,
)

__all__ = ["items_page", "projects_page", "subprojects_page"]

_PROJECT, _SUBPROJECT, _ITEM, _CASE = Project.__table__, Subproject.__table__, WorkflowItem.__table__, Case.__table__


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
    if table is _ITEM:  # an item's status is its case's (engine/tree/item_status.py)
        case_status = select(_CASE.c.status).where(_CASE.c.object_id == table.c.id).correlate_except(_CASE)
        statuses = case(
            (status == "OPEN", case_status.where(_CASE.c.status.in_(case_statuses("OPEN"))).exists()),
            else_=case_status.where(_CASE.c.status.in_(case_statuses("CLOSED"))).exists(),
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
        .where(*where, *([past_id(table.c.id, args["after"])] if args["has_after"] else []))
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


def subprojects_page(b: Build, source: Any, field: Any) -> Any:
    page = _by_id_page(
        b,
        field,
        _SUBPROJECT,
        [_SUBPROJECT.c.project_id == source.c.id, visibility.subproject_visible(b.actor, probe=True)],
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


def items_page(b: Build, source: Any, field: Any) -> Any:
    """A subproject's items in display order: the ordering's, in its order, then the others by
    id. Two parts, each read by index: the listed items (as many as the ordering names) and
    the first ``first`` + 1 unlisted ones past the cursor, never every item of the subproject."""
    args = _page_args(b, field, _ITEM)
    item = _ITEM
    rest = [item.c.subproject_id == source.c.id, *args["where"]]  # all but the visibility rule
    rule = visibility.item_visible(b.actor)
    mine = [*rest, _probe(rule) if b.json.postgres and not b.actor.is_admin else rule]
    if b.json.postgres:
        found = _found(b, source, mine, args)
        order = nulls_last(found.c.position, found.c.id)
        rows, own = found.join(item, item.c.id == found.c.id), (item, found)
    else:  # nested shallower: SQLite's parser takes about five nested subqueries
        listed = _listed(b, source).correlate_except(item).subquery("listed")
        order = nulls_last(listed.c.position, item.c.id)
        rows, own = item.outerjoin(listed, listed.c.id == item.c.id), (item, listed)
        if args["has_after"]:
            at = _cursor_place(b, source, args["after"])
            mine = [*mine, past_nulls_last(listed.c.position, item.c.id, at=at, after=args["after"], ties=False)]
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
        total = select(func.count()).select_from(item).where(*rest, rule).correlate_except(item).scalar_subquery()
        if not b.actor.is_admin:
            # a viewer whose view of the subproject's items reaches down from above sees them
            # all: counted without a check per item (bench R4i)
            every = select(func.count()).select_from(item).where(*rest).correlate_except(item).scalar_subquery()
            total = case((visibility.items_reached(b.actor, source.c.id), every), else_=total)
    page_json = b.connection(field.sub, Page(page, args["first"], total)).correlate_except(page)
    return b.json.nested(page_json.scalar_subquery())


def _probe(condition: Any) -> Any:
    """``condition`` (the visibility of the current item: EXISTS subqueries over its id)
    checked for each candidate item as the page reaches it. Written in the page's WHERE clause,
    PostgreSQL may plan each EXISTS hashed instead: all the viewer's grants read and hashed
    first (20,000 for a viewer with a grant per item of a 20,000-item subproject, for a page of
    21 rows: bench R4), because it weighs the probes as if the page read every item. Inside a
    scalar subquery of its own, made once per item, each EXISTS is a probe of one key again.
    The EXISTS correlate with the page's item explicitly: SQLAlchemy correlates a subquery by
    itself only with the query right around it, here the probe, which reads no table."""

    def correlated(element: Any) -> Any:
        return element.correlate(_ITEM) if isinstance(element, Exists) else None

    # the probe itself correlates with the item too: the rule names the item's own columns
    # outside any EXISTS (its subproject id, asked of the viewer's reaching grants)
    probe = select(true()).where(visitors.replacement_traverse(condition, {}, correlated)).correlate(_ITEM)
    return probe.scalar_subquery()


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
    ordering names an item once (engine/tree/ordering.py refuses a repeated id), so no grouping."""
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
        ordered = ordered.where(past_keyed(elements.c.position, elements.c.value, at=at, after=after, ties=False))
        unlisted_part = unlisted_part.where(past_keyless(item.c.id, at=at, after=after))
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
