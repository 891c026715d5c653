"""Where work waits: figures over a workflow's cases from their state visits and log
(docs/api.md, "Insights"). Read only; nothing here writes.

Which cases count: those of the workflow (the versions asked for, else all) that started in the
window ``[since, until)`` (at most ``MAX_DAYS`` days), in the project or subproject asked for,
whose workflow item the asker may see (engine/people/visibility.py: hidden is missing). Every
figure is over those cases alone. Durations are seconds; a visit's time is from entering to
leaving its state less the time its case was suspended meanwhile (models/visit.py).

Percentiles: ``percentile_cont`` on PostgreSQL, in the statement; on SQLite, which has none, the
durations are read and engine/cases/insight_figures.py computes the same interpolation.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import Date, Float, and_, case, cast, distinct, func, literal, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine import validation
from engine.cases.insight_figures import (
    CYCLE_BINS,
    Bucket,
    Interval,
    Summary,
    as_day,
    bin_counts,
    bin_of,
    buckets,
    summarize,
)
from engine.errors import DomainError, ErrorCode, not_found
from engine.people.actors import Actor
from engine.people.visibility import item_visible, project_visible, subproject_visible
from engine.spec.specs import ActionSpec, StateSpec, WorkflowSpec
from engine.spec.workflows import spec_by_id
from models import Activity, Case, CaseRoleParty, Project, StateVisit, Subproject, Workflow, WorkflowItem, as_utc
from models.types import UTCDateTime

MAX_DAYS = 400
DEFAULT_DAYS = 30
MAX_ROWS = 200  # states, actions and rework rows in one answer
OPEN_STATUSES = ("ACTIVE", "SUSPENDED")


@dataclass
class StateFigures:
    state: StateSpec
    scope: ActionSpec | None  # the parent action whose child workflow the state belongs to
    entered: int = 0
    in_state_now: int = 0
    oldest_since: datetime | None = None
    time_in_state: Summary | None = None


@dataclass
class ActionFigures:
    action: ActionSpec
    executed: int = 0
    by_role: list[tuple[str | None, int]] = field(default_factory=list)


@dataclass
class ReworkFigures:
    state: StateSpec
    scope: ActionSpec | None
    returned: int
    cases: int


@dataclass
class Insights:
    since: datetime
    until: datetime
    states: list[StateFigures]
    actions: list[ActionFigures]
    cycle_time: Summary | None
    cycle_bins: list[tuple[int | None, int]]  # (upper bound in seconds or None, completed cases)
    completed: int
    open_age: Summary | None
    rework: list[ReworkFigures]
    overdue_open: int
    overdue_late: int
    started_by_day: dict[date, int]
    completed_by_day: dict[date, int]

    def throughput(self, interval: Interval) -> list[Bucket]:
        return buckets(interval, self.since, self.until, self.started_by_day, self.completed_by_day)


async def insights(
    session: AsyncSession,
    *,
    actor: Actor,
    workflow: str,
    version: int | None = None,
    project_id: str | None = None,
    subproject_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    now: datetime,
) -> Insights:
    """The figures of ``workflow``'s cases that started in ``[since, until)`` (default: the
    ``DEFAULT_DAYS`` days up to ``now``), over a project, a subproject or everywhere, that
    ``actor`` may see."""
    since, until = _window(since, until, now)
    versions = await _versions(session, workflow, version)
    if project_id is not None and subproject_id is not None:
        raise validation.invalid("Give at most one of projectId and subprojectId.", "subprojectId")
    where = [Case.workflow_id.in_(list(versions)), Case.created_at >= since, Case.created_at < until]
    if subproject_id is not None:
        await _require_visible(session, Subproject, subproject_visible(actor), subproject_id, "subproject")
        where.append(WorkflowItem.subproject_id == subproject_id)
    if project_id is not None:
        await _require_visible(session, Project, project_visible(actor), project_id, "project")
        where.append(WorkflowItem.project_id == project_id)
    if not actor.is_admin:
        where.append(item_visible(actor))
    chosen = (
        select(Case.id, Case.created_at, Case.status, WorkflowItem.due_date)
        .join(WorkflowItem, WorkflowItem.id == Case.object_id)
        .where(*where)
        .cte("chosen")
    )
    names = _Names([await spec_by_id(session, workflow_id) for workflow_id in versions])
    reader = _Reader(session, chosen, now)
    states = await reader.states(names)
    return Insights(
        since=since,
        until=until,
        states=states,
        actions=await reader.actions(names),
        cycle_time=(cycle := await reader.cycle_time()),
        cycle_bins=await reader.cycle_bins(),
        completed=cycle.count if cycle else 0,
        open_age=await reader.open_age(),
        rework=await reader.rework(names),
        overdue_open=(overdue := await reader.overdue())[0],
        overdue_late=overdue[1],
        started_by_day=await reader.started_by_day(),
        completed_by_day=await reader.completed_by_day(),
    )


def _window(since: datetime | None, until: datetime | None, now: datetime) -> tuple[datetime, datetime]:
    until = as_utc(until) if until is not None else now
    since = as_utc(since) if since is not None else until - timedelta(days=DEFAULT_DAYS)
    if since >= until:
        raise validation.invalid("from must be earlier than to.", "from")
    if until - since > timedelta(days=MAX_DAYS):
        raise validation.invalid(f"The window is at most {MAX_DAYS} days long; narrow from and to.", "from")
    return since, until


async def _versions(session: AsyncSession, short_name: str, version: int | None) -> dict[str, int]:
    """The definitions asked for, newest first: id -> version."""
    query = select(Workflow.id, Workflow.version).where(Workflow.short_name == short_name)
    rows = (await session.execute(query.order_by(Workflow.version.desc()))).all()
    if not rows:
        raise DomainError(ErrorCode.NOT_FOUND, f"No workflow named {short_name!r} exists.", ["workflow"])
    if version is not None:
        rows = [row for row in rows if row.version == version]
        if not rows:
            raise DomainError(ErrorCode.NOT_FOUND, f"{short_name} has no version {version}.", ["version"])
    return {row.id: row.version for row in rows}


async def _require_visible(session: AsyncSession, model: Any, visible: Any, id_: str, what: str) -> None:
    found = await session.scalar(select(model.id).where(model.id == id_, visible))
    if found is None:
        raise not_found(what, id_, f"{what}Id")


class _Names:
    """States and actions by short name, as the newest version that has them defines them;
    the order is the newest spec's (the top level first, then each child workflow)."""

    def __init__(self, specs: list[WorkflowSpec]) -> None:
        self.states: dict[str, StateSpec] = {}
        self.actions: dict[str, ActionSpec] = {}
        for spec in specs:
            for name, state in spec.states.items():
                self.states.setdefault(name, state)
            for name, action in spec.actions.items():
                self.actions.setdefault(name, action)
        order = list(self.states)
        self.state_order = {name: (self.states[name].scope is not None, n) for n, name in enumerate(order)}

    def state(self, name: str) -> StateSpec:
        return self.states.get(name) or StateSpec(short_name=name, pretty_name=name)

    def action(self, name: str) -> ActionSpec:
        return self.actions.get(name) or ActionSpec(short_name=name, pretty_name=name, pretty_past_tense=name)

    def scope(self, name: str | None) -> ActionSpec | None:
        return None if name is None else self.action(name)

    def sort_key(self, name: str) -> tuple[Any, ...]:
        return (*self.state_order.get(name, (True, len(self.state_order))), name)


