"""insights: where a workflow's cases wait, how long they take, and whether it gets better
(docs/api.md, "Insights"; engine/cases/insights.py computes every figure)."""

from datetime import datetime
from enum import Enum

import strawberry

from engine.cases import insights as figures
from engine.cases.insight_figures import Interval, Summary
from resolvers import insights as reading
from schema.base import AppInfo, UserError
from schema.workflow import Action, State

_SECONDS = "Seconds; null when there is nothing to measure."


@strawberry.enum(description="The length of a throughput bucket: a UTC day, an ISO week (from Monday) or a month.")
class InsightsInterval(Enum):
    DAY = "DAY"
    WEEK = "WEEK"
    MONTH = "MONTH"


@strawberry.input(
    description=f"Which cases count: those of `workflow` (the version given, else every version) that started "
    f"in [from, to), at most {figures.MAX_DAYS} days (default: the {figures.DEFAULT_DAYS} days up to now), in "
    "the project or subproject given (at most one; neither: everywhere), whose workflow item you may see."
)
class InsightsInput:
    workflow: str = strawberry.field(description="The workflow's short name.")
    version: int | None = None
    project_id: strawberry.ID | None = None
    subproject_id: strawberry.ID | None = None
    from_: datetime | None = strawberry.field(name="from", default=None, description="Cases started at or after.")
    to: datetime | None = strawberry.field(default=None, description="Cases started before.")


@strawberry.type(description="Durations in seconds: median and 90th percentile (interpolated), mean, maximum.")
class DurationSummary:
    count: int = strawberry.field(description="How many durations.")
    p50: float
    p90: float
    mean: float
    max: float


def _summary(found: Summary | None) -> DurationSummary | None:
    if found is None:
        return None
    return DurationSummary(count=found.count, p50=found.p50, p90=found.p90, mean=found.mean, max=found.max)


@strawberry.type(description="One state (of the top level or of a child workflow) and how cases stay in it.")
class InsightState:
    state: State
    scope: Action | None = strawberry.field(
        description="The parent action whose child workflow the state belongs to; null at the top level."
    )
    entered: int = strawberry.field(description="Visits: how many times a case (or child scope) entered it.")
    in_state_now: int = strawberry.field(description="Visits still open: cases in it now.")
    oldest_since: datetime | None = strawberry.field(description="When the longest-waiting open visit began.")
    time_in_state: DurationSummary | None = strawberry.field(
        description="Finished visits: from entering to leaving, less the time the case was suspended meanwhile."
    )


@strawberry.type(description="How many of an action's executions were by players of a role.")
class RoleCount:
    role: str | None = strawberry.field(
        description="The role the executions counted here were made under: one per execution, of the roles its "
        "actor (or the absent user a deputy acted for) plays in the case now, directly or through a group; the "
        "action's own role first. Null: none (a privilege, an admin, the system). The counts add up to executed."
    )
    count: int


@strawberry.type
class InsightAction:
    action: Action
    executed: int = strawberry.field(description="Log entries action_executed of this action.")
    by_role: list[RoleCount]


@strawberry.type(description="Completed cases whose cycle time is below `upTo` and at or above the previous bin's.")
class CycleTimeBin:
    up_to: float | None = strawberry.field(description="Seconds; null: the last bin, without an upper bound.")
    count: int


@strawberry.type(description="Completed cases: from their start to entering the terminal state they are in.")
class CycleTime:
    completed: int
    bins: list[CycleTimeBin] = strawberry.field(
        description="A histogram: 1 hour, 4 hours, 1, 3, 7, 14, 30 and 90 days, and longer."
    )
    p50: float | None = strawberry.field(description=_SECONDS)
    p90: float | None = strawberry.field(description=_SECONDS)
    mean: float | None = strawberry.field(description=_SECONDS)


@strawberry.type(description="Open cases (ACTIVE or SUSPENDED): from their start to now.")
class OpenAge:
    open: int
    p50: float | None = strawberry.field(description=_SECONDS)
    p90: float | None = strawberry.field(description=_SECONDS)


