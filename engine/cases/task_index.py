"""The task index (``task_assignment``): who is expected to act on which enabled instance, kept
so that a task list (``myTasks``) is a range scan from the viewer's parties.

Why an index at all: the question "which ENABLED user instances of ACTIVE or COMPLETED cases are
assigned to one of these parties, directly or through a role" cannot start from the parties in
the tables that hold the answer (the assignee is on the instance, the role's players on the case),
so at a million instances every task list scanned them all, slowest for those with nothing to do.

Why one choke point and whole cases: every change that can move a row (an instance enabled,
completed, canceled, refused or reassigned; a role's players changed; a case suspended, resumed,
canceled, completed or reopened; by a user, a timer, a child workflow or a quorum) goes through
an ORM flush of an ``EnabledAction``, ``CaseRoleParty`` or ``Case`` row, or through
``set_role_parties``, which calls ``touch``. A session listener notes the cases whose flushed
changes can move a row (an instance that is or was assigned to somebody, a role player, a status
crossing between runnable and not: running ``comment``, which anyone may, costs nothing), and
just before the transaction commits their rows are recomputed from the tables with
the statement that builds the whole index (``rebuild``, migration 0024): one statement on
PostgreSQL (the stale rows deleted, the moved updated, the missing inserted and the parties'
counts moved together), four on SQLite. A new due date of an item touches its case
(engine/tree/items.py): the rows carry it, for the order by due date. A path
added later cannot forget the index, and the rows cannot disagree with the tables they come
from. The cost is the touched cases' instances, a handful per case.

A SUSPENDED (or CANCELED) case has no rows: suspending changes its status, so its rows are
recomputed away, and resuming brings them back; the index needs no status column and a task
list's range scan meets only live tasks. Group membership is not in the index: a row names the
party the case names (a user or a group), and the reader asks with all of the viewer's parties.

The rows are settled at commit: a statement in the same transaction, after a change and before
the commit, sees the index as it was (no path reads the task list while writing)."""

from collections.abc import Iterable
from functools import cache
from typing import Any

from sqlalchemy import bindparam, event, text
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from engine.cases.context import EXECUTABLE_STATUSES
from models import Case, CaseRoleParty, EnabledAction, unit_of_work

_CHUNK = 1000  # cases per statement: bind parameters stay far below both databases' limits

# The rows the index holds, for every case or (``{cases}``) for some. A party reaches an instance
# through its assignee or, when it has none, through its assigned role; the two halves are
# disjoint, and each yields a (party, instance) pair once (case_role_party's key), so UNION ALL.
_ROWS = """
SELECT ea.assignee_party_id AS party_id, ea.id AS enabled_action_id, ea.case_id AS case_id, wi.due_date AS due_date
FROM enabled_action ea JOIN workflow_case c ON c.id = ea.case_id JOIN workflow_item wi ON wi.id = c.object_id
WHERE ea.status = 'ENABLED' AND ea."trigger" = 'user' AND c.status IN {statuses}
AND ea.assignee_party_id IS NOT NULL{cases}
UNION ALL
SELECT r.party_id AS party_id, ea.id AS enabled_action_id, ea.case_id AS case_id, wi.due_date AS due_date
FROM enabled_action ea JOIN workflow_case c ON c.id = ea.case_id JOIN workflow_item wi ON wi.id = c.object_id
JOIN case_role_party r ON r.case_id = ea.case_id AND r.role = ea.assigned_role
WHERE ea.status = 'ENABLED' AND ea."trigger" = 'user' AND c.status IN {statuses}
AND ea.assignee_party_id IS NULL{cases}
"""
_COLUMNS = "task_assignment (party_id, enabled_action_id, case_id, due_date)"
_COUNT_ALL = "INSERT INTO task_count (party_id, tasks) SELECT party_id, count(*) FROM task_assignment GROUP BY party_id"


