"""A page of a parent's children in display order, ordered, cut and counted by the database:
a subproject's workflow items, a project's subprojects.

Display order: the children the parent's ordering lists, in its order, then every other child
by creation time (ids are time-ordered). For items that is the display order (``engine.tree.ordering.ordered``,
the subproject's ``workflow_item_ordering``); subprojects have no ordering, so creation order.
Reading every visible id to order them in Python made each page of a subproject of 100,000
items cost 100,000 rows; here the database ranks them and returns the page and its count. One
parent's page, when that parent has no ordering, is read by keyset instead, and counted apart;
on PostgreSQL a parent with an ordering has its page found by walking the ordering (``_walk``),
whatever plan PostgreSQL keeps for the statement.

A cursor is a child's id; the page starts after the cursor's place in display order, computed
from the cursor itself, so a cursor whose child has since moved, left a filter or been deleted
still continues where it was: after its position in the ordering if it was listed, else after
it in creation order.
"""

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import BigInteger, Integer, String, and_, bindparam, case, cast, func, literal, null, or_, select, true
from sqlalchemy.dialects import postgresql

from engine.people.actors import Actor
from models import Subproject, WorkflowItem
from resolvers import visibility
from resolvers.filters import ResourceFilterKey, apply_resource_filter
from resolvers.pagination import Page, nulls_last, past_id, past_keyed, past_keyless, past_nulls_last


@dataclass(frozen=True)
class Children:
    """What a parent holds: the child table, its parent column, and who may see a child."""

    model: Any
    parent: str
    visible: Callable[[Actor], Any]


ITEMS = Children(WorkflowItem, "subproject_id", visibility.item_visible)
SUBPROJECTS = Children(Subproject, "project_id", visibility.subproject_visible)


@dataclass(frozen=True, slots=True)
class PageKey:
    """One connection's page: the parent (with the ordering it was read with, if it has
    one), the filter, the page size, the cursor, and whether the page's total is wanted."""

    parent_id: str
    ordering: tuple[str, ...]
    filter: ResourceFilterKey
    first: int
    after: str | None
    counted: bool = True

    def listed(self) -> list[str]:
        return list(dict.fromkeys(self.ordering))

    def cursor_position(self) -> int | None:
        """The cursor's place in the ordering; None when it is not listed (or there is none)."""
        if self.after is None or self.after not in self.ordering:
            return None
        return self.listed().index(self.after)

    def batch(self) -> tuple[Any, ...]:
        """Keys that agree on this are read by one statement (the cursor's place differs
        between parents, so it is part of it)."""
        return (self.filter, self.first, self.after, self.cursor_position(), self.counted)


def _positions(keys: Sequence[PageKey], *, postgres: bool) -> Any:
    """(parent_id, child_id, position) of every listed child, as one parameter: an array per
    column on PostgreSQL, a JSON array on SQLite. Parent and child, since an ordering may still
    name a child that has moved on to another parent."""
    listed = [(key.parent_id, child_id, index) for key in keys for index, child_id in enumerate(key.listed())]
    if postgres:
        parents, children, positions = zip(*listed, strict=True)
        return (
            func.unnest(
                bindparam(None, list(parents), type_=postgresql.ARRAY(String)),
                bindparam(None, list(children), type_=postgresql.ARRAY(String)),
                bindparam(None, list(positions), type_=postgresql.ARRAY(Integer)),
            )
            .table_valued("parent_id", "child_id", "position")
            .render_derived()
        )
    each = func.json_each(bindparam(None, json.dumps(listed), type_=String)).table_valued("value")
    return select(
        func.json_extract(each.c.value, "$[0]").label("parent_id"),
        func.json_extract(each.c.value, "$[1]").label("child_id"),
        func.json_extract(each.c.value, "$[2]").label("position"),
    ).subquery()


