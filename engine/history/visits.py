"""Writing state visits (models/visit.py): the case machinery says what moved, this writes it.

Why at the end of the transaction: an action may move a case through several states at one
instant (automatic actions) and the rows it writes ride along with its log entry in one
statement (engine/history/folded_writes.py). Reading or writing visits in the middle would
flush those rows on their own. So the moves are noted in the session as they happen and written
by one ``before_commit`` hook after the log entry's insert: the visits commit (or roll back)
with the entry, and a visit entered and left in the same transaction is inserted closed.

What ends a visit: the action that leaves the state (``ACTION``), the case being canceled
(``CANCELED``), or, for a child scope, its owning instance leaving ENABLED (``CLOSED``: the
parent fired, was disabled or canceled; its ``completed_at`` is when). Suspension does not end a
visit: it is added up in ``suspended_seconds`` so that a suspended case is not counted as waiting.
migrations/versions/0026_state_visits.py derives the same rows from the log (``backfill``).
"""

import copy
import functools
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam, exists, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from models import EnabledAction, StateVisit, new_id, unit_of_work

_PENDING = "caseway.visits"
ACTION, CANCELED, CLOSED = "ACTION", "CANCELED", "CLOSED"


@dataclass
class _Pending:
    """The moves noted in one transaction, in order."""

    new: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # open visits entered here
    rows: list[dict[str, Any]] = field(default_factory=list)  # every visit entered here, in order
    leaves: list[dict[str, Any]] = field(default_factory=list)  # visits entered before, left here
    suspends: list[dict[str, Any]] = field(default_factory=list)
    resumes: list[dict[str, Any]] = field(default_factory=list)
    cancels: list[dict[str, Any]] = field(default_factory=list)
    scoped_cases: set[str] = field(default_factory=set)  # cases with child scopes that may have closed
    deferred: bool = False  # the hook waited once for the log's writer


def _pending(session: AsyncSession) -> _Pending:
    info = session.info
    pending = info.get(_PENDING)
    if pending is None:
        pending = info[_PENDING] = _Pending()
        unit_of_work(session).before_commit.append(_write)
    return pending


def moved(
    session: AsyncSession,
    *,
    case_id: str,
    subproject_id: str,
    workflow_id: str,
    scope: str,
    scope_action: str | None,
    from_state: str | None,
    to_state: str,
    action: str | None,
    at: datetime,
    has_scopes: bool = False,
) -> None:
    """The scope went from ``from_state`` (None: it starts now) to ``to_state`` by ``action``:
    the visit of the first ends, one of the second starts. ``has_scopes``: the case's workflow
    has child scopes, which may have closed in this transaction (checked when writing)."""
    pending = _pending(session)
    if has_scopes:
        pending.scoped_cases.add(case_id)
    key = (case_id, scope)
    if from_state is not None:
        held = pending.new.pop(key, None)
        if held is not None:
            held.update(left_at=at, left_action=action, left_reason=ACTION)
        else:
            pending.leaves.append({"c": case_id, "s": scope, "at": at, "action": action})
    row = {
        "id": new_id("vis"),
        "case_id": case_id,
        "subproject_id": subproject_id,
        "scope": scope,
        "scope_action": scope_action,
        "state": to_state,
        "workflow_id": workflow_id,
        "entered_at": at,
        "entered_action": action,
        "left_at": None,
        "left_action": None,
        "left_reason": None,
        "suspended_seconds": 0.0,
        "suspended_at": None,
    }
    pending.new[key] = row
    pending.rows.append(row)


def scopes_may_close(session: AsyncSession, *, case_id: str) -> None:
    """Something in the case may have closed child scopes (a parent fired or was disabled):
    their open visits end when writing, at their owner's ``completed_at``."""
    _pending(session).scoped_cases.add(case_id)


def mark(session: AsyncSession) -> Any:
    """What is noted so far, for ``forget``: a savepoint about to run moves it may roll back."""
    return copy.deepcopy(session.info.get(_PENDING))


def forget(session: AsyncSession, marked: Any) -> None:
    """Back to what ``mark`` saw: the savepoint rolled back the moves noted since
    (engine/migration), as ``activity.forget`` drops their entries."""
    if marked is None:
        session.info.pop(_PENDING, None)
    else:
        session.info[_PENDING] = marked


def suspended(session: AsyncSession, *, case_id: str, at: datetime) -> None:
    """The case stops: its open visits stop counting from ``at``."""
    _pending(session).suspends.append({"c": case_id, "at": at})


def resumed(session: AsyncSession, *, case_id: str, at: datetime) -> None:
    """The case goes on: the stretch since it was suspended is added to its open visits'
    ``suspended_seconds``."""
    _pending(session).resumes.append({"c": case_id, "at": at})


def canceled(session: AsyncSession, *, case_id: str, at: datetime, was_suspended: bool) -> None:
    """The case ends without a terminal state: its open visits end (a suspended stretch first)."""
    pending = _pending(session)
    if was_suspended:
        pending.resumes.append({"c": case_id, "at": at})
    pending.cancels.append({"c": case_id, "at": at})