def _rows(*, some_cases: bool) -> str:
    statuses = "(" + ", ".join(f"'{s}'" for s in EXECUTABLE_STATUSES) + ")"
    return _ROWS.format(statuses=statuses, cases=" AND ea.case_id IN :cases" if some_cases else "")


def rebuild_sql() -> str:
    """The INSERT that fills an empty index from the tables: migration 0024 runs this text, and
    ``rebuild`` after a bulk load."""
    return f"INSERT INTO {_COLUMNS}{_rows(some_cases=False)}"


@cache
def _statements(dialect: str) -> tuple[Any, ...]:
    cases = bindparam("cases", expanding=True)
    if dialect == "postgresql":
        # The stale rows deleted, the moved due dates updated and the missing rows inserted by
        # one statement (the three key sets are disjoint: deleted, not among the fresh rows;
        # updated, fresh and there; inserted, fresh and not there), and each party's count moved
        # by the rows it gained and lost (in party order: two commits never wait on each other's).
        settle = f"""
WITH fresh AS ({_rows(some_cases=True)}),
gone AS (
  DELETE FROM task_assignment t WHERE t.case_id IN :cases AND NOT EXISTS (
    SELECT 1 FROM fresh f WHERE f.party_id = t.party_id AND f.enabled_action_id = t.enabled_action_id)
  RETURNING t.party_id),
moved AS (
  UPDATE task_assignment t SET due_date = f.due_date FROM fresh f
  WHERE t.party_id = f.party_id AND t.enabled_action_id = f.enabled_action_id
  AND t.due_date IS DISTINCT FROM f.due_date),
added AS (
  INSERT INTO {_COLUMNS} SELECT party_id, enabled_action_id, case_id, due_date FROM fresh
  ON CONFLICT DO NOTHING RETURNING party_id),
delta AS (SELECT party_id, 1 AS n FROM added UNION ALL SELECT party_id, -1 AS n FROM gone)
INSERT INTO task_count (party_id, tasks) SELECT party_id, sum(n) FROM delta GROUP BY party_id ORDER BY party_id
ON CONFLICT (party_id) DO UPDATE SET tasks = task_count.tasks + excluded.tasks"""
        return (text(settle).bindparams(cases),)
    return (
        text(
            "UPDATE task_count SET tasks = tasks - (SELECT count(*) FROM task_assignment t "
            "WHERE t.party_id = task_count.party_id AND t.case_id IN :cases) "
            "WHERE party_id IN (SELECT party_id FROM task_assignment WHERE case_id IN :cases)"
        ).bindparams(cases),
        text("DELETE FROM task_assignment WHERE case_id IN :cases").bindparams(cases),
        text(f"INSERT INTO {_COLUMNS}{_rows(some_cases=True)}").bindparams(cases),
        text(
            "INSERT INTO task_count (party_id, tasks) SELECT party_id, count(*) FROM task_assignment "
            "WHERE case_id IN :cases GROUP BY party_id "
            "ON CONFLICT (party_id) DO UPDATE SET tasks = tasks + excluded.tasks"
        ).bindparams(cases),
    )


def statements_per_commit(dialect: str) -> int:
    """What settling the touched cases costs a transaction: 1 statement on PostgreSQL, 4 on SQLite."""
    return len(_statements(dialect))


async def rebuild(session: AsyncSession) -> None:
    """Recompute the whole index and the counts (after a bulk load that bypassed the engine, bench/seed.py)."""
    await session.execute(text("DELETE FROM task_assignment"))
    await session.execute(text(rebuild_sql()))
    await session.execute(text("DELETE FROM task_count"))
    await session.execute(text(_COUNT_ALL))


def count_sql() -> str:
    """The INSERT that fills an empty ``task_count`` from a full index (migration 0024, ``rebuild``)."""
    return _COUNT_ALL


def touch(session: AsyncSession | Session, case_ids: Iterable[str]) -> None:
    """Recompute these cases' rows at commit: for writes the flush listener cannot see (a bulk
    DELETE of role players)."""
    _noted(session, case_ids)


