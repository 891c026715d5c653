"""The limits an operation is held to (from the server's settings), the shape it is measured
to have, and the refusal, with its ``extensions.code``, of a shape past them."""

from dataclasses import dataclass
from typing import Any, NamedTuple

from graphql import GraphQLError


class Limits(NamedTuple):
    """The limits of server/settings.py; the server's settings reach each operation through its
    context (``context.settings``). The defaults here serve a schema run without them (tools)."""

    max_tokens: int = 2_000
    max_depth: int = 15
    max_aliases: int = 50
    max_cost: int = 50_000
    operation_timeout: float = 10.0
    ws_max_operations: int = 10
    max_chars: int = 100_000
    max_repeated_fields: int = 20

    @classmethod
    def of(cls, settings: Any) -> "Limits":
        """From an object with the settings' attributes (the schema does not import the server)."""
        return cls(
            settings.max_query_tokens,
            settings.max_query_depth,
            settings.max_aliases,
            settings.max_query_cost,
            settings.operation_timeout,
            settings.ws_max_operations,
            settings.max_query_chars,
            settings.max_repeated_fields,
        )


@dataclass(frozen=True, slots=True)
class Shape:
    """What an operation may do: its deepest field, its aliased fields and its node count,
    all counted as if every fragment were written out."""

    depth: int
    aliases: int
    cost: int
    subscription: bool = False  # its events do not repeat the cost in their extensions
    introspection: int = 0  # nodes its `__schema` and `__type` fields return (schema/introspection.py)
    introspection_limit: int = 0  # one full introspection of the schema
    introspection_bytes: int = 0  # the bytes of one full introspection's answer (schema/introspection.py)
    alike: bool = False  # a query of introspection fields alone: the same answer for every viewer
    repeated: int = 0  # the most copies of one response key in one selection set (fragments merged in)
    repeated_key: str = ""  # that key


def refusal(shape: Shape, limits: Limits) -> GraphQLError | None:
    """The error for the first limit the shape passes, if any."""
    if shape.depth > limits.max_depth:
        return limit_error(
            f"The query is {shape.depth} fields deep; at most {limits.max_depth} are allowed.", "QUERY_TOO_DEEP"
        )
    if shape.aliases > limits.max_aliases:
        return limit_error(
            f"The query has {shape.aliases} aliases (fragments counted at each use); at most {limits.max_aliases}"
            " are allowed.",
            "TOO_MANY_ALIASES",
        )
    if shape.introspection > shape.introspection_limit:
        return limit_error(
            f"The query's introspection asks for more than the whole schema (at most {shape.introspection_limit}"
            f" nodes and about {shape.introspection_bytes:,} bytes, one full introspection, are allowed); ask for it"
            " once.",
            "QUERY_TOO_COSTLY",
            limit=shape.introspection_limit,
        )
    if shape.cost > limits.max_cost:
        return limit_error(
            f"The query may return {shape.cost} nodes (each connection counts its `first`, 20 when absent); at most"
            f" {limits.max_cost} are allowed. Ask for smaller pages or fewer nested connections.",
            "QUERY_TOO_COSTLY",
            cost=shape.cost,
            limit=limits.max_cost,
        )
    if shape.repeated > limits.max_repeated_fields:
        return limit_error(
            f"The query asks for `{shape.repeated_key}` {shape.repeated} times in one selection set (fragments"
            f" merged in); at most {limits.max_repeated_fields} copies of one field are allowed: ask for it once.",
            "TOO_MANY_REPEATED_FIELDS",
        )
    return None


def limit_error(message: str, code: str, **details: Any) -> GraphQLError:
    return GraphQLError(message, extensions={"code": code, **details})
