"""Shared GraphQL building blocks: Node, UserError, connections, JSON.

Object types are resolved from plain database rows (SQLAlchemy Core rows on reads, model
instances from mutations), never from instances of the strawberry classes: leaf fields read
the row's attributes directly, and a type recognizes its rows by their id prefix
(``by_id_prefix``). That keeps the read path free of ORM hydration and per-object copying.
"""

import dataclasses
from datetime import date, datetime
from typing import Any, Generic, NewType, TypeVar

import strawberry
from graphql import value_from_ast_untyped
from strawberry.schema.types.base_scalars import DateDefinition, DateTimeDefinition
from strawberry.types import Info

from engine.errors import ErrorCode
from models import kind_of
from resolvers.context import Context
from resolvers.errors import UserErrorRow
from resolvers.pagination import Page
from resolvers.timestamps import date_text, timestamp_text
from schema.input_guard import check_json

T = TypeVar("T")
UserErrorCode = strawberry.enum(ErrorCode, name="UserErrorCode", description="Why a mutation was refused.")
AppInfo = Info[Context, None]

_ECMA_404 = "https://ecma-international.org/wp-content/uploads/ECMA-404_2nd_edition_december_2017.pdf"
JSON = NewType("JSON", object)
JSON_SCALAR = strawberry.scalar(
    name="JSON",
    description=f"The `JSON` scalar type represents JSON values as specified by [ECMA-404]({_ECMA_404}).",
    specified_by_url=_ECMA_404,
    serialize=lambda v: v,
    # strawberry's JSON takes anything; ours refuses what a database or client cannot hold
    # (NaN, 1e400, NUL, lone surrogates) and bounds depth and size (schema/input_guard.py).
    # Variables are checked once, by the input guard before execution (with their path);
    # a literal in the document, here.
    parse_value=lambda value: value,
    parse_literal=lambda node, variables=None: check_json(value_from_ast_untyped(node, variables)),
)
# strawberry's DateTime and Date, written as both read roads write an instant and a day
# (resolvers/timestamps.py); their names, descriptions and parsing are strawberry's own
DATETIME_SCALAR = dataclasses.replace(DateTimeDefinition, serialize=timestamp_text, implementation=None)
DATE_SCALAR = dataclasses.replace(DateDefinition, serialize=date_text, implementation=None)
# the schema's StrawberryConfig(scalar_map=...)
SCALAR_MAP = {JSON: JSON_SCALAR, datetime: DATETIME_SCALAR, date: DATE_SCALAR}

__all__ = [
    "JSON",
    "SCALAR_MAP",
    "AppInfo",
    "Connection",
    "Node",
    "PageInfo",
    "UserError",
    "by_id_prefix",
    "connection",
    "row_type",
]


def row_type(model: type) -> Any:
    """An ``is_type_of`` that accepts instances of ``model`` (for rows that have no id)."""
    return classmethod(lambda cls, obj, info: isinstance(obj, model))


def by_id_prefix(type_name: str) -> Any:
    """An ``is_type_of`` that accepts any row whose id belongs to ``type_name``."""
    return classmethod(lambda cls, obj, info: kind_of(getattr(obj, "id", "")) == type_name)


@strawberry.interface(description="An object with a global id; `node(id:)` finds any of them.")
class Node:
    id: strawberry.ID

    @classmethod
    def resolve_type(cls, obj: Any, info: Any, abstract_type: Any) -> str | None:
        return kind_of(obj.id)


@strawberry.type(description="A business rule refused the input; nothing was changed.")
class UserError:
    code: UserErrorCode
    message: str
    field: list[str] | None = None

    is_type_of = row_type(UserErrorRow)


@strawberry.type
class PageInfo:
    has_next_page: bool
    end_cursor: str | None


@strawberry.type
class Edge(Generic[T]):
    cursor: str
    node: T


@strawberry.type(description="A Relay connection: `first` defaults to 20 and is at most 100.")
class Connection(Generic[T]):
    edges: list[Edge[T]]
    page_info: PageInfo
    total_count: int = strawberry.field(
        description="How many nodes the connection holds in all: counted only when asked for, and a count reads "
        "every one of them (a page reads `first`), so it costs what the list holds."
    )


def connection(page: Page[Any]) -> Any:
    return Connection(
        edges=[Edge(cursor=c, node=n) for c, n in zip(page.cursors, page.nodes, strict=True)],
        page_info=PageInfo(has_next_page=page.has_next_page, end_cursor=page.cursors[-1] if page.cursors else None),
        total_count=page.total_count,
    )
