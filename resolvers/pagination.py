"""Relay-style slicing shared by every connection: `first` defaults to 20, at most 100.

Cursors are checked before they reach SQL: a history cursor is an entry's ``seq`` (a decimal
number below 2^63, the range of the BIGINT column), every other cursor a row id. Anything else
is refused with a GraphQL error ``INVALID_INPUT`` naming the argument, never passed on to fail
in the database.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from graphql import GraphQLError

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