# What can move a row: an instance's status, trigger, assignee or role; a case's status; a player.
_INSTANCE_FIELDS = ("status", "trigger", "assignee_party_id", "assigned_role")
_MISSING = object()


def _before_and_now(state: Any, name: str) -> tuple[Any, Any]:
    """An attribute's value before this flush's change and now, from what the session holds
    (never loading it: this runs inside a flush); ``_MISSING`` when it holds nothing."""
    now = state.dict.get(name, _MISSING)
    deleted = state.attrs[name].history.deleted
    return (deleted[0] if deleted else now), now


def _assigned(trigger: Any, assignee: Any, role: Any) -> bool:
    """Whether an instance of these values would be somebody's task while ENABLED (unknown: yes)."""
    if _MISSING in (trigger, assignee, role):
        return True
    return trigger == "user" and (assignee is not None or role is not None)


def _instance_moves(obj: EnabledAction, *, new: bool) -> bool:
    """Whether a change to this instance can move a row: only an instance that is (or was)
    assigned can. The always-enabled actions anyone may run (``comment``) are not, so running
    one (bench W1) costs the index nothing."""
    state = obj._sa_instance_state  # type: ignore[attr-defined]
    if not new and not any(state.attrs[name].history.has_changes() for name in _INSTANCE_FIELDS):
        return False
    pairs = [_before_and_now(state, name) for name in ("trigger", "assignee_party_id", "assigned_role")]
    before, now = zip(*pairs, strict=True)
    return _assigned(*now) or (not new and _assigned(*before))


def _case_moves(obj: Case) -> bool:
    """Whether a case's status crossed between runnable and not (ACTIVE <-> COMPLETED moves nothing)."""
    before, now = _before_and_now(obj._sa_instance_state, "status")  # type: ignore[attr-defined]
    return (before in EXECUTABLE_STATUSES) != (now in EXECUTABLE_STATUSES) or _MISSING in (before, now)


@event.listens_for(Session, "before_flush")
def _note_changes(session: Session, _context: Any, _instances: Any) -> None:
    touched: set[str] = set()
    for objects, new in ((session.new, True), (session.dirty, False), (session.deleted, False)):
        for obj in objects:
            if isinstance(obj, CaseRoleParty) or (isinstance(obj, EnabledAction) and _instance_moves(obj, new=new)):
                touched.add(obj.case_id)
            elif isinstance(obj, Case) and not new and _case_moves(obj):
                touched.add(obj.id)
    if touched:
        _noted(session, touched)


def _noted(session: AsyncSession | Session, case_ids: Iterable[str]) -> None:
    """Note cases to settle, and settle them before the commit: one of the unit of work's
    before-commit hooks (models/unit_of_work.py), the one mechanism every writer's commit runs.
    A rolled-back transaction runs none (a savepoint's cases stay noted: recomputing them again
    costs nothing wrong)."""
    work = unit_of_work(session)
    work.tasks_touched.update(case_ids)
    if _settle not in work.before_commit:
        work.before_commit.append(_settle)


async def _settle(session: AsyncSession) -> None:
    """Recompute the touched cases' rows, after the last flush, in the committing transaction:
    the last hook, since the others (the log's inserts, which carry pending rows along on
    PostgreSQL) may move rows too; while one remains, this one goes after it."""
    work = unit_of_work(session)
    if work.before_commit:
        work.before_commit.append(_settle)
        return
    await session.flush()
    touched, work.tasks_touched = work.tasks_touched, set()
    if not touched:
        return
    cases = sorted(touched)  # a fixed order: two transactions' deletes never cross
    statements = _statements(session.get_bind().dialect.name)
    for start in range(0, len(cases), _CHUNK):  # one chunk but for a bulk import's transaction
        for statement in statements:
            await session.execute(statement, {"cases": cases[start : start + _CHUNK]})
