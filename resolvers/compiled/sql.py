"""The JSON-building SQL of the two databases, behind one small interface.

PostgreSQL builds JSON with ``json_build_object`` and ``json_agg(... ORDER BY ...)``; SQLite
with ``json_object`` and ``json_group_array`` over an ordered subquery (SQLite 3.40 has no
ORDER BY inside an aggregate). SQLite forgets that a value is JSON when it crosses a subquery,
so every nested value is wrapped in ``json()`` there; PostgreSQL's ``json`` type carries it.
Keys are response names, which GraphQL restricts to ``[_A-Za-z][_0-9A-Za-z]*``: written into
the SQL text as literals (a bound key has no type PostgreSQL could infer).
"""

import re
from typing import Any

from sqlalchemy import ColumnElement, case, func, literal_column, null
from sqlalchemy.dialects.postgresql import aggregate_order_by

from resolvers.timestamps import timestamp_sql

_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]*")


def key(name: str) -> Any:
    """A response name as an SQL string literal."""
    if _NAME.fullmatch(name) is None:  # GraphQL names only: never anything a client could inject
        raise ValueError(f"not a GraphQL name: {name!r}")
    return literal_column(f"'{name}'")


class JsonSql:
    """The JSON functions of one database."""

    def __init__(self, *, postgres: bool) -> None:
        self.postgres = postgres

    def object(self, pairs: list[tuple[str, Any]]) -> Any:
        """A JSON object of (response name, SQL value) pairs, in that order."""
        args: list[Any] = []
        for name, value in pairs:
            args += [key(name), value]
        return func.json_build_object(*args) if self.postgres else func.json_object(*args)

    def nested(self, value: Any) -> Any:
        """A JSON value read from a subquery, as a value of an enclosing object or array."""
        return value if self.postgres else func.json(value)

    def text(self, value: str) -> Any:
        """A constant string (``__typename``)."""
        if _NAME.fullmatch(value) is None:
            raise ValueError(f"not a GraphQL name: {value!r}")
        return literal_column(f"'{value}'")

    def boolean(self, condition: ColumnElement[bool]) -> Any:
        """A condition as JSON true or false."""
        if self.postgres:
            return condition
        return func.json(case((condition, "true"), else_="false"))

    def array(self, value: Any, order: list[Any], where: Any = None) -> Any:
        """The aggregate of ``value`` over the rows of a query ordered by ``order`` (SQLite: the
        rows come ordered from the subquery they are read from); an empty list for no rows."""
        if self.postgres:
            aggregate = func.json_agg(aggregate_order_by(value, *order))
            if where is not None:
                aggregate = aggregate.filter(where)
            return func.coalesce(aggregate, literal_column("'[]'::json"))
        aggregate = func.json_group_array(func.json(value))
        return aggregate.filter(where) if where is not None else aggregate

    def last_text(self, value: Any, order: list[Any], where: Any) -> Any:
        """The last ``value`` (a string) of the ordered rows that satisfy ``where``, else NULL."""
        if self.postgres:
            return func.json_agg(aggregate_order_by(value, *order)).filter(where).op("->>")(literal_column("-1"))
        return func.json_extract(func.json_group_array(value).filter(where), "$[#-1]")

    def object_at(self, value: Any, name: str) -> Any:
        """The object ``value`` (JSON) holds under ``name`` (a key of a workflow spec), else an
        empty one: a stored spec may hold null where the parser reads an empty object
        (engine/spec/spec_checker.py's ``mapping``), or leave the key out."""
        if self.postgres:
            part = value.op("->")(key(name))
            empty = literal_column("'{}'::json")
            return case((func.json_typeof(part) == literal_column("'object'"), part), else_=empty)
        path = f"$.{name}"
        return case((func.json_type(value, path) == "object", func.json_extract(value, path)), else_="{}")

    def empty(self) -> Any:
        """An empty JSON list."""
        return literal_column("'[]'::json") if self.postgres else func.json_array()

    def one(self, value: Any) -> Any:
        """A JSON list of one value (a JSON object)."""
        return func.json_build_array(value) if self.postgres else func.json_array(func.json(value))

    def timestamp(self, column: Any) -> Any:
        """A stored instant as GraphQL's DateTime writes it (resolvers/timestamps.py)."""
        return timestamp_sql(column, postgres=self.postgres)

    @staticmethod
    def null() -> Any:
        return null()


__all__ = ["JsonSql", "key"]
