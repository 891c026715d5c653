"""Relay-style slicing shared by every connection, on both read roads (the resolvers' pages and
the compiled ones in resolvers/compiled/): `first` defaults to 20, at most 100.

Cursors are checked before they reach SQL: a history cursor is an entry's ``seq`` (a decimal
number below 2^63, the range of the BIGINT column: ``seq_cursor``), every other cursor a row id.
Anything else is refused with a GraphQL error ``INVALID_INPUT`` naming the argument, never
passed on to fail in the database.

Page order and where a cursor leaves off are written here once, as SQL both roads build their
statements with (tests/test_layers.py fails when a road writes them again):

- by id (or ``seq``): the page continues with the rows after the cursor's (``past_id``);
- by a key that rows may lack (a listed item's place in its subproject's ordering, a task's due
  date): rows with a key first, by key, ties by id, then those without, by id (``nulls_last``).
  The cursor is the last row's id; its key ``at`` is looked up (None or NULL: it has none), and
  the rows past it are the keyed ones after it (``past_keyed``) and the keyless ones after it
  (``past_keyless``: all of them when the cursor had a key), together ``past_nulls_last``.
  ``at`` may be a Python value (the resolvers know it when they build the statement) or an SQL
  expression (the compiled road's statement serves every cursor).
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from graphql import GraphQLError
from sqlalchemy import String, and_, case, cast, false, literal, or_, true
from sqlalchemy.sql.elements import ColumnElement

T = TypeVar("T")
DEFAULT_FIRST = 20
MAX_FIRST = 100
MAX_SEQ = 2**63 - 1
_SEQ = re.compile(r"[0-9]{1,19}")
_ID = re.compile(r"[a-z]{1,8}_[0-9A-Z]{1,40}")


def invalid_argument(message: str, *field: str) -> GraphQLError:
    """A client's argument refused before it reaches the database; ``field`` is its path."""
    return GraphQLError(message, extensions={"code": "INVALID_INPUT", "field": list(field)})


def check_first(first: int | None) -> int:
    if first is None:
        return DEFAULT_FIRST
    if first < 0 or first > MAX_FIRST:
        raise invalid_argument(f"first must be between 0 and {MAX_FIRST}.", "first")
    return first


def parse_seq_cursor(after: str | None) -> int | None:
    """A history cursor (an entry's ``seq``) as a number."""
    if after is None:
        return None
    if _SEQ.fullmatch(after) is None or int(after) > MAX_SEQ:
        raise invalid_argument("after is not a history cursor: give the cursor of an entry you have read.", "after")
    return int(after)


def check_id_cursor(after: str | None) -> str | None:
    """A cursor of a connection ordered by id (the id of the last node read)."""
    if after is not None and _ID.fullmatch(after) is None:
        raise invalid_argument("after is not a cursor of this connection: give an edge's cursor.", "after")
    return after


@dataclass(slots=True)
class Page(Generic[T]):
    """One page of nodes with their cursors; the schema's Connection types read it as is."""

    nodes: list[T]
    cursors: list[str]
    has_next_page: bool
    total_count: int | None  # None when the selection did not ask for it (resolvers.child_pages)


def keyset_page(rows: list[T], *, limit: int, total: int | None, cursor: Callable[[T], str]) -> Page[T]:
    """Rows fetched with LIMIT limit+1 past a cursor: the extra row only says there is more.
    ``total``: None when the selection did not ask for ``totalCount`` (nothing counted)."""
    chunk = rows[:limit]
    return Page(nodes=chunk, cursors=[cursor(r) for r in chunk], has_next_page=len(rows) > limit, total_count=total)


def seq_cursor(seq: int) -> str:
    """The cursor of a log entry: its ``seq`` as a decimal string (``parse_seq_cursor`` reads it)."""
    return str(seq)


def seq_cursor_sql(seq: Any) -> Any:
    """``seq_cursor`` in SQL."""
    return cast(seq, String)


def past_id(column: Any, after: Any) -> Any:
    """The rows of a page by ``column`` (an id, a ``seq``) after the cursor ``after``."""
    return column > after


def nulls_last(key: Any, row_id: Any) -> list[Any]:
    """The order by ``key``, rows without one last, ties and the keyless by id."""
    return [key.is_(None), key, row_id]


def _is_sql(value: Any) -> bool:
    return isinstance(value, ColumnElement)


def past_keyed(key: Any, row_id: Any, *, at: Any, after: Any, ties: bool = True) -> Any:
    """Whether a row that has a key comes after the cursor (id ``after``, key ``at``) in
    ``nulls_last`` order. ``ties``: whether two rows may share a key (a due date may; a place
    in an ordering names one item, so its rows need no tie rule)."""
    if at is None:  # a keyless cursor: every keyed row came before it
        return false()
    later = key > at
    if ties:
        later = or_(later, and_(key == at, row_id > after))
    return and_(at.is_not(None), later) if _is_sql(at) else later


def past_keyless(row_id: Any, *, at: Any, after: Any) -> Any:
    """Whether a row without a key comes after the cursor (id ``after``, key ``at``) in
    ``nulls_last`` order: all of them after a keyed cursor, else those after its id."""
    if _is_sql(at):
        # one comparison, not ``at IS NOT NULL OR id > after``: it bounds an index scan on
        # (parent, id), so a middle page reads its rows rather than every row before the cursor
        # (bench R4i: 10,001 rows filtered). '' sorts before every id.
        return past_id(row_id, case((at.is_not(None), literal("")), else_=after))
    return past_id(row_id, after) if at is None else true()


def past_nulls_last(key: Any, row_id: Any, *, at: Any, after: Any, ties: bool = True) -> Any:
    """Whether a row comes after the cursor (id ``after``, key ``at``) in ``nulls_last`` order."""
    return or_(
        past_keyed(key, row_id, at=at, after=after, ties=ties),
        and_(key.is_(None), past_keyless(row_id, at=at, after=after)),
    )
