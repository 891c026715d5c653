"""state visits: a row per stay of a case (or child scope) in a state, backfilled from the log

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-28 20:30:00

engine/history/visits.py writes the rows as cases move from now on; ``backfill`` derives the
same rows for the history already logged, case by case in log order:

- ``action_executed`` with ``from`` None and a ``to``: the case starts (its top-level visit);
  with ``from`` and ``to`` different: the scope's visit ends (ACTION, that action) and one starts.
  The scope of a child action's entry is its instance's (``enabled_action`` completed by that
  action at that instant);
- a child scope starts when its owning instance is enabled (``enabled_at``, the child
  workflow's initial state) and its open visit ends when the owner leaves ENABLED
  (``completed_at``, CLOSED);
- ``case_suspended`` / ``case_resumed``: the stretch between them is added to the open visits'
  ``suspended_seconds``; ``case_canceled``: the open visits end (CANCELED);
- ``case_migrated``: later visits carry the new version's definition.

tests/engine/test_visits.py runs histories live, then this over the same log, and compares.
At a million cases plan for minutes: it reads the log of every case once.
"""

import os
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_KINDS = ("action_executed", "case_suspended", "case_resumed", "case_canceled", "case_migrated")
_BATCH = 500  # cases read and written per round


def upgrade() -> None:
    op.create_table(
        "state_visit",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("case_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("subproject_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("scope", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("scope_action", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("state", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("workflow_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("entered_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("entered_action", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("left_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("left_action", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("left_reason", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("suspended_seconds", sa.Float(), server_default="0", nullable=False),
        sa.Column("suspended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["case_id"], ["workflow_case.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("state_visit", schema=None) as batch_op:
        batch_op.create_index("ix_state_visit_case_scope", ["case_id", "scope", "left_at"], unique=False)
        batch_op.create_index("ix_state_visit_workflow_state", ["workflow_id", "scope_action", "state"], unique=False)
        batch_op.create_index("ix_state_visit_subproject", ["subproject_id", "workflow_id"], unique=False)
    backfill(op.get_bind())


def downgrade() -> None:
    with op.batch_alter_table("state_visit", schema=None) as batch_op:
        batch_op.drop_index("ix_state_visit_subproject")
        batch_op.drop_index("ix_state_visit_workflow_state")
        batch_op.drop_index("ix_state_visit_case_scope")
    op.drop_table("state_visit")


_meta = sa.MetaData()
_TIME = sa.DateTime(timezone=True)
_activity = sa.Table(
    "activity",
    _meta,
    sa.Column("seq", sa.BigInteger),
    sa.Column("case_id", sa.String),
    sa.Column("kind", sa.String),
    sa.Column("action", sa.String),
    sa.Column("at", _TIME),
    sa.Column("data", sa.JSON),
)
_case = sa.Table(
    "workflow_case",
    _meta,
    sa.Column("id", sa.String),
    sa.Column("workflow_id", sa.String),
    sa.Column("object_id", sa.String),
)
_item = sa.Table("workflow_item", _meta, sa.Column("id", sa.String), sa.Column("subproject_id", sa.String))
_workflow = sa.Table(
    "workflow",
    _meta,
    sa.Column("id", sa.String),
    sa.Column("short_name", sa.String),
    sa.Column("version", sa.Integer),
    sa.Column("spec", sa.JSON),
)
_instance = sa.Table(
    "enabled_action",
    _meta,
    sa.Column("id", sa.String),
    sa.Column("case_id", sa.String),
    sa.Column("action", sa.String),
    sa.Column("scope", sa.String),
    sa.Column("status", sa.String),
    sa.Column("enabled_at", _TIME),
    sa.Column("completed_at", _TIME),
)
_state = sa.Table("case_state", _meta, sa.Column("case_id", sa.String), sa.Column("scope", sa.String))
_visit = sa.Table(
    "state_visit",
    _meta,
    *(
        sa.Column(name, _TIME if name.endswith("_at") else sa.Float if name == "suspended_seconds" else sa.String)
        for name in (
            "id",
            "case_id",
            "subproject_id",
            "scope",
            "scope_action",
            "state",
            "workflow_id",
            "entered_at",
            "entered_action",
            "left_at",
            "left_action",
            "left_reason",
            "suspended_seconds",
            "suspended_at",
        )
    ),
)


class _Spec:
    """What the backfill needs of a stored spec: each state's scope (its child workflow's parent
    action, None at the top level), each child workflow's initial state and INIT action."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.scope_of: dict[str, str | None] = dict.fromkeys(spec.get("states") or {})
        self.initial: dict[str, tuple[str, str | None]] = {}
        self._walk(spec.get("actions") or {})

    def _walk(self, actions: dict[str, Any]) -> None:
        for name, action in actions.items():
            action = action or {}
            states = list(action.get("states") or {})
            children = action.get("children") or {}
            for state in states:
                self.scope_of[state] = name
            if states:
                init = next((c for c, a in children.items() if (a or {}).get("trigger") == "init"), None)
                target = (children[init] or {}).get("new_state") if init else None
                self.initial[name] = (target or states[0], init)
            self._walk(children)


def _utc(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _stored(value: datetime | None, dialect: str) -> datetime | None:
    """As models/types.py's UTCDateTime stores it: naive UTC on SQLite."""
    if value is None or dialect != "sqlite":
        return value
    return value.replace(tzinfo=None)


def _chunks(values: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(values), _BATCH):
        yield values[start : start + _BATCH]


def backfill(connection: sa.Connection, *, new_id: Any = None) -> int:
    """Derive every case's visits from its log (and its child scopes' owners); returns how many
    rows it wrote. ``new_id`` makes the row ids (tests pass the engine's; the default is alike:
    a time-ordered 'vis_' id)."""
    make_id = new_id or _visit_id
    dialect = connection.dialect.name
    definitions = {row.id: row for row in connection.execute(sa.select(_workflow)).all()}
    specs = {workflow_id: _Spec(row.spec or {}) for workflow_id, row in definitions.items()}
    by_version = {(row.short_name, row.version): row.id for row in definitions.values()}
    cases = connection.execute(
        sa.select(_case.c.id, _case.c.workflow_id, _item.c.subproject_id)
        .join(_item, _item.c.id == _case.c.object_id)
        .order_by(_case.c.id)
    ).all()
    written = 0
    for chunk in _chunks([row.id for row in cases]):
        facts = {row.id: row for row in cases if row.id in set(chunk)}
        entries: dict[str, list[Any]] = defaultdict(list)
        for row in connection.execute(
            sa.select(_activity)
            .where(_activity.c.case_id.in_(chunk), _activity.c.kind.in_(_KINDS))
            .order_by(_activity.c.case_id, _activity.c.seq)
        ):
            entries[row.case_id].append(row)
        owners = {
            row.id: row
            for row in connection.execute(
                sa.select(_instance)
                .join(_state, sa.and_(_state.c.case_id == _instance.c.case_id, _state.c.scope == _instance.c.id))
                .where(_instance.c.case_id.in_(chunk))
            )
        }
        completed: dict[tuple[str, str, datetime], list[str]] = defaultdict(list)
        for row in connection.execute(
            sa.select(
                _instance.c.id, _instance.c.case_id, _instance.c.action, _instance.c.scope, _instance.c.completed_at
            )
            .where(_instance.c.case_id.in_(chunk), _instance.c.status == "COMPLETED", _instance.c.scope != "")
            .order_by(_instance.c.id)
        ):
            completed[row.case_id, row.action, _utc(row.completed_at)].append(row.scope)
        rows: list[dict[str, Any]] = []
        for case_id in chunk:
            case = facts[case_id]
            case_owners = [o for o in owners.values() if o.case_id == case_id]
            rows += _case_visits(case, entries[case_id], case_owners, completed, specs, by_version, definitions)
        for row in rows:
            row["id"] = make_id("vis")
            for name in ("entered_at", "left_at", "suspended_at"):
                row[name] = _stored(row[name], dialect)
        if rows:
            connection.execute(sa.insert(_visit), rows)
        written += len(rows)
    return written


def _case_visits(
    case: Any,
    entries: list[Any],
    owners: list[Any],
    completed: dict[tuple[str, str, datetime], list[str]],
    specs: dict[str, _Spec],
    by_version: dict[tuple[str, int], str],
    definitions: dict[str, Any],
) -> list[dict[str, Any]]:
    """One case's visits, its events replayed in time order (at one instant: scopes starting,
    then the log in order, then scopes closing: the order of a transaction's writes)."""
    migrations = [e for e in entries if e.kind == "case_migrated"]
    workflow_id = case.workflow_id
    if migrations:  # the case began on the version its first migration left
        short = definitions[case.workflow_id].short_name
        workflow_id = by_version.get((short, (migrations[0].data or {}).get("fromVersion")), workflow_id)
    events: list[tuple[datetime, int, int, str, Any]] = []
    for owner in owners:
        events.append((_utc(owner.enabled_at), 0, 0, "start", owner))
        if owner.status != "ENABLED" and owner.completed_at is not None:
            events.append((_utc(owner.completed_at), 2, 0, "close", owner))
    for n, entry in enumerate(entries):
        events.append((_utc(entry.at), 1, n, "entry", entry))
    events.sort(key=lambda event: event[:3])
    visits: list[dict[str, Any]] = []
    open_: dict[str, dict[str, Any]] = {}
    taken: dict[tuple[str, str, datetime], int] = defaultdict(int)

    def enter(scope: str, state: str, action: str | None, at: datetime) -> None:
        spec = specs.get(workflow_id)
        row = {
            "case_id": case.id,
            "subproject_id": case.subproject_id,
            "scope": scope,
            "scope_action": spec.scope_of.get(state) if spec else None,
            "state": state,
            "workflow_id": workflow_id,
            "entered_at": at,
            "entered_action": action,
            "left_at": None,
            "left_action": None,
            "left_reason": None,
            "suspended_seconds": 0.0,
            "suspended_at": None,
        }
        open_[scope] = row
        visits.append(row)

    def leave(scope: str, at: datetime, action: str | None, reason: str) -> None:
        row = open_.pop(scope, None)
        if row is not None:
            row.update(left_at=at, left_action=action, left_reason=reason)

    for at, _, _, what, thing in events:
        if what == "start":
            spec = specs.get(workflow_id)
            initial = spec.initial.get(thing.action) if spec else None
            if initial is not None:
                enter(thing.id, initial[0], initial[1], at)
        elif what == "close":
            leave(thing.id, at, None, "CLOSED")
        elif thing.kind == "action_executed":
            data = thing.data or {}
            source, target = data.get("from"), data.get("to")
            if target is None or source == target:
                continue
            scope = ""
            spec = specs.get(workflow_id)
            if spec is not None and spec.scope_of.get(target) is not None:  # a child workflow's state
                key = (case.id, thing.action, at)
                found = completed.get(key, [])
                if taken[key] >= len(found):
                    continue
                scope = found[taken[key]]
                taken[key] += 1
            if source is not None:
                leave(scope, at, thing.action, "ACTION")
            enter(scope, target, thing.action, at)
        elif thing.kind == "case_suspended":
            for row in open_.values():
                row["suspended_at"] = at
        elif thing.kind in ("case_resumed", "case_canceled"):
            for row in open_.values():
                if row["suspended_at"] is not None:
                    row["suspended_seconds"] += max((at - row["suspended_at"]).total_seconds(), 0.0)
                    row["suspended_at"] = None
            if thing.kind == "case_canceled":
                for scope in list(open_):
                    leave(scope, at, None, "CANCELED")
        elif thing.kind == "case_migrated":
            short = definitions[case.workflow_id].short_name
            workflow_id = by_version.get((short, (thing.data or {}).get("toVersion")), workflow_id)
    return visits


def _visit_id(prefix: str) -> str:
    """A time-ordered id like models/ids.py's (a migration does not import the application)."""
    return f"{prefix}_{time.time_ns() // 1_000_000:012x}{os.urandom(10).hex()}"