def query(
    children: Children,
    keys: Sequence[PageKey],
    *,
    actor: Actor,
    postgres: bool,
    among: Callable[[Any, Any], Any],
) -> Any:
    """The pages of ``keys`` (which agree on ``batch()``), parent by parent in display order:
    each child's row with its ``place`` in display order, its parent's ``total_count`` when
    the keys are counted and, past a cursor, ``past`` (1 after the cursor) and ``seen`` (rows
    past the cursor so far). A page is its first ``first`` rows past the cursor; one row more
    says there is a next page, and a counted page's parent's first row comes along to carry
    the count."""
    key = keys[0]
    child = children.model.__table__
    parent = child.c[children.parent]
    if _by_keyset(keys):
        return _keyset(children, key, actor)
    if _by_walk(keys, postgres=postgres):
        return _walks(children, keys, actor)
    source: Any = child
    position: Any = None
    order: list[Any] = [child.c.id]
    if any(k.ordering for k in keys):
        positions = _positions(keys, postgres=postgres)
        source = child.outerjoin(positions, and_(positions.c.child_id == child.c.id, positions.c.parent_id == parent))
        position = positions.c.position
        order = nulls_last(position, child.c.id)  # listed first, in their order
    columns = [
        child.c.id.label("ranked_id"),
        parent.label("ranked_parent"),
        func.row_number().over(partition_by=parent, order_by=order).label("place"),
    ]
    if key.counted:
        columns.append(func.count().over(partition_by=parent).label("total_count"))
    past = _past_cursor(key, child.c.id, position)
    if past is not None:
        passed = case((past, 1), else_=0)
        columns += [
            passed.label("past"),
            func.sum(passed).over(partition_by=parent, order_by=order).label("seen"),
        ]
    # Ranked by id alone: the windows carry narrow rows, the page's rows are read by key after.
    ranked = select(*columns).select_from(source).where(among(parent, [k.parent_id for k in keys]))
    ranked = ranked.where(children.visible(actor))
    ranked = apply_resource_filter(ranked, children.model, key.filter).subquery()
    wanted = key.first + 1
    if past is None:
        keep = ranked.c.place <= wanted
    else:
        keep = and_(ranked.c.past == 1, ranked.c.seen <= wanted)
        if key.counted:
            keep = or_(keep, ranked.c.place == 1)
    ranks = [column for column in ranked.c if column.name not in ("ranked_id", "ranked_parent")]
    return (
        select(*child.c, *ranks)
        .join_from(ranked, child, child.c.id == ranked.c.ranked_id)
        .where(keep)
        .order_by(ranked.c.ranked_parent, ranked.c.place)
    )


def _by_keyset(keys: Sequence[PageKey]) -> bool:
    """One parent without an ordering: its page is its children after the cursor in id order."""
    return len(keys) == 1 and not keys[0].ordering


def _keyset(children: Children, key: PageKey, actor: Actor) -> Any:
    """One parent's page in creation order: the children after the cursor, by id, ``first`` + 1
    of them. Read in id order under a LIMIT, it stops once the page is full instead of ranking
    every visible child, however many the parent holds (a client scrolling a subproject of
    100,000 items). A counted page comes with ``total_count``, an aggregate of its own: on every
    row, and on one row of NULLs past the last page, which has no children to carry it. Ranking
    20,000 items with window functions to count them cost PostgreSQL twice the aggregate."""
    child = children.model.__table__

    def visible_children(query: Any) -> Any:
        query = query.where(child.c[children.parent] == key.parent_id, children.visible(actor))
        return apply_resource_filter(query, children.model, key.filter)

    page = visible_children(select(*child.c))
    if key.after is not None:
        page = page.where(past_id(child.c.id, key.after))
    page = page.order_by(child.c.id).limit(key.first + 1)
    if not key.counted:
        return page
    counted = visible_children(select(func.count().label("total_count")).select_from(child)).subquery("counted")
    page = page.subquery("page")
    return select(*page.c, counted.c.total_count).select_from(counted.outerjoin(page, true())).order_by(page.c.id)


def _by_walk(keys: Sequence[PageKey], *, postgres: bool) -> bool:
    """Parents with an ordering, on PostgreSQL: each page is found by walking its ordering."""
    return postgres and any(k.ordering for k in keys)


def _walks(children: Children, keys: Sequence[PageKey], actor: Actor) -> Any:
    """Each parent's page found by walking its ordering (``_walk``), one part per parent in
    one statement, ordered by parent and ``place``."""
    parts = [_walk(children, key, actor, index) for index, key in enumerate(keys)]
    if len(parts) == 1:
        return parts[0].order_by("place")
    union = parts[0].union_all(*parts[1:]).subquery("walks")
    return select(union).order_by(union.c.ranked_parent, union.c.place)


