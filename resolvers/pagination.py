"""Relay-style slicing shared by every connection: `first` defaults to 20, at most 100."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from graphql import GraphQLError

T = TypeVar("T")
DEFAULT_FIRST = 20
MAX_FIRST = 100


def check_first(first: int | None) -> int:
    if first is None:
        return DEFAULT_FIRST
    if first < 0 or first > MAX_FIRST:
        raise GraphQLError(f"first must be between 0 and {MAX_FIRST}.", extensions={"code": "BAD_USER_INPUT"})
    return first


@dataclass(slots=True)
class Page(Generic[T]):
    """One page of nodes with their cursors; the schema's Connection types read it as is."""

    nodes: list[T]
    cursors: list[str]
    has_next_page: bool
    total_count: int | None  # None when the selection did not ask for it (resolvers.child_pages)


def keyset_page(rows: list[T], *, limit: int, total: int, cursor: Callable[[T], str]) -> Page[T]:
    """Rows fetched with LIMIT limit+1 past a cursor: the extra row only says there is more."""
    chunk = rows[:limit]
    return Page(nodes=chunk, cursors=[cursor(r) for r in chunk], has_next_page=len(rows) > limit, total_count=total)
