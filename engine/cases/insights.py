"""Where work waits: figures over a workflow's cases from their state visits and log
(docs/api.md, "Insights"). Read only; nothing here writes.

Which cases count: those of the workflow (the versions asked for, else all) that started in the
window ``[since, until)`` (at most ``MAX_DAYS`` days), in the project or subproject asked for,
whose workflow item the asker may see (engine/people/visibility.py: hidden is missing). Every
figure is over those cases alone. Durations are seconds; a visit's time is from entering to
leaving its state less the time its case was suspended meanwhile (models/visit.py).

An action's executions by role: each counts once, under one role its executor plays in the
case (``_Names.counted_role``), so that the counts add up to the executions.

Percentiles: ``percentile_cont`` on PostgreSQL, in the statement; on SQLite, which has none, the
durations are read and engine/cases/insight_figures.py computes the same interpolation.
"""

from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from engine import validation
from engine.cases import insight_reads, insight_statement
from engine.cases.insight_figures import Bucket, Interval, Summary, buckets
from engine.cases.insight_statement import Folded
from engine.errors import DomainError, ErrorCode, not_found
from engine.people.actors import Actor
from engine.people.visibility import item_visible, project_visible, subproject_visible
from engine.spec.specs import ActionSpec, StateSpec, WorkflowSpec
from engine.spec.workflows import spec_by_id
from models import Case, Project, Subproject, Workflow, WorkflowItem, as_utc

MAX_DAYS = 400
DEFAULT_DAYS = 30
MAX_ROWS = 200  # states, actions and rework rows in one answer


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
    )
    names = _Names([await spec_by_id(session, workflow_id) for workflow_id in versions])
    if session.bind.dialect.name == "postgresql":
        folded = Folded((await session.execute(insight_statement.statement(chosen, now))).all())
    else:
        folded = await insight_reads.read(session, chosen, now)
    return _assemble(folded, names, since, until)


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
        self.roles: dict[str, int] = {}  # role -> its place in the newest spec that has it
        for spec in specs:
            for name in spec.roles:
                self.roles.setdefault(name, len(self.roles))
            for name, state in spec.states.items():
                self.states.setdefault(name, state)
            for name, action in spec.actions.items():
                self.actions.setdefault(name, action)
        order = list(self.states)
        self.state_order = {name: (self.states[name].scope is not None, n) for n, name in enumerate(order)}

    def state(self, name: str) -> StateSpec:
        return self.states.get(name) or StateSpec.named(name)

    def action(self, name: str) -> ActionSpec:
        return self.actions.get(name) or ActionSpec.named(name)

    def scope(self, name: str | None) -> ActionSpec | None:
        return None if name is None else self.action(name)

    def counted_role(self, action: ActionSpec, played: frozenset[str]) -> str | None:
        """The one role an execution by a party playing ``played`` counts under: the action's
        own (its assigned role, then its allowed roles in order) when the party plays it, else
        the first the party plays in the workflow's order of roles; None when it plays none."""
        for role in (action.assigned_role, *action.allowed_roles):
            if role is not None and role in played:
                return role
        return min(played, key=lambda role: (self.roles.get(role, len(self.roles)), role), default=None)

    def sort_key(self, name: str) -> tuple[Any, ...]:
        return (*self.state_order.get(name, (True, len(self.state_order))), name)


def _assemble(folded: Folded, names: "_Names", since: datetime, until: datetime) -> Insights:
    """The answer from the figures read: states and actions named and in the spec's order,
    those nobody entered or executed yet shown as zeros, each list at most ``MAX_ROWS`` long."""
    states: dict[tuple[str | None, str], StateFigures] = {}
    for (scope, state), (entered, open_now, oldest) in folded.states.items():
        states[scope, state] = StateFigures(
            state=names.state(state),
            scope=names.scope(scope),
            entered=entered,
            in_state_now=open_now,
            oldest_since=as_utc(oldest) if oldest is not None else None,
            time_in_state=folded.timed.get((scope, state)),
        )
    for name, spec_state in names.states.items():
        states.setdefault((spec_state.scope, name), StateFigures(state=spec_state, scope=names.scope(spec_state.scope)))
    actions = {name: ActionFigures(action=spec) for name, spec in names.actions.items()}
    for name, count in folded.executed.items():
        actions.setdefault(name, ActionFigures(action=names.action(name))).executed = count
    for name, sets in folded.by_role.items():
        if name in actions:
            counted: Counter[str | None] = Counter()
            for played, count in sets:
                counted[names.counted_role(actions[name].action, played)] += count
            actions[name].by_role = sorted(counted.items(), key=lambda pair: (pair[0] is None, pair[0] or ""))
    rework = [
        ReworkFigures(state=names.state(state), scope=names.scope(scope), returned=returned, cases=cases)
        for scope, state, returned, cases in folded.rework
    ]
    return Insights(
        since=since,
        until=until,
        states=sorted(states.values(), key=lambda f: names.sort_key(f.state.short_name))[:MAX_ROWS],
        actions=list(actions.values())[:MAX_ROWS],
        cycle_time=folded.cycle,
        cycle_bins=folded.cycle_bins(),
        completed=folded.cycle.count if folded.cycle else 0,
        open_age=folded.age,
        rework=sorted(rework, key=lambda f: names.sort_key(f.state.short_name))[:MAX_ROWS],
        overdue_open=folded.overdue,
        overdue_late=folded.late,
        started_by_day=folded.started,
        completed_by_day=folded.completed,
    )