@strawberry.type(description="Cases started and completed on the days of one bucket (UTC).")
class ThroughputBucket:
    start: datetime
    started: int
    completed: int


@strawberry.type(description="Cases that came back to a state they had left.")
class Rework:
    state: State
    scope: Action | None
    returned: int = strawberry.field(description="Visits after a case's first in this state (in one scope).")
    cases: int = strawberry.field(description="Cases with such a return.")


@strawberry.type(description="Due dates (the item's): overdue from the day after, UTC.")
class Overdue:
    open: int = strawberry.field(description="Open cases whose due date has passed.")
    late: int = strawberry.field(description="Completed cases that completed after their due date.")


@strawberry.type(description="The figures of the cases InsightsInput selects; empty with userErrors.")
class Insights:
    from_: datetime | None = strawberry.field(name="from", default=None)
    to: datetime | None = None
    states: list[InsightState] = strawberry.field(
        default_factory=list, description=f"Every state, in the spec's order; at most {figures.MAX_ROWS}."
    )
    actions: list[InsightAction] = strawberry.field(
        default_factory=list, description=f"Every action, in the spec's order; at most {figures.MAX_ROWS}."
    )
    cycle_time: CycleTime | None = None
    open_age: OpenAge | None = None
    rework: list[Rework] = strawberry.field(
        default_factory=list, description=f"States cases returned to; at most {figures.MAX_ROWS}."
    )
    overdue: Overdue | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)
    found: strawberry.Private[figures.Insights | None] = None

    @strawberry.field(description="Buckets from the one holding `from` to the one holding `to`, empty ones too.")
    def throughput(self, interval: InsightsInterval = InsightsInterval.WEEK) -> list[ThroughputBucket]:
        if self.found is None:
            return []
        return [
            ThroughputBucket(start=b.start, started=b.started, completed=b.completed)
            for b in self.found.throughput(Interval(interval.value))
        ]


def _answer(found: figures.Insights) -> Insights:
    cycle = found.cycle_time
    age = found.open_age
    return Insights(
        from_=found.since,
        to=found.until,
        states=[
            InsightState(
                state=s.state,  # type: ignore[arg-type]
                scope=s.scope,  # type: ignore[arg-type]
                entered=s.entered,
                in_state_now=s.in_state_now,
                oldest_since=s.oldest_since,
                time_in_state=_summary(s.time_in_state),
            )
            for s in found.states
        ],
        actions=[
            InsightAction(
                action=a.action,  # type: ignore[arg-type]
                executed=a.executed,
                by_role=[RoleCount(role=role, count=count) for role, count in a.by_role],
            )
            for a in found.actions
        ],
        cycle_time=CycleTime(
            completed=found.completed,
            bins=[CycleTimeBin(up_to=bound, count=count) for bound, count in found.cycle_bins],
            p50=cycle.p50 if cycle else None,
            p90=cycle.p90 if cycle else None,
            mean=cycle.mean if cycle else None,
        ),
        open_age=OpenAge(open=age.count if age else 0, p50=age.p50 if age else None, p90=age.p90 if age else None),
        rework=[
            Rework(state=r.state, scope=r.scope, returned=r.returned, cases=r.cases)  # type: ignore[arg-type]
            for r in found.rework
        ],
        overdue=Overdue(open=found.overdue_open, late=found.overdue_late),
        found=found,
    )


async def insights(info: AppInfo, input: InsightsInput) -> Insights:
    found, errors = await reading.insights(
        info.context,
        workflow=input.workflow,
        version=input.version,
        project_id=None if input.project_id is None else str(input.project_id),
        subproject_id=None if input.subproject_id is None else str(input.subproject_id),
        since=input.from_,
        until=input.to,
    )
    if found is None:
        return Insights(user_errors=errors)  # type: ignore[arg-type]
    return _answer(found)


insights_field = strawberry.field(
    resolver=insights,
    description="Where a workflow's cases wait, how long they take, how many start and complete: over the cases "
    "you may see (docs/api.md, Insights).",
)
