"""Workflow versions: which version a new subproject or item takes, retiring a version, and
what a new version would strand (docs/workflows.md, "Versions and migration").

A subproject names the version its new items take (``subproject.workflow_id``): the latest
version not retired when the subproject is created, until ``migrateCases`` moves it. Defining a
version moves nothing: running cases stay on theirs, and subprojects keep naming theirs. A
retired version takes no new subproject or item; the cases already on it run on (and may be
migrated away).
"""

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.clock import SYSTEM_CLOCK
from engine.errors import DomainError, ErrorCode
from engine.people import permissions
from engine.people.actors import Actor
from engine.spec.diagnostics import Diagnostic, finding
from engine.spec.spec_graph import SpecGraph
from engine.spec.specs import WorkflowSpec
from models import Case, CaseState, EnabledAction, Workflow

RUNNING_STATUSES = ("ACTIVE", "SUSPENDED")  # the cases a version change concerns (and migrateCases moves)


async def find_version(session: AsyncSession, *, short_name: str, version: int, field: str = "version") -> Workflow:
    """The definition ``short_name`` at ``version``; NOT_FOUND naming ``field`` otherwise."""
    workflow = await session.scalar(
        select(Workflow).where(Workflow.short_name == short_name, Workflow.version == version)
    )
    if workflow is None:
        raise DomainError(ErrorCode.NOT_FOUND, f"The workflow {short_name!r} has no version {version}.", [field])
    return workflow


async def usable_version(session: AsyncSession, workflow_id: str, *, field: str, what: str) -> Workflow:
    """The version ``workflow_id`` for ``what`` (e.g. "a new workflow item"), refused when retired.

    The row is read FOR SHARE (PostgreSQL; SQLite's one writer serializes anyway): a retirement
    that has not committed yet makes this wait and then refuses, and one that starts after waits
    for this transaction, so nothing is created on a version after its retirement committed."""
    workflow = await session.scalar(
        select(Workflow)
        .where(Workflow.id == workflow_id)
        .with_for_update(read=True)
        .execution_options(populate_existing=True)
    )
    assert workflow is not None  # callers pass a foreign key
    require_not_retired(workflow, field=field, what=what)
    return workflow


def require_not_retired(workflow: Workflow, *, field: str, what: str) -> None:
    """Refuse ``what`` (e.g. "a new workflow item") on a retired version, saying what to do."""
    if workflow.retired_at is not None:
        raise DomainError(
            ErrorCode.WORKFLOW_RETIRED,
            f"Version {workflow.version} of the workflow {workflow.short_name!r} is retired: {what} cannot use it; "
            "migrate to another version (migrateCases).",
            [field],
        )


async def retire_workflow(
    session: AsyncSession, *, actor: Actor, workflow: str, version: int, now: datetime | None = None
) -> Workflow:
    """Retire a version (``global.defineWorkflow``): no new subproject or item may use it. Its
    running cases run on. Retiring a retired version changes nothing (its first retirement stays)."""
    await permissions.require_global(session, actor=actor, intent="global.defineWorkflow")
    row = await find_version(session, short_name=workflow, version=version)
    if row.retired_at is None:
        row.retired_at, row.retired_by = now or SYSTEM_CLOCK.now(), actor.user_id
        await session.flush()
    return row


@dataclass(frozen=True)
class Stranding:
    """Running cases of earlier versions that occupy a state the new version drops, or one from
    which it can reach no terminal state; ``states`` names those states (sorted)."""

    cases: int
    states: tuple[str, ...]


async def stranded_by(session: AsyncSession, spec: WorkflowSpec) -> Stranding:
    """What defining ``spec`` as the next version of its workflow would strand, were those cases
    migrated with the states kept: for the STRANDS_CASES warning. Two statements: the states
    running cases occupy (top level and running child scopes), then the cases in the bad ones."""
    occupied = (
        select(CaseState.state)
        .join(Case, Case.id == CaseState.case_id)
        .join(Workflow, Workflow.id == Case.workflow_id)
        .outerjoin(EnabledAction, EnabledAction.id == CaseState.scope)
        .where(
            Workflow.short_name == spec.short_name,
            Case.status.in_(RUNNING_STATUSES),
            or_(CaseState.scope == "", EnabledAction.status == "ENABLED"),
        )
    )
    states = set((await session.scalars(occupied.distinct())).all())
    bad = tuple(sorted(state for state in states if state not in finishing_states(spec)))
    if not bad:
        return Stranding(cases=0, states=())
    cases = occupied.add_columns(CaseState.case_id).where(CaseState.state.in_(bad)).subquery()
    count = await session.scalar(select(func.count(func.distinct(cases.c.case_id))))
    return Stranding(cases=count or 0, states=bad)


def strands_cases_warning(stranding: Stranding, version: int) -> Diagnostic | None:
    """The STRANDS_CASES finding (a warning: the version is defined all the same) for a
    stranding, None when nothing is stranded."""
    if not stranding.cases:
        return None
    named = ", ".join(repr(state) for state in stranding.states[:10])
    more = f" and {len(stranding.states) - 10} more" if len(stranding.states) > 10 else ""
    return finding(
        "STRANDS_CASES",
        ("states",),
        f"{stranding.cases} running case(s) of earlier versions are in {named}{more}, which version {version} "
        "lacks or cannot finish from.",
        "Those cases stay on their version; to move them, map each such state to one of this version's "
        "(migrateCases' stateMap).",
    )


async def strands_cases(session: AsyncSession, spec: WorkflowSpec, version: int) -> list[Diagnostic]:
    """What defining ``spec`` as ``version`` would strand, as findings (none for a first version,
    without a statement)."""
    if version == 1:
        return []
    warning = strands_cases_warning(await stranded_by(session, spec), version)
    return [warning] if warning is not None else []


def finishing_states(spec: WorkflowSpec) -> frozenset[str]:
    """Every state (top level and child scopes) from which its scope can still finish, as the
    definition checks judge it (engine.spec.spec_graph: NO_PATH_TO_TERMINAL): a terminal state of it can
    be reached, following every action that can fire there, AUTO and TIME ones and parents whose
    children can complete included. A child workflow that a ``complete_when`` counts finishes as
    its parent decides: each of its states is taken as finishing. Computed once per call."""
    graph = SpecGraph.of(spec)
    finishing: set[str] = set()
    for scope, states in graph.states.items():
        if scope is not None and spec.actions[scope].complete_when:
            finishing.update(states)
        else:
            finishing |= graph.leads_to_terminal(scope)
    return frozenset(finishing)
