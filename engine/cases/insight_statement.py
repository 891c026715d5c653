"""insights on PostgreSQL in one statement (engine/cases/insights.py's ``_Reader`` is the same
figures statement by statement, which SQLite runs).

Why one: each figure reads the same cases and visits. As a dozen statements each read them
again and paid a round trip (bench I1: twelve round trips for a subproject of 50 cases). Here the
window's cases, their visits and their completions are each read once (MATERIALIZED CTEs) and
every figure is a branch of one UNION ALL of rows of one shape: (kind, two keys, a count, four
numbers, an instant), which ``fold`` sorts out.
"""

from collections import defaultdict
from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    Date,
    Float,
    Integer,
    String,
    and_,
    case,
    cast,
    distinct,
    exists,
    func,
    literal,
    null,
    or_,
    select,
    union_all,
)

from engine.cases.insight_figures import CYCLE_BINS, Summary, bin_counts
from engine.tree.item_status import OPEN_CASE_STATUSES
from models import Activity, CaseRoleParty, GroupMember, StateVisit
from models.types import UTCDateTime

OPEN_STATUSES = OPEN_CASE_STATUSES  # a case still running or waiting (engine/tree/item_status.py)


def _row(kind: str, *, a: Any = None, b: Any = None, n: Any = None, x: tuple[Any, ...] = (), t: Any = None) -> list:
    numbers = [*x, *([None] * (4 - len(x)))]
    return [
        literal(kind).label("kind"),
        cast(a if a is not None else null(), String).label("a"),
        cast(b if b is not None else null(), String).label("b"),
        cast(n if n is not None else null(), Integer).label("n"),
        *[cast(v if v is not None else null(), Float).label(f"x{i}") for i, v in enumerate(numbers)],
        cast(t if t is not None else null(), UTCDateTime).label("t"),
    ]


def _seconds(later: Any, earlier: Any) -> Any:
    return cast(func.extract("epoch", later - earlier), Float)


def _spread(seconds: Any) -> tuple[Any, ...]:
    return (
        func.percentile_cont(0.5).within_group(seconds),
        func.percentile_cont(0.9).within_group(seconds),
        func.avg(seconds),
        func.max(seconds),
    )


# Between the role names of one execution in ``role_sets``: a short name is printable, this is not.
ROLE_SEPARATOR = "\x1f"


def executed_entries(chosen: Any) -> Any:
    """The chosen cases' ``action_executed`` entries: the action, the case, and the party whose
    right was used: the absent user a deputy acted for, else the actor."""
    log = Activity.__table__.c
    return (
        select(log.id, log.action, log.case_id, func.coalesce(log.on_behalf_of, log.actor_id).label("party"))
        .join(chosen, chosen.c.id == log.case_id)
        .where(log.kind == "action_executed", log.action.is_not(None))
        .cte("executed")
    )


def role_sets(executed: Any, *, postgres: bool) -> Any:
    """(action, roles, count): how many executions of each action were by a party playing each
    set of roles in the case (``roles``: the names joined by ``ROLE_SEPARATOR``, in no set order,
    a name may repeat; NULL: none). A party plays a role when it is the player or a member of the
    player group. Each execution's roles are one correlated subquery (an index range of its case's
    players), so that only (action, roles) is grouped: grouping the executions themselves spilled
    to disk at 100,000 cases. insights.py picks the one role an execution counts under."""
    players, member = CaseRoleParty.__table__.c, GroupMember.__table__.c
    in_group = (
        select(member.group_id)
        .where(member.group_id == players.party_id, member.user_id == executed.c.party)
        .correlate_except(GroupMember.__table__)  # the execution and its player are outside it
    )
    plays = or_(players.party_id == executed.c.party, exists(in_group))
    joined = (func.string_agg if postgres else func.group_concat)(players.role, literal(ROLE_SEPARATOR))
    played = select(joined).where(players.case_id == executed.c.case_id, plays).scalar_subquery()
    per_entry = select(executed.c.action, played.label("roles")).subquery("per_entry")
    return select(per_entry.c.action, per_entry.c.roles, func.count().label("n")).group_by(
        per_entry.c.action, per_entry.c.roles
    )


def _day(column: Any) -> Any:
    return cast(cast(func.timezone("UTC", column), Date), String)


