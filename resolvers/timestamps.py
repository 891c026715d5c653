"""How an instant reads in an answer, written once for both read roads: GraphQL's ``DateTime``
as the resolvers' road writes it (``timestamp_text``, the schema's DateTime scalar in
schema/base.py) and as the compiled road writes it into its JSON (``timestamp_sql``, through
``JsonSql.timestamp`` in resolvers/compiled/sql.py).

The format: ISO 8601 in UTC with its offset, ``2026-11-26T10:18:13.101436+00:00``, the fraction
(always six digits) left out when it is zero: Python's ``isoformat()`` of the instant in UTC.
Every stored instant is UTC (models/types.py); an instant made in Python with another offset (a
client's ``+02:00``) reads in UTC on both roads. tests/test_layers.py fails when another module
of resolvers/ or schema/ formats an instant itself; tests/api/test_rules_once.py compares both
roads on instants with and without a fraction.

A day (GraphQL's ``Date``: an item's due and billing dates) reads ``YYYY-MM-DD`` on both roads
(``date_text``, ``date_sql``)."""

from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import String, case, func, literal_column

from models import as_utc

__all__ = ["date_sql", "date_text", "day_words_sql", "day_words_text", "timestamp_sql", "timestamp_text"]


def timestamp_text(value: datetime) -> str:
    """The instant as GraphQL's DateTime reads (a time without an offset is taken as UTC, as
    every stored time is)."""
    if value.tzinfo is UTC:  # every instant read from the database: no conversion
        return value.isoformat()
    return as_utc(value).isoformat()


def timestamp_sql(column: Any, *, postgres: bool) -> Any:
    """``timestamp_text`` in SQL over a stored instant. PostgreSQL formats it in UTC whatever
    the session's zone; SQLite stores ``2026-11-26 10:18:13.101436`` (SQLAlchemy's text form,
    six digits), or without a fraction when a row was written by SQL's own clock."""
    utc = literal_column("'+00:00'")
    if postgres:
        text = func.to_char(column.op("AT TIME ZONE")(literal_column("'UTC'")), 'YYYY-MM-DD"T"HH24:MI:SS.US')
        return func.regexp_replace(text, r"\.000000$", "").op("||")(utc)
    return func.replace(func.replace(column, " ", "T"), ".000000", "").op("||")(utc)


def date_text(value: date) -> str:
    """A day as GraphQL's Date reads: ``2026-11-26``."""
    return value.isoformat()


def date_sql(column: Any, *, postgres: bool) -> Any:
    """``date_text`` in SQL over a stored day: PostgreSQL formats its ``date``; SQLite stores
    the ISO text already."""
    return func.to_char(column, "YYYY-MM-DD") if postgres else column


_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def day_words_text(value: datetime) -> str:
    """An instant's day in words, in UTC, as sentences write it: ``05 March 2026``."""
    return f"{as_utc(value):%d %B %Y}"


def day_words_sql(column: Any, *, postgres: bool) -> Any:
    """``day_words_text`` in SQL over a stored instant."""
    if postgres:
        return func.to_char(func.timezone("UTC", column), "DD FMMonth YYYY", type_=String())
    month = case(*((func.strftime("%m", column) == f"{n:02d}", name) for n, name in enumerate(_MONTHS, 1)))
    return func.strftime("%d ", column, type_=String()) + month + func.strftime(" %Y", column, type_=String())