_V = StateVisit.__table__.c


class _Reader:
    def __init__(self, session: AsyncSession, chosen: Any, now: datetime) -> None:
        self.session = session
        self.chosen = chosen
        self.now = now
        self.postgres = session.bind.dialect.name == "postgresql"

    async def _rows(self, query: Any) -> list[Any]:
        return list((await self.session.execute(query)).all())

    def _day(self, column: Any) -> Any:
        if self.postgres:
            return cast(func.timezone("UTC", column), Date)
        return func.date(column)

    def _seconds(self, later: Any, earlier: Any) -> Any:
        """PostgreSQL's seconds between two instants (SQLite's are computed in Python)."""
        return cast(func.extract("epoch", later - earlier), Float)

    def _percentiles(self, seconds: Any) -> list[Any]:
        return [
            func.count(),
            func.percentile_cont(0.5).within_group(seconds),
            func.percentile_cont(0.9).within_group(seconds),
            func.avg(seconds),
            func.max(seconds),
        ]

    async def _summaries(self, keys: list[Any], later: Any, earlier: Any, less: Any, where: list[Any]) -> dict:
        """Per group of ``keys``: the summary of (later - earlier - less) seconds."""
        joined = select(*keys).select_from(StateVisit.__table__).join(self.chosen, self.chosen.c.id == _V.case_id)
        if self.postgres:
            seconds = self._seconds(later, earlier) - less
            rows = await self._rows(joined.add_columns(*self._percentiles(seconds)).where(*where).group_by(*keys))
            n = len(keys)
            return {tuple(row[:n]): Summary(row[n], *(float(value) for value in row[n + 1 :])) for row in rows}
        values: dict[tuple[Any, ...], list[float]] = defaultdict(list)
        for row in await self._rows(joined.add_columns(later, earlier, less).where(*where)):
            *key, late, early, minus = row
            values[tuple(key)].append((as_utc(late) - as_utc(early)).total_seconds() - minus)
        return {key: summary for key, found in values.items() if (summary := summarize(found)) is not None}

    async def states(self, names: _Names) -> list[StateFigures]:
        counted = (
            select(
                _V.scope_action,
                _V.state,
                func.count(),
                func.count(case((_V.left_at.is_(None), 1))),
                func.min(case((_V.left_at.is_(None), _V.entered_at))),
            )
            .join(self.chosen, self.chosen.c.id == _V.case_id)
            .group_by(_V.scope_action, _V.state)
        )
        figures: dict[tuple[str | None, str], StateFigures] = {}
        for scope, state, entered, now_in, oldest in await self._rows(counted):
            figures[scope, state] = StateFigures(
                state=names.state(state),
                scope=names.scope(scope),
                entered=entered,
                in_state_now=now_in,
                oldest_since=as_utc(oldest) if oldest is not None else None,
            )
        for name, spec_state in names.states.items():  # states nobody entered yet: shown, as zeros
            blank = StateFigures(state=spec_state, scope=names.scope(spec_state.scope))
            figures.setdefault((spec_state.scope, name), blank)
        timed = await self._summaries(
            [_V.scope_action, _V.state], _V.left_at, _V.entered_at, _V.suspended_seconds, [_V.left_at.is_not(None)]
        )
        for key, summary in timed.items():
            if key in figures:
                figures[key].time_in_state = summary
        ordered = sorted(figures.values(), key=lambda f: names.sort_key(f.state.short_name))
        return ordered[:MAX_ROWS]

    async def actions(self, names: _Names) -> list[ActionFigures]:
        log = Activity.__table__.c
        executed = (
            select(log.action, func.count())
            .join(self.chosen, self.chosen.c.id == log.case_id)
            .where(log.kind == "action_executed", log.action.is_not(None))
            .group_by(log.action)
        )
        figures = {name: ActionFigures(action=spec) for name, spec in names.actions.items()}
        for action, count in await self._rows(executed):
            figures.setdefault(action, ActionFigures(action=names.action(action))).executed = count
        players = CaseRoleParty.__table__.c
        by_role = (
            select(log.action, players.role, func.count())
            .join(self.chosen, self.chosen.c.id == log.case_id)
            .outerjoin(CaseRoleParty.__table__, and_(players.case_id == log.case_id, players.party_id == log.actor_id))
            .where(log.kind == "action_executed", log.action.is_not(None))
            .group_by(log.action, players.role)
        )
        for action, role, count in await self._rows(by_role):
            if action in figures:
                figures[action].by_role.append((role, count))
        for figure in figures.values():
            figure.by_role.sort(key=lambda pair: (pair[0] is None, pair[0] or ""))
        return list(figures.values())[:MAX_ROWS]

    def _completions(self) -> Any:
        """Each completed case's start and completion: its top-level visit of the terminal state."""
        return (
            select(self.chosen.c.created_at, _V.entered_at)
            .select_from(self.chosen)
            .join(StateVisit.__table__, and_(_V.case_id == self.chosen.c.id, _V.scope == "", _V.left_at.is_(None)))
            .where(self.chosen.c.status == "COMPLETED")
        )

    async def cycle_time(self) -> Summary | None:
        completions = self._completions().subquery()
        if self.postgres:
            seconds = self._seconds(completions.c.entered_at, completions.c.created_at)
            row = (await self._rows(select(*self._percentiles(seconds)).select_from(completions)))[0]
            return None if not row[0] else Summary(row[0], *(float(value) for value in row[1:]))
        rows = await self._rows(select(completions.c.entered_at, completions.c.created_at))
        return summarize((as_utc(done) - as_utc(start)).total_seconds() for done, start in rows)

    async def cycle_bins(self) -> list[tuple[int | None, int]]:
        completions = self._completions().subquery()
        if self.postgres:
            seconds = self._seconds(completions.c.entered_at, completions.c.created_at)
            bounds = [(seconds < bound, n) for n, bound in enumerate(CYCLE_BINS) if bound is not None]
            which = case(*bounds, else_=len(CYCLE_BINS) - 1)
            rows = await self._rows(select(which, func.count()).select_from(completions).group_by(which))
            return bin_counts(dict(rows))
        found: dict[int, int] = defaultdict(int)
        for done, start in await self._rows(select(completions.c.entered_at, completions.c.created_at)):
            found[bin_of((as_utc(done) - as_utc(start)).total_seconds())] += 1
        return bin_counts(found)

    async def open_age(self) -> Summary | None:
        still_open = self.chosen.c.status.in_(OPEN_STATUSES)
        if self.postgres:
            seconds = self._seconds(literal(self.now, UTCDateTime), self.chosen.c.created_at)
            row = (await self._rows(select(*self._percentiles(seconds)).where(still_open)))[0]
            return None if not row[0] else Summary(row[0], *(float(value) for value in row[1:]))
        rows = await self._rows(select(self.chosen.c.created_at).where(still_open))
        return summarize((self.now - as_utc(start)).total_seconds() for (start,) in rows)

    async def rework(self, names: _Names) -> list[ReworkFigures]:
        stays = (
            select(_V.case_id, _V.scope, _V.scope_action, _V.state, func.count().label("n"))
            .join(self.chosen, self.chosen.c.id == _V.case_id)
            .group_by(_V.case_id, _V.scope, _V.scope_action, _V.state)
            .subquery()
        )
        query = (
            select(
                stays.c.scope_action,
                stays.c.state,
                func.sum(stays.c.n - 1),
                func.count(distinct(case((stays.c.n > 1, stays.c.case_id)))),
            )
            .group_by(stays.c.scope_action, stays.c.state)
            .having(func.max(stays.c.n) > 1)
        )
        found = [
            ReworkFigures(state=names.state(state), scope=names.scope(scope), returned=int(returned), cases=cases)
            for scope, state, returned, cases in await self._rows(query)
        ]
        return sorted(found, key=lambda f: names.sort_key(f.state.short_name))[:MAX_ROWS]

    async def overdue(self) -> tuple[int, int]:
        """Open cases past their item's due date (overdue from the day after it, UTC), and
        completed ones that completed after it."""
        today = self.now.date()
        due = self.chosen.c.due_date
        open_late = select(func.count()).where(self.chosen.c.status.in_(OPEN_STATUSES), due < today)
        completions = self._completions().add_columns(due).subquery()
        late = select(func.count()).where(self._day(completions.c.entered_at) > completions.c.due_date)
        return (await self.session.scalar(open_late) or 0), (await self.session.scalar(late) or 0)

    async def started_by_day(self) -> dict[date, int]:
        day = self._day(self.chosen.c.created_at)
        return {as_day(d): n for d, n in await self._rows(select(day, func.count()).group_by(day))}

    async def completed_by_day(self) -> dict[date, int]:
        completions = self._completions().subquery()
        day = self._day(completions.c.entered_at)
        return {as_day(d): n for d, n in await self._rows(select(day, func.count()).group_by(day))}