def statement(chosen_query: Any, now: datetime) -> Any:
    """Every figure of the cases ``chosen_query`` selects (id, created_at, status, due_date)."""
    chosen = chosen_query.cte("chosen").prefix_with("MATERIALIZED")
    v = StateVisit.__table__.c
    seen = (
        select(v.case_id, v.scope, v.scope_action, v.state, v.entered_at, v.left_at, v.suspended_seconds)
        .join(chosen, chosen.c.id == v.case_id)
        .cte("seen")
        .prefix_with("MATERIALIZED")
    )
    done = (
        select(chosen.c.created_at, chosen.c.due_date, v.entered_at.label("done_at"))
        .select_from(chosen)
        .join(StateVisit.__table__, and_(v.case_id == chosen.c.id, v.scope == "", v.left_at.is_(None)))
        .where(chosen.c.status == "COMPLETED")
        .cte("done")
        .prefix_with("MATERIALIZED")
    )
    finished = seen.c.left_at.is_not(None)
    waited = _seconds(seen.c.left_at, seen.c.entered_at) - seen.c.suspended_seconds
    states = select(
        *_row(
            "state",
            a=seen.c.scope_action,
            b=seen.c.state,
            n=func.count(),
            x=(func.count(case((~finished, 1))), func.count(case((finished, 1)))),
            t=func.min(case((~finished, seen.c.entered_at))),
        )
    ).group_by(seen.c.scope_action, seen.c.state)
    timed = (
        select(*_row("timed", a=seen.c.scope_action, b=seen.c.state, n=func.count(), x=_spread(waited)))
        .where(finished)
        .group_by(seen.c.scope_action, seen.c.state)
    )
    executed = executed_entries(chosen)
    sets = role_sets(executed, postgres=True).subquery("role_sets")
    by_role = select(*_row("role", a=sets.c.action, b=sets.c.roles, n=sets.c.n))
    actions = select(*_row("action", a=executed.c.action, n=func.count())).group_by(executed.c.action)
    cycle_seconds = _seconds(done.c.done_at, done.c.created_at)
    cycle = select(*_row("cycle", n=func.count(), x=_spread(cycle_seconds)))
    which = case(
        *[(cycle_seconds < b, n) for n, b in enumerate(CYCLE_BINS) if b is not None], else_=len(CYCLE_BINS) - 1
    )
    bins = select(*_row("bin", a=which, n=func.count())).group_by(which)
    still_open = chosen.c.status.in_(OPEN_STATUSES)
    age = _seconds(literal(now, UTCDateTime), chosen.c.created_at)
    ages = select(*_row("age", n=func.count(), x=_spread(age))).where(still_open)
    stays = (
        select(seen.c.case_id, seen.c.scope_action, seen.c.state, func.count().label("visits"))
        .group_by(seen.c.case_id, seen.c.scope, seen.c.scope_action, seen.c.state)
        .subquery()
    )
    rework = (
        select(
            *_row(
                "rework",
                a=stays.c.scope_action,
                b=stays.c.state,
                n=func.sum(stays.c.visits - 1),
                x=(func.count(distinct(case((stays.c.visits > 1, stays.c.case_id)))),),
            )
        )
        .group_by(stays.c.scope_action, stays.c.state)
        .having(func.max(stays.c.visits) > 1)
    )
    overdue = select(*_row("overdue", n=func.count())).where(still_open, chosen.c.due_date < now.date())
    late = select(*_row("late", n=func.count())).where(
        cast(func.timezone("UTC", done.c.done_at), Date) > done.c.due_date
    )
    started_day = _day(chosen.c.created_at)
    started = select(*_row("started", a=started_day, n=func.count())).group_by(started_day)
    completed_day = _day(done.c.done_at)
    completed = select(*_row("completed", a=completed_day, n=func.count())).group_by(completed_day)
    parts = (states, timed, by_role, actions, cycle, bins, ages, rework, overdue, late, started, completed)
    return union_all(*parts)


class Folded:
    """The statement's rows, sorted by figure."""

    def __init__(self, rows: list[Any]) -> None:
        self.states: dict[tuple[str | None, str], tuple[int, int, datetime | None]] = {}
        self.timed: dict[tuple[str | None, str], Summary] = {}
        self.executed: dict[str, int] = {}
        self.by_role: dict[str, list[tuple[frozenset[str], int]]] = defaultdict(list)  # role sets: role_sets
        self.cycle: Summary | None = None
        self.bins: dict[int, int] = {}
        self.age: Summary | None = None
        self.rework: list[tuple[str | None, str, int, int]] = []
        self.overdue = self.late = 0
        self.started: dict[date, int] = {}
        self.completed: dict[date, int] = {}
        for kind, a, b, n, x0, x1, x2, x3, t in rows:
            if kind == "state":
                self.states[a, b] = (n, int(x0), t)
            elif kind == "timed":
                self.timed[a, b] = Summary(n, x0, x1, x2, x3)
            elif kind == "action":
                self.executed[a] = n
            elif kind == "role":
                self.add_roles(a, b, n)
            elif kind == "cycle" and n:
                self.cycle = Summary(n, x0, x1, x2, x3)
            elif kind == "bin":
                self.bins[int(a)] = n
            elif kind == "age" and n:
                self.age = Summary(n, x0, x1, x2, x3)
            elif kind == "rework":
                self.rework.append((a, b, int(n), int(x0)))
            elif kind == "overdue":
                self.overdue = n
            elif kind == "late":
                self.late = n
            elif kind == "started":
                self.started[date.fromisoformat(a)] = n
            elif kind == "completed":
                self.completed[date.fromisoformat(a)] = n

    def add_roles(self, action: str, roles: str | None, count: int) -> None:
        """A row of ``role_sets``."""
        self.by_role[action].append((frozenset(roles.split(ROLE_SEPARATOR)) if roles else frozenset(), count))

    def cycle_bins(self) -> list[tuple[int | None, int]]:
        return bin_counts(self.bins)
