"""Moving a batch of cases set-based (engine/migration/migration.py's real run): the common case of a
migration, a case running at the top level only whose move enables, keeps and cancels plain
instances, is worked out here in Python from the rows the plan read, and the whole batch is
written in a handful of statements whatever its size: the cases, the renamed states (one UPDATE
per pair of the map), the canceled instances, the kept ones whose timer or assignment changes
(one UPDATE per distinct new value), the new instances (one INSERT), then, at commit, the log
entries (the log writer inserts a transaction's entries together) and the task index of the
touched cases (one statement).

Why only such cases: what the engine's transitions would do to them is known without running
anything (``settle`` mirrors ``engine.cases.transitions.recompute`` and ``after_enable`` for
them), and nothing on the way can refuse. A case whose move could run code or reach further (a
child scope, a parent action, ``depends_on``, enable conditions, an AUTO action or a timer due
now, a role that would be filled by its defaults, reminders) is moved by engine/migration/migration_moves.py
through the transitions themselves.

Atomic per case: the plan judged every case before anything is written, so the batch is written
in one savepoint; should it fail anyway (a database error), the savepoint rolls back with the log
entries it queued and those cases are moved one savepoint each by engine/migration/migration_moves.py."""

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

from sqlalchemy import insert, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession

from engine.cases import task_index
from engine.cases.scopes import SCOPE_TRIGGER
from engine.history import activity, visits
from engine.migration.migration_plan import CaseMigration, Loaded, Planner
from engine.people.actors import Actor
from engine.spec.child_specs import PARENT_TRIGGERS
from models import Case, CaseState, EnabledAction, new_id, unit_of_work

_CASE = Case.__table__
_STATE = CaseState.__table__
_INSTANCE = EnabledAction.__table__
_CHUNK = 1000  # ids per IN list: far below both databases' bind limits


@dataclass
class BatchMove:
    """What moving one case writes, worked out before anything is written."""

    result: CaseMigration
    canceled: list[str] = field(default_factory=list)  # instance ids
    changed: list[tuple[str, tuple[tuple[str, Any], ...]]] = field(default_factory=list)  # (id, new values)
    created: list[dict[str, Any]] = field(default_factory=list)  # new instances' rows
    log: dict[str, Any] = field(default_factory=dict)  # the case_migrated entry's data


def settle(plan: Planner, result: CaseMigration, loaded: Loaded, timer_policy: str, now: datetime) -> BatchMove | None:
    """The case's move as set-based writes, or None when only the engine's transitions can move
    it (see the module's docstring)."""
    case, _, _ = loaded.rows[result.case_id]
    spec = plan.spec
    states = loaded.states.get(case.id, {})
    enabled = loaded.enabled.get(case.id, [])
    if set(states) != {""} or any(
        ea.scope or ea.parent_id or ea.trigger == SCOPE_TRIGGER or ea.trigger in PARENT_TRIGGERS for ea in enabled
    ):
        return None
    state = result.moves[""][1]
    wanted = {a.short_name: a for a in spec.scope_actions(None) if a.trigger != "init" and a.is_enabled_in(state)}
    for action in wanted.values():
        if (
            action.depends_on
            or action.enable_conditions
            or action.children
            or action.has_scope
            or action.trigger in (*PARENT_TRIGGERS, "auto")
            or action.timeout_seconds == 0
        ):
            return None
    move = BatchMove(result=result)
    roles = loaded.roles.get(case.id, {})
    running = case.status == "ACTIVE" and spec.has_automatic
    seen: set[str] = set()
    canceled: set[str] = set()
    for instance in enabled:
        action = wanted.get(instance.action)
        if action is None:
            move.canceled.append(instance.id)
            canceled.add(instance.action)
            continue
        seen.add(instance.action)
        values = {
            "trigger": action.trigger,
            "assigned_role": action.assigned_role if action.is_assigned_in(state) else None,
            "fire_at": _kept_timer(instance.fire_at, action.timeout_seconds, timer_policy, now),
        }
        if running and values["fire_at"] is not None and values["fire_at"] <= now:
            return None  # a timer due now fires during the move: the transitions run it
        changes = tuple((k, v) for k, v in values.items() if getattr(instance, k) != v)
        if changes:
            move.changed.append((instance.id, changes))
    for name, action in wanted.items():
        if name in seen:
            continue
        if action.reminders or action.escalate:
            return None
        for role in (action.assigned_role, *action.allowed_roles):
            defaults = role is not None and (spec.roles[role].callbacks or spec.roles[role].static_parties)
            if defaults and not roles.get(role):
                return None  # its defaults would fill it (engine/cases/assignment.py): the transitions do
        move.created.append(
            {
                "id": new_id("ea"),
                "case_id": case.id,
                "action": name,
                "scope": "",
                "parent_id": None,
                "trigger": action.trigger,
                "assigned_role": action.assigned_role if action.is_assigned_in(state) else None,
                "assignee_party_id": None,
                "status": "ENABLED",
                "fire_at": None if action.timeout_seconds is None else now + timedelta(seconds=action.timeout_seconds),
                "enabled_at": now,
                "completed_at": None,
            }
        )
    move.log = {
        "fromVersion": plan.numbers[case.workflow_id],
        "toVersion": plan.target.version,
        "map": plan.mapping,
        "timers": timer_policy,
        "from": result.from_state,
        "to": result.to_state,
        "scopes": {},
        "canceled": sorted(canceled),
        "enabled": sorted(row["action"] for row in move.created),
    }
    return move