_TABLE = StateVisit.__table__  # Core statements: no ORM rows are synchronized
_V = _TABLE.c
_LEAVE = (
    update(_TABLE)
    .where(_V.case_id == bindparam("c"), _V.scope == bindparam("s"), _V.left_at.is_(None))
    .values(left_at=bindparam("at"), left_action=bindparam("action"), left_reason=ACTION)
)
_SUSPEND = update(_TABLE).where(_V.case_id == bindparam("c"), _V.left_at.is_(None)).values(suspended_at=bindparam("at"))
_SUSPENDED_SINCE = select(_V.suspended_at).where(_V.case_id == bindparam("c"), _V.suspended_at.is_not(None)).limit(1)
_RESUME = (
    update(_TABLE)
    .where(_V.case_id == bindparam("c"), _V.suspended_at.is_not(None))
    .values(suspended_seconds=_V.suspended_seconds + bindparam("seconds"), suspended_at=None)
)
_CANCEL = (
    update(_TABLE)
    .where(_V.case_id == bindparam("c"), _V.left_at.is_(None))
    .values(left_at=bindparam("at"), left_reason=CANCELED)
)
_OWNER = EnabledAction.__table__.c
_CLOSE_SCOPES = (
    update(_TABLE)
    .where(
        _V.case_id == bindparam("c"),
        _V.scope != "",
        _V.left_at.is_(None),
        exists().where(and_(_OWNER.id == _V.scope, _OWNER.status != "ENABLED")),
    )
    .values(
        left_at=select(_OWNER.completed_at).where(_OWNER.id == _V.scope).scalar_subquery(),
        left_reason=CLOSED,
    )
)


def _leave_and_enter(pending: _Pending) -> tuple[Any, dict[str, Any] | None]:
    """PostgreSQL: the visits left as data-modifying CTEs of the insert of those entered. They
    run on one snapshot, so a leave never touches a row the insert adds. With one visit entered
    (a transition's write) the statement is built once per number of leaves, with bound
    parameters, and returned with them; else (several, as automatic actions chain) it is built
    with its values, and SQLAlchemy compiles it anew."""
    if len(pending.rows) == 1:
        params = {f"new_{name}": value for name, value in pending.rows[0].items()}
        for n, leave in enumerate(pending.leaves):
            params.update({f"{key}{n}": value for key, value in leave.items()})
        return _entering_one(len(pending.leaves), tuple(pending.rows[0])), params
    statement = insert(_TABLE).values(pending.rows)
    for n, leave in enumerate(pending.leaves):
        statement = statement.add_cte(
            update(_TABLE)
            .where(_V.case_id == leave["c"], _V.scope == leave["s"], _V.left_at.is_(None))
            .values(left_at=leave["at"], left_action=leave["action"], left_reason=ACTION)
            .returning(_V.id)
            .cte(f"left{n}")
        )
    return statement, None


@functools.lru_cache(maxsize=16)
def _entering_one(leaves: int, columns: tuple[str, ...]) -> Any:
    """The insert of one visit with ``leaves`` visits left, with bound parameters: SQLAlchemy
    never caches the compiled form of a multi-row VALUES, and compiling it (with its CTEs) was
    most of what a transition cost more than an action that keeps the state (bench W1r: 0.8 ms
    of a request's CPU)."""
    statement = insert(_TABLE).values({name: bindparam(f"new_{name}") for name in columns})
    for n in range(leaves):
        statement = statement.add_cte(
            update(_TABLE)
            .where(_V.case_id == bindparam(f"c{n}"), _V.scope == bindparam(f"s{n}"), _V.left_at.is_(None))
            .values(left_at=bindparam(f"at{n}"), left_action=bindparam(f"action{n}"), left_reason=ACTION)
            .returning(_V.id)
            .cte(f"left{n}")
        )
    return statement


async def _write(session: AsyncSession) -> None:
    """Write what was noted. Runs after the log entry's insert (which writes the rows folded
    into it), so that nothing here flushes them on their own first."""
    work = unit_of_work(session)
    pending: _Pending | None = session.info.get(_PENDING)
    if pending is None:  # forgotten (a savepoint rolled its moves back), or written already
        return
    if not pending.deferred and any(entry.seq is None for entry in work.entries):  # the log's writer is to run
        pending.deferred = True
        work.before_commit.append(_write)
        return
    del session.info[_PENDING]
    if pending.leaves and session.bind.dialect.name == "postgresql":
        statement, params = _leave_and_enter(pending)  # one round trip: every leave comes with an entry
        await session.execute(statement, params)
    else:
        if pending.leaves:
            await session.execute(_LEAVE, pending.leaves)
        if pending.rows:
            await session.execute(insert(_TABLE), pending.rows)
    for suspension in pending.suspends:
        await session.execute(_SUSPEND, suspension)
    for resumption in pending.resumes:
        since = await session.scalar(_SUSPENDED_SINCE, {"c": resumption["c"]})
        if since is not None:
            seconds = (resumption["at"] - since).total_seconds()
            await session.execute(_RESUME, {"c": resumption["c"], "seconds": max(seconds, 0.0)})
    for cancellation in pending.cancels:
        await session.execute(_CANCEL, cancellation)
    for case_id in sorted(pending.scoped_cases):
        await session.execute(_CLOSE_SCOPES, {"c": case_id})


__all__ = [
    "ACTION",
    "CANCELED",
    "CLOSED",
    "canceled",
    "forget",
    "mark",
    "moved",
    "resumed",
    "scopes_may_close",
    "suspended",
]
