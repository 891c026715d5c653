"""Rows as namedtuples: plain attribute access with nothing behind it.

GraphQL execution asks every returned value whether it is awaitable (``hasattr(value,
"__await__")``); on a SQLAlchemy ``Row`` that miss goes through ``Row.__getattr__`` and costs
microseconds, thousands of times per nested read. A namedtuple answers from C.
"""

from collections import namedtuple
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=256)
def record_type(fields: tuple[str, ...]) -> Any:
    return namedtuple("Record", fields)


def records(result: Any) -> list[Any]:
    """All rows of a Core result as namedtuples named after its columns (fetched in one call:
    iterating the result fetches row by row through three layers)."""
    make = record_type(tuple(result.keys()))._make
    return [make(row) for row in result.all()]
