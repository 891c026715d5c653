"""A transaction's last row writes, sent with its log entry in one statement (PostgreSQL).

Why: an executed action writes a few rows (the case's version, the instance completed, the
instance enabled again) and then its log entry. Flushed by the ORM each was a statement of its
own, a round trip and its CPU apiece (bench W1: three of its seven statements). An action's log
entry is always the transaction's last write (engine/history/activity.py), so on PostgreSQL the rows
still pending then ride along as data-modifying CTEs of the entry's insert: one statement.

Only what is plain is folded: rows of the case machinery's tables (``FOLDABLE``) that are new
with every column set, or changed in columns other than their key; anything else pending (a
deletion, another table's row, a default the ORM would fill in) and the ORM flushes everything
as before. The session's ``before_flush`` listeners (the task index) hear of the folded rows
first, as in a flush. The writes run before the statement takes the chain's and the log's
locks (``Folded.written``), as a flush ran them before. Each UPDATE
must find its row, as the ORM's flush checks.
"""

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Table, bindparam
from sqlalchemy.orm import Session, make_transient_to_detached
from sqlalchemy.orm.exc import StaleDataError

from models import Case, CaseRoleParty, CaseState, EnabledAction, Job, Notification, Reminder

# What an executed action, a timer's firing or a case's start writes (jobs, reminders and
# notifications are the outbox's, the reminders' and the news of the change).
FOLDABLE: dict[type, Table] = {
    model: model.__table__  # type: ignore[attr-defined]
    for model in (Case, CaseState, CaseRoleParty, EnabledAction, Job, Notification, Reminder)
}

# Shapes of fold seen (which tables, inserts of how many rows or updates of which columns): each
# is its own statement, built and compiled once. Bounded: past it, a new shape is flushed by
# the ORM instead; so is a transaction writing more than MAX_ROWS rows (a bulk import).
MAX_SHAPES = 256
MAX_ROWS = 32

Write = tuple[str, str, tuple[str, ...]]  # (table, "insert <rows>" | "update", columns)


class Folded:
    """The pending writes taken out of the session: their CTEs' SQL, parameters and shape."""

    def __init__(self) -> None:
        self.shape: list[Write] = []
        self.params: dict[str, Any] = {}
        self.ctes: list[str] = []
        self.binds: list[Any] = []
        self.names: list[str] = []  # the CTEs' names
        self.rows = 0  # the rows they must write: each INSERT all its rows, each UPDATE its one

    def insert(self, table: Table, rows: list[dict[str, Any]]) -> None:
        """New rows of one table, every column set: one INSERT of them all."""
        name = f"w{len(self.shape)}"
        columns = [column.name for column in table.columns]
        self.shape.append((table.name, f"insert {len(rows)}", tuple(columns)))
        placeholders = []
        for n, row in enumerate(rows):
            for column in columns:
                self._bind(f"{name}_{n}_{column}", table.c[column], row[column])
            placeholders.append("(" + ", ".join(f":{name}_{n}_{column}" for column in columns) + ")")
        listed = ", ".join(columns)
        self.ctes.append(
            f"{name} AS (INSERT INTO {table.name} ({listed}) VALUES {', '.join(placeholders)} RETURNING 1)"
        )
        self.names.append(name)
        self.rows += len(rows)

    def update(self, table: Table, values: dict[str, Any]) -> None:
        """One row's changed columns, by its key (in ``values`` too)."""
        name = f"w{len(self.shape)}"
        self.shape.append((table.name, "update", tuple(values)))
        for column, value in values.items():
            self._bind(f"{name}_{column}", table.c[column], value)
        keys = [column.name for column in table.primary_key.columns]
        assignments = ", ".join(f"{column} = :{name}_{column}" for column in values if column not in keys)
        where = " AND ".join(f"{column} = :{name}_{column}" for column in keys)
        self.ctes.append(f"{name} AS (UPDATE {table.name} SET {assignments} WHERE {where} RETURNING 1)")
        self.names.append(name)
        self.rows += 1

    def _bind(self, name: str, column: Any, value: Any) -> None:
        self.params[name] = value
        self.binds.append(bindparam(name, type_=column.type))

    def with_clause(self) -> str:
        return "WITH " + ", ".join(self.ctes) + " "

    def written(self) -> str:
        """A FROM item of one row, ``written.n``, the rows the CTEs wrote: reading it runs them
        all, so a statement whose locks depend on ``written.n`` takes them after the writes (as
        a flush wrote them before the log's locks: a row another transaction holds is waited
        for without holding the log lock)."""
        counted = " UNION ALL ".join(f"SELECT 1 FROM {name}" for name in self.names)
        return f"(SELECT count(*) AS n FROM ({counted}) AS written_rows) AS written"

    def check(self, written: int) -> None:
        """Every UPDATE found its row (the ORM's flush raises the same)."""
        if written != self.rows:
            raise StaleDataError(f"{self.rows} folded rows to write, {written} written")


def take(session: Session, shapes: dict[Any, Any]) -> Folded | None:
    """Take the session's pending writes out of it, as CTEs, when every one can be folded (and
    the session then holds them as written); None, leaving the session as it was, otherwise.
    ``shapes`` is the caller's cache of statements by shape, to know whether one more fits."""
    if session.deleted:
        return None
    # Changed rows: those with an attribute set since loaded (set to the value it had, it is
    # written again: cheaper than comparing every attribute's history, as is_modified does).
    new, touched = list(session.new), list(session.dirty)
    dirty = [obj for obj in touched if obj._sa_instance_state.committed_state]
    if not new and not dirty:
        return None
    if len(new) + len(dirty) > MAX_ROWS:
        return None
    folded = Folded()
    inserts: dict[Table, list[dict[str, Any]]] = {}
    for obj in new:
        table = FOLDABLE.get(type(obj))
        values = None if table is None else _values(obj, table, True)
        if values is None:
            return None
        inserts.setdefault(table, []).append(values)  # type: ignore[arg-type]
    for table, rows in inserts.items():
        folded.insert(table, rows)
    for obj in dirty:
        table = FOLDABLE.get(type(obj))
        values = None if table is None else _values(obj, table, False)
        if values is None:
            return None
        folded.update(table, values)  # type: ignore[arg-type]
    if len(shapes) >= MAX_SHAPES and tuple(folded.shape) not in shapes:
        return None
    # The flush's listeners hear of the rows as in a flush (the task index notes the cases they
    # may move), before the session holds them as written.
    session.dispatch.before_flush(session, None, None)
    _written(session, new, touched)
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


def _written(session: Session, new: Iterable[Any], dirty: Iterable[Any]) -> None:
    """Make the session hold the folded rows as written, as a flush leaves them: a new row
    persistent (attached under its key, as if loaded), a changed row's values committed (so the
    commit's flush finds nothing left to write)."""
    for obj in new:
        session.expunge(obj)
        make_transient_to_detached(obj)
        session.add(obj)
    for obj in dirty:
        state = obj._sa_instance_state
        state._commit_all(state.dict, session.identity_map)
