"""What a field's SQL form is, and the small forms many types share.

A ``Form`` is a field's shape (a leaf, an object, a list of parties, a connection), the table
its rows come from (none when it reads the row it is on; the planner refuses a table met twice
on one path, whose SQL would correlate with the wrong row), whether it reads that table under
a fresh alias (``fresh``: a parent pointer, resolvers/compiled/relations.py, after which the
planner's path starts again) and ``build(b, source, field)``:
the SQL value of the field over the current row of ``source`` (``b`` is the execution's
``Build``). The registry of every type's forms is ``resolvers.compiled.forms.FORMS``; the
modules that hold the forms of one domain build on this one.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, null, select

from models import Group, User
from resolvers.compiled.build import Build

__all__ = [
    "CONNECTION",
    "CREATED_AT",
    "LEAF",
    "OBJECT",
    "ON_BEHALF_OF",
    "PARTIES",
    "SAME_ROW",
    "Form",
    "column",
    "party",
    "timestamp",
]

LEAF, OBJECT, PARTIES, CONNECTION = "leaf", "object", "parties", "connection"

_USER, _GROUP = User.__table__, Group.__table__


@dataclass(frozen=True, slots=True)
class Form:
    shape: str
    build: Callable[[Build, Any, Any], Any]
    table: str | None = None  # the table a nested form reads rows from
    fresh: bool = False  # it reads them under an alias of its own: see plan._below


def column(name: str) -> Form:
    """A leaf read as stored from a column of the row."""
    return Form(LEAF, lambda b, source, field: source.c[name])


def timestamp(name: str) -> Form:
    """A DateTime leaf, written as GraphQL's DateTime writes it (``JsonSql.timestamp``)."""
    return Form(LEAF, lambda b, source, field: b.json.timestamp(source.c[name]))


def _same_row(b: Build, source: Any, field: Any) -> Any:
    """An object made of the row the field is on (an enabled action's action, a role)."""
    return b.object(field.sub, source)


SAME_ROW = Form(OBJECT, _same_row)
CREATED_AT = timestamp("created_at")


def party(b: Build, by_kind: dict[str, Any], party_id: Any) -> Any:
    """The JSON of the user or group ``party_id`` names, else null (``by_kind``: the plans of
    the ``Party`` union's two members)."""
    as_user = select(b.object(by_kind["User"], _USER)).where(_USER.c.id == party_id)
    as_group = select(b.object(by_kind["Group"], _GROUP)).where(_GROUP.c.id == party_id)
    return func.coalesce(
        as_user.correlate_except(_USER).scalar_subquery(), as_group.correlate_except(_GROUP).scalar_subquery()
    )


def _on_behalf_of(b: Build, source: Any, field: Any) -> Any:
    """The absent user (or group) the row names in ``on_behalf_of``: whom a deputy acted for (a
    log entry), whom a task of ``myTasks``' page is lent by (resolvers/compiled/tasks.py). Null
    when none, or gone, or the row has no such column (an enabled action read outside
    ``myTasks``, as its resolver says)."""
    if "on_behalf_of" not in source.c:
        return null()
    return b.json.nested(party(b, field.sub, source.c.on_behalf_of))


ON_BEHALF_OF = Form(PARTIES, _on_behalf_of, "party")