def _walk(children: Children, key: PageKey, actor: Actor, index: int) -> Any:
    """One parent's page on PostgreSQL: its listed children past the cursor, found by walking
    the ordering in its order and looking each id up by key until ``first`` + 1 are found,
    then (when the listed ones leave room) its first unlisted children by id past the cursor.
    Every row carries ``ranked_parent`` and ``place``, a counted page ``total_count`` (on one
    row of NULLs when the page is empty, to carry it).

    The ranking of every child of the parent this replaces was joined with the ordering passed
    as an array: PostgreSQL plans a prepared statement for any array after its fifth run (a
    generic plan, with a guess of a few elements), and for an ordering of 20,000 items that
    plan took 10 s (bench R4). This statement's shape leaves the planner no join to choose:
    the lookups run in the ordering's order and stop when the page is full, and the scan of
    the unlisted children runs only when the listed ones leave room. The ordering is sent once
    (the ``index``-th array parameter of the statement) and read by both parts."""
    child = children.model.__table__
    parent = child.c[children.parent]
    wanted = key.first + 1
    listed, at = key.listed(), key.cursor_position()

    def mine(query: Any) -> Any:
        query = query.where(parent == key.parent_id, children.visible(actor))
        return apply_resource_filter(query, children.model, key.filter)

    ordering = bindparam(f"ordering_{index}", listed, type_=postgresql.ARRAY(String))
    parts = []
    if listed and (key.after is None or at is not None):  # an unlisted cursor is past every listed one
        elements = func.unnest(ordering).table_valued("id", with_ordinality="position").render_derived()
        walk = select(elements.c.id, elements.c.position)
        if at is not None:  # positions count from 1
            walk = walk.where(past_keyed(elements.c.position, elements.c.id, at=at + 1, after=key.after, ties=False))
        # OFFSET 0 keeps the ids in order on their own, before any lookup: the lookups then
        # run in order and stop when the page is full
        walk = walk.order_by(elements.c.position).offset(0).subquery("walk")
        # a scalar subquery (the id is the key), run per listed id: a join or an EXISTS would
        # be planned by the guessed length of the array again
        hit = mine(select(child.c.id).where(child.c.id == walk.c.id)).limit(1).correlate_except(child)
        listed_page = (
            select(walk.c.id, walk.c.position)
            .where(hit.scalar_subquery().is_not(None))
            .order_by(walk.c.position)
            .limit(wanted)
        )
        parts.append(listed_page)
    unlisted = mine(select(child.c.id, cast(null(), BigInteger).label("position")))
    if listed:
        every = func.unnest(ordering).table_valued("id").render_derived()
        unlisted = unlisted.where(child.c.id.not_in(select(every.c.id)))
    if key.after is not None:
        unlisted = unlisted.where(past_keyless(child.c.id, at=at, after=key.after))
    if parts:
        # a full page of listed children leaves no room: a one-time test spares the scan of
        # every child of the parent that finding none would be
        full = parts[0].subquery("listed_full")
        unlisted = unlisted.where(select(func.count()).select_from(full).scalar_subquery() < wanted)
    parts.append(unlisted.order_by(child.c.id).limit(wanted))
    found = select(parts[0].subquery("listed_page"))
    if len(parts) > 1:
        found = found.union_all(select(parts[1].subquery("unlisted")))
    candidates = found.subquery("found")
    order = nulls_last(candidates.c.position, candidates.c.id)
    ranked = (
        select(candidates.c.id.label("ranked_id"), func.row_number().over(order_by=order).label("place"))
        .order_by(*order)
        .limit(wanted)
        .subquery("ranked")
    )
    page = select(*child.c, ranked.c.place).join_from(ranked, child, child.c.id == ranked.c.ranked_id)
    if not key.counted:
        return page.add_columns(literal(key.parent_id).label("ranked_parent"))
    counted = mine(select(func.count().label("total_count")).select_from(child)).subquery("counted")
    page = page.subquery("page")
    return select(*page.c, literal(key.parent_id).label("ranked_parent"), counted.c.total_count).select_from(
        counted.outerjoin(page, true())
    )


def _past_cursor(key: PageKey, child_id: Any, position: Any) -> Any:
    """Whether a child comes after the cursor in display order (``position``: None when no
    parent of the batch has an ordering)."""
    if key.after is None:
        return None
    if position is None:
        return past_id(child_id, key.after)
    return past_nulls_last(position, child_id, at=key.cursor_position(), after=key.after, ties=False)


def pages(children: Children, keys: Sequence[PageKey], rows: Sequence[Any], *, postgres: bool) -> list[Page[Any]]:
    """Each key's page from the rows ``query`` returned."""
    if _by_keyset(keys):
        key = keys[0]
        total = rows[0].total_count if key.counted else None  # a counted page has a row at least
        return [_page(key, [row for row in rows if row.id is not None], total)]
    if _by_walk(keys, postgres=postgres):
        walked: dict[str, list[Any]] = defaultdict(list)
        for row in rows:
            walked[row.ranked_parent].append(row)
        return [
            _page(
                key,
                [row for row in walked[key.parent_id] if row.id is not None],
                (walked[key.parent_id][0].total_count if key.counted else None),  # a counted page has a row at least
            )
            for key in keys
        ]
    by_parent: dict[str, list[Any]] = defaultdict(list)
    for row in rows:
        by_parent[getattr(row, children.parent)].append(row)
    result = []
    for key in keys:
        found = by_parent.get(key.parent_id, [])
        total = (found[0].total_count if found else 0) if key.counted else None
        if key.after is not None and key.counted:  # the row carrying the count may come before the cursor
            found = [row for row in found if row.past == 1]
        result.append(_page(key, found, total))
    return result


def _page(key: PageKey, found: list[Any], total: int | None) -> Page[Any]:
    """The first ``first`` rows past the cursor; one more says there is a next page."""
    nodes = found[: key.first]
    return Page(nodes=nodes, cursors=[row.id for row in nodes], has_next_page=len(found) > key.first, total_count=total)