def _kept_timer(fire_at: datetime | None, timeout: int | None, policy: str, now: datetime) -> datetime | None:
    """A kept instance's timer on the new version: none without a timeout; KEEP keeps a running
    one's due time; RESTART (or a timer the old version did not have) starts it from now."""
    if timeout is None:
        return None
    if policy == "RESTART" or fire_at is None:
        return now + timedelta(seconds=timeout)
    return fire_at


async def write(
    session: AsyncSession, actor: Actor, moves: list[BatchMove], loaded: Loaded, plan: Planner, now: datetime
) -> bool:
    """Write the moves in one savepoint; False (nothing written, nothing queued) when the
    database refused it, so the caller moves those cases one by one."""
    if not moves:
        return True
    mark, noted = activity.queued(session), visits.mark(session)
    try:
        async with session.begin_nested():
            await _write(session, actor, moves, loaded, plan, now)
    except SQLAlchemyError:
        activity.forget(session, mark)
        visits.forget(session, noted)
        return False
    work = unit_of_work(session)
    for move in moves:
        for row in move.created:
            if row["fire_at"] is not None:
                work.timer_written(row["fire_at"])
        for _, changes in move.changed:
            fire_at = dict(changes).get("fire_at")
            if fire_at is not None:
                work.timer_written(fire_at)
    task_index.touch(session, [move.result.case_id for move in moves])
    for move in moves:
        case = loaded.rows[move.result.case_id][0]
        move.result.case = SimpleNamespace(**{**vars(case), "workflow_id": plan.target.id, "version": case.version + 1})
    return True


async def _write(
    session: AsyncSession, actor: Actor, moves: list[BatchMove], loaded: Loaded, plan: Planner, now: datetime
) -> None:
    connection = await session.connection()
    ids = [move.result.case_id for move in moves]
    for chunk in _chunks(ids):
        await connection.execute(
            update(_CASE).where(_CASE.c.id.in_(chunk)).values(workflow_id=plan.target.id, version=_CASE.c.version + 1)
        )
    renamed: dict[tuple[str, str], list[str]] = defaultdict(list)
    for move in moves:
        source, to = move.result.moves[""]
        if source != to:
            renamed[source, to].append(move.result.case_id)
    for (source, to), cases in sorted(renamed.items()):
        for chunk in _chunks(cases):
            await connection.execute(
                update(_STATE)
                .where(_STATE.c.case_id.in_(chunk), _STATE.c.scope == "", _STATE.c.state == source)
                .values(state=to)
            )
    canceled = [instance for move in moves for instance in move.canceled]
    for chunk in _chunks(canceled):
        await connection.execute(
            update(_INSTANCE).where(_INSTANCE.c.id.in_(chunk)).values(status="CANCELED", completed_at=now)
        )
    changed: dict[tuple[tuple[str, Any], ...], list[str]] = defaultdict(list)
    for move in moves:
        for instance, changes in move.changed:
            changed[changes].append(instance)
    for changes, instances in changed.items():  # one per distinct new value: an action's, or a kept due time
        for chunk in _chunks(instances):
            await connection.execute(update(_INSTANCE).where(_INSTANCE.c.id.in_(chunk)).values(dict(changes)))
    created = [row for move in moves for row in move.created]
    if created:
        await connection.execute(insert(_INSTANCE), created)
    for move in moves:
        await activity.record(
            session,
            kind="case_migrated",
            actor_id=actor.user_id,
            about=loaded.rows[move.result.case_id][1],
            case_id=move.result.case_id,
            data=move.log,
            at=now,
        )


def _chunks(values: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start : start + _CHUNK]
