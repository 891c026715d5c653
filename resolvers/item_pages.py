"""A page of a subproject's items in display order, ordered, cut and counted by the database.

Display order (seed 000, ``engine.ordering.ordered``): the items the subproject's ordering
lists, in its order, then every other item by creation time (ids are time-ordered). Reading
every visible id to order them in Python made each page of a subproject of 100,000 items
cost 100,000 rows; here the database ranks them and returns the page and its count.

A cursor is an item id; the page starts after the cursor's place in display order, computed
from the cursor itself, so a cursor whose item has since moved, closed out of a filter or been
deleted still continues where it was: after its position in the ordering if it was listed,
else after it in creation order.
"""

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Integer, String, and_, bindparam, case, func, or_, select
from sqlalchemy.dialects import postgresql

from engine.actors import Actor
from models import WorkflowItem
from resolvers import visibility
from resolvers.filters import ResourceFilterKey, apply_resource_filter
from resolvers.pagination import Page


@dataclass(frozen=True, slots=True)
class ItemPageKey:
    """One connection's page: the subproject (with the ordering it was read with), the
    filter, the page size and the cursor."""

    subproject_id: str
    ordering: tuple[str, ...]
    filter: ResourceFilterKey
    first: int
    after: str | None

    def listed(self) -> list[str]:
        return list(dict.fromkeys(self.ordering))

    def cursor_position(self) -> int | None:
        """The cursor's place in the ordering; None when it is not listed (or there is none)."""
        if self.after is None or self.after not in self.ordering:
            return None
        return self.listed().index(self.after)

    def batch(self) -> tuple[Any, ...]:
        """Keys that agree on this are read by one statement (the cursor's place differs
        between subprojects, so it is part of it)."""
        return (self.filter, self.first, self.after, self.cursor_position())


def _positions(keys: Sequence[ItemPageKey], *, postgres: bool) -> Any:
    """(subproject_id, item_id, position) of every listed item, as one parameter: an array
    per column on PostgreSQL, a JSON array on SQLite. Subproject and item, since an ordering may
    still name an item that has moved on to another subproject."""
    listed = [(key.subproject_id, item_id, index) for key in keys for index, item_id in enumerate(key.listed())]
    if postgres:
        subprojects, items, positions = zip(*listed, strict=True)
        return (
            func.unnest(
                bindparam(None, list(subprojects), type_=postgresql.ARRAY(String)),
                bindparam(None, list(items), type_=postgresql.ARRAY(String)),
                bindparam(None, list(positions), type_=postgresql.ARRAY(Integer)),
            )
            .table_valued("subproject_id", "item_id", "position")
            .render_derived()
        )
    each = func.json_each(bindparam(None, json.dumps(listed), type_=String)).table_valued("value")
    return select(
        func.json_extract(each.c.value, "$[0]").label("subproject_id"),
        func.json_extract(each.c.value, "$[1]").label("item_id"),
        func.json_extract(each.c.value, "$[2]").label("position"),
    ).subquery()


def query(keys: Sequence[ItemPageKey], *, actor: Actor, postgres: bool, among: Callable[[Any, Any], Any]) -> Any:
    """The pages of ``keys`` (which agree on ``batch()``), subproject by subproject in display
    order: each row with its subproject's ``total_count``, its ``place`` in display order and,
    past a cursor, ``past`` (1 after the cursor) and ``seen`` (rows past the cursor so far).
    A page is its first ``first`` rows past the cursor; one row more says there is a next page,
    and the first row of each subproject comes along to carry the count."""
    key = keys[0]
    item = WorkflowItem.__table__
    subproject = item.c.subproject_id
    source: Any = item
    position: Any = None
    order: list[Any] = [item.c.id]
    if any(k.ordering for k in keys):
        positions = _positions(keys, postgres=postgres)
        source = item.outerjoin(
            positions, and_(positions.c.item_id == item.c.id, positions.c.subproject_id == subproject)
        )
        position = positions.c.position
        order = [position.is_(None), position, item.c.id]  # listed first, in their order
    columns = [
        item.c.id,
        subproject,
        func.count().over(partition_by=subproject).label("total_count"),
        func.row_number().over(partition_by=subproject, order_by=order).label("place"),
    ]
    past = _past_cursor(key, item.c.id, position)
    if past is not None:
        passed = case((past, 1), else_=0)
        columns += [
            passed.label("past"),
            func.sum(passed).over(partition_by=subproject, order_by=order).label("seen"),
        ]
    # Ranked by id alone: the windows carry narrow rows, the page's rows are read by key after.
    ranked = select(*columns).select_from(source).where(among(subproject, [k.subproject_id for k in keys]))
    ranked = apply_resource_filter(ranked.where(visibility.item_visible(actor)), WorkflowItem, key.filter).subquery()
    wanted = key.first + 1
    keep = (
        ranked.c.place <= wanted
        if past is None
        else or_(and_(ranked.c.past == 1, ranked.c.seen <= wanted), ranked.c.place == 1)
    )
    ranks = [column for column in ranked.c if column.name not in ("id", "subproject_id")]
    return (
        select(*item.c, *ranks)
        .join_from(ranked, item, item.c.id == ranked.c.id)
        .where(keep)
        .order_by(ranked.c.subproject_id, ranked.c.place)
    )


def _past_cursor(key: ItemPageKey, item_id: Any, position: Any) -> Any:
    if key.after is None:
        return None
    at = key.cursor_position()
    if at is None:  # an unlisted cursor: unlisted items created after it
        return item_id > key.after if position is None else and_(position.is_(None), item_id > key.after)
    return or_(position.is_(None), position > at)  # a listed cursor: listed after it, then the rest


def pages(keys: Sequence[ItemPageKey], rows: Sequence[Any]) -> list[Page[Any]]:
    """Each key's page from the rows ``query`` returned."""
    by_subproject: dict[str, list[Any]] = defaultdict(list)
    for row in rows:
        by_subproject[row.subproject_id].append(row)
    result = []
    for key in keys:
        found = by_subproject.get(key.subproject_id, [])
        total = found[0].total_count if found else 0
        if key.after is not None:
            found = [row for row in found if row.past == 1]
        nodes = found[: key.first]
        more = len(found) > key.first
        result.append(Page(nodes=nodes, cursors=[row.id for row in nodes], has_next_page=more, total_count=total))
    return result
