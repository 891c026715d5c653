"""A transaction's last row writes, sent with its log entry in one statement (PostgreSQL).

Why: an executed action writes a few rows (the case's version, the instance completed, the
instance enabled again) and then its log entry. Flushed by the ORM each was a statement of its
own, a round trip and its CPU apiece (bench W1: three of its seven statements). An action's log
entry is always the transaction's last write (engine/activity.py), so on PostgreSQL the rows
still pending then ride along as data-modifying CTEs of the entry's insert: one statement.

Only what is plain is folded: rows of the case machinery's tables (``FOLDABLE``) that are new
with every column set, or changed in columns other than their key; anything else pending (a
deletion, another table's row, a default the ORM would fill in) and the ORM flushes everything
as before. The session's ``before_flush`` listeners (the task index) hear of the folded rows
first, as in a flush. Each UPDATE
must find its row, as the ORM's flush checks.
"""

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Table, bindparam
from sqlalchemy.orm import Session, make_transient_to_detached
from sqlalchemy.orm.exc import StaleDataError

from models import Case, CaseState, EnabledAction

FOLDABLE: dict[type, Table] = {model: model.__table__ for model in (Case, CaseState, EnabledAction)}  # type: ignore[attr-defined]

# Shapes of fold seen (which table, insert or update, which columns): each is its own statement,
# built and compiled once. Bounded: past it, a new shape is flushed by the ORM instead.
MAX_SHAPES = 256

Write = tuple[str, str, tuple[str, ...]]  # (table, "insert" | "update", columns)


class Folded:
    """The pending writes taken out of the session: their CTEs' SQL, parameters and shape."""

    def __init__(self) -> None:
        self.shape: list[Write] = []
        self.params: dict[str, Any] = {}
        self.ctes: list[str] = []
        self.binds: list[Any] = []
        self.updates: list[str] = []  # the names of the UPDATE CTEs, each counted in RETURNING

    def add(self, table: Table, new: bool, values: dict[str, Any]) -> None:
        name = f"w{len(self.shape)}"
        columns = tuple(values)
        self.shape.append((table.name, "insert" if new else "update", columns))
        for column, value in values.items():
            self.params[f"{name}_{column}"] = value
            self.binds.append(bindparam(f"{name}_{column}", type_=table.c[column].type))
        if new:
            listed = ", ".join(columns)
            placeholders = ", ".join(f":{name}_{column}" for column in columns)
            self.ctes.append(f"{name} AS (INSERT INTO {table.name} ({listed}) VALUES ({placeholders}))")
            return
        keys = [column.name for column in table.primary_key.columns]
        assignments = ", ".join(f"{column} = :{name}_{column}" for column in columns if column not in keys)
        where = " AND ".join(f"{column} = :{name}_{column}" for column in keys)
        self.ctes.append(f"{name} AS (UPDATE {table.name} SET {assignments} WHERE {where} RETURNING 1)")
        self.updates.append(name)

    def check(self, updated: int) -> None:
        """Every UPDATE found its row (the ORM's flush raises the same)."""
        if updated != len(self.updates):
            raise StaleDataError(f"{len(self.updates)} folded UPDATEs matched {updated} rows")


def take(session: Session, shapes: dict[Any, Any]) -> Folded | None:
    """Take the session's pending writes out of it, as CTEs, when every one can be folded (and
    the session then holds them as written); None, leaving the session as it was, otherwise.
    ``shapes`` is the caller's cache of statements by shape, to know whether one more fits."""
    if session.deleted:
        return None
    new, dirty = list(session.new), [obj for obj in session.dirty if session.is_modified(obj)]
    if not new and not dirty:
        return None
    folded = Folded()
    changes: list[tuple[Any, bool]] = []
    for objects, is_new in ((new, True), (dirty, False)):
        for obj in objects:
            table = FOLDABLE.get(type(obj))
            if table is None:
                return None
            values = _values(obj, table, is_new)
            if values is None:
                return None
            changes.append((obj, is_new))
            folded.add(table, is_new, values)
    if len(shapes) >= MAX_SHAPES and tuple(folded.shape) not in shapes:
        return None
    # The flush's listeners hear of the rows as in a flush (the task index notes the cases they
    # may move), before the session holds them as written.
    session.dispatch.before_flush(session, None, None)
    _written(session, changes)
    return folded


def _values(obj: Any, table: Table, new: bool) -> dict[str, Any] | None:
    """The columns to write: a new row's every column (None if one is unset: its default is the
    ORM's to fill in), a changed row's changed columns and its key (None if the key changed)."""
    state = obj._sa_instance_state
    if new:
        if any(column.name not in state.dict for column in table.columns):
            return None
        return {column.name: state.dict[column.name] for column in table.columns}
    changed = [name for name in state.committed_state if name in table.c]
    keys = [column.name for column in table.primary_key.columns]
    if not changed or any(name in keys for name in changed) or len(changed) != len(state.committed_state):
        return None
    return {name: state.dict[name] for name in (*changed, *keys)}


def _written(session: Session, changes: Iterable[tuple[Any, bool]]) -> None:
    """Make the session hold the folded rows as written: a changed row's values as committed, a
    new row as persistent (attached under its key, as if loaded)."""
    for obj, new in changes:
        if new:
            session.expunge(obj)
            make_transient_to_detached(obj)
            session.add(obj)
        else:  # what a flush does to the rows it wrote (so the commit's flush has nothing left)
            state = obj._sa_instance_state
            state._commit_all(state.dict, session.identity_map)
