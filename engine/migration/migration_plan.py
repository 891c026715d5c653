"""What a migration would do to each case (engine/migration/migration.py): the batch's rows read in four
statements, and each case judged against the version it would move to, without a write. A dry
run is this alone; a real run applies what it accepted (engine/migration/migration_batch.py for the cases
it can write set-based, engine/migration/migration_moves.py for the others).

The plan reads plain rows (``load``), not ORM instances: a batch's 500 cases, their states and
instances cost a third of a real run's CPU as ORM instances, and a set-based move never needs them.
Only the cases moved one by one through the engine's transitions are read again as instances
(``load_instances``)."""

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.cases.scopes import SCOPE_TRIGGER
from engine.errors import DomainError, ErrorCode
from engine.spec import versions
from engine.spec.specs import WorkflowSpec
from engine.spec.workflows import spec_by_id
from models import Case, CaseRoleParty, CaseState, EnabledAction, Subproject, Workflow, WorkflowItem


@dataclass
class CaseMigration:
    """One case's outcome: its top-level state before and where it lands (a dry run: would
    land), or the reasons it is refused (then it stays as it was)."""

    case_id: str
    case: Any = None  # a snapshot of the case's row; None when it does not exist or the actor may not see it
    from_state: str | None = None
    to_state: str | None = None
    errors: list[DomainError] = field(default_factory=list)
    # The plan: each running FSM scope's (from, to); the parent action of each.
    moves: dict[str, tuple[str, str]] = field(default_factory=dict)


@dataclass
class Loaded:
    """A batch's cases with their rows, read in four statements: plain rows (``load``: the case,
    its item's id, project and subproject ids, no subproject) or ORM instances
    (``load_instances``)."""

    rows: dict[str, tuple[Any, Any, Any]]  # case -> (case, item, subproject)
    states: dict[str, dict[str, str]] = field(default_factory=dict)  # case -> scope -> state
    state_rows: dict[tuple[str, str], CaseState] = field(default_factory=dict)  # (case, scope) -> its row
    roles: dict[str, dict[str, set[str]]] = field(default_factory=dict)  # case -> role -> parties
    enabled: dict[str, list[Any]] = field(default_factory=dict)  # case -> ENABLED rows

    def merge(self, fresh: "Loaded") -> None:
        """Take the rows read again for some of the cases (after a savepoint rolled back)."""
        self.rows.update(fresh.rows)
        for case_id in fresh.rows:
            self.states[case_id] = fresh.states.get(case_id, {})
            self.state_rows.update({key: row for key, row in fresh.state_rows.items() if key[0] == case_id})
            self.roles[case_id] = fresh.roles.get(case_id, {})
            self.enabled[case_id] = fresh.enabled.get(case_id, [])


def snapshot(row: Any) -> Any:
    """A row's columns as they stand, apart from the session: what the caller reads after the
    transaction, whether it committed or rolled back (a rollback expires the session's rows).
    Plain attributes, as the read path's rows are (an ORM instance cost 0.6 ms to build)."""
    table = getattr(type(row), "__table__", None)
    if table is None:
        return SimpleNamespace(**vars(row))
    return SimpleNamespace(**{column.name: getattr(row, column.name) for column in table.c})


_CASE = Case.__table__
_INSTANCE = EnabledAction.__table__


async def load(session: AsyncSession, ids: list[str], *, lock: bool) -> Loaded:
    """The cases as plain rows (locked for a real run, in id order: two migrations never wait on
    each other in a cycle) with their items' ids, states, role players and ENABLED instances."""
    query = (
        select(*_CASE.c, WorkflowItem.project_id.label("item_project_id"), WorkflowItem.subproject_id)
        .join(WorkflowItem, WorkflowItem.id == _CASE.c.object_id)
        .where(_CASE.c.id.in_(ids))
        .order_by(_CASE.c.id)
    )
    if lock:
        query = query.with_for_update(of=_CASE)
    loaded = Loaded(rows={})
    for row in await session.execute(query):
        values = dict(row._mapping)
        item = SimpleNamespace(
            id=values["object_id"], project_id=values.pop("item_project_id"), subproject_id=values.pop("subproject_id")
        )
        loaded.rows[values["id"]] = (SimpleNamespace(**values), item, None)
    if not loaded.rows:
        return loaded
    found = list(loaded.rows)
    states = select(CaseState.case_id, CaseState.scope, CaseState.state).where(CaseState.case_id.in_(found))
    for case_id, scope, state in await session.execute(states):
        loaded.states.setdefault(case_id, {})[scope] = state
    await _roles(session, loaded, found)
    enabled = (
        select(*_INSTANCE.c)
        .where(_INSTANCE.c.case_id.in_(found), _INSTANCE.c.status == "ENABLED")
        .order_by(_INSTANCE.c.enabled_at, _INSTANCE.c.id)
    )
    for row in await session.execute(enabled):
        loaded.enabled.setdefault(row.case_id, []).append(row)
    return loaded


async def _roles(session: AsyncSession, loaded: Loaded, found: list[str]) -> None:
    roles = select(CaseRoleParty.case_id, CaseRoleParty.role, CaseRoleParty.party_id)
    for case_id, role, party in await session.execute(roles.where(CaseRoleParty.case_id.in_(found))):
        loaded.roles.setdefault(case_id, {}).setdefault(role, set()).add(party)


async def load_instances(session: AsyncSession, ids: list[str]) -> Loaded:
    """The cases (already locked by ``load``) as ORM instances, with their items, subprojects,
    states, role players and ENABLED instances: what the engine's transitions move."""
    query = (
        select(Case, WorkflowItem, Subproject)
        .join(WorkflowItem, WorkflowItem.id == Case.object_id)
        .join(Subproject, Subproject.id == WorkflowItem.subproject_id)
        .where(Case.id.in_(ids))
        .order_by(Case.id)
        .execution_options(populate_existing=True)
    )
    loaded = Loaded(rows={row[0].id: (row[0], row[1], row[2]) for row in (await session.execute(query)).all()})
    if not loaded.rows:
        return loaded
    found = list(loaded.rows)
    for row in await session.scalars(select(CaseState).where(CaseState.case_id.in_(found))):
        loaded.states.setdefault(row.case_id, {})[row.scope] = row.state
        loaded.state_rows[row.case_id, row.scope] = row
    await _roles(session, loaded, found)
    enabled = (
        select(EnabledAction)
        .where(EnabledAction.case_id.in_(found), EnabledAction.status == "ENABLED")
        .order_by(EnabledAction.enabled_at, EnabledAction.id)
        .execution_options(populate_existing=True)
    )
    for row in await session.scalars(enabled):
        loaded.enabled.setdefault(row.case_id, []).append(row)
    return loaded


@dataclass
class Planner:
    """Judges each case against the version it would move to (no writes)."""

    target: Workflow
    spec: WorkflowSpec
    mapping: dict[str, str]
    numbers: dict[str, int]  # workflow id -> version, of every version of the workflow
    finishing: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        self.finishing = versions.finishing_states(self.spec)

    async def case(self, session: AsyncSession, result: CaseMigration, loaded: Loaded) -> None:
        """Fill ``result``: where each running scope lands, or every reason the case is refused."""
        case = loaded.rows[result.case_id][0]
        states = loaded.states.get(case.id, {})
        result.from_state = states.get("")
        version = self.target.version
        if case.workflow_id == self.target.id:
            result.errors.append(_error(ErrorCode.ALREADY_ON_VERSION, f"The case is on version {version} already."))
            return
        if case.workflow_id not in self.numbers:
            old = await spec_by_id(session, case.workflow_id)
            result.errors.append(
                _error(
                    ErrorCode.INVALID_INPUT,
                    f"The case runs the workflow {old.short_name!r}, not {self.spec.short_name!r}.",
                )
            )
            return
        if case.status not in versions.RUNNING_STATUSES:
            message = f"The case is {case.status.lower()}; only running (active or suspended) cases move."
            result.errors.append(_error(ErrorCode.CASE_NOT_ACTIVE, message))
            return
        enabled = {ea.id: ea for ea in loaded.enabled.get(case.id, ())}
        for scope, state in sorted(states.items()):
            if scope == "" or scope in enabled:  # the top level, and child scopes still running
                self._scope(result, scope, state, None if scope == "" else enabled[scope].action)
        for role in sorted(loaded.roles.get(case.id, {})):
            if role not in self.spec.roles:
                message = f"The case has players of the role {role!r}, which version {version} lacks."
                result.errors.append(_error(ErrorCode.MISSING_IN_VERSION, message))
        parents = {ea.parent_id for ea in enabled.values() if ea.parent_id}
        for ea in enabled.values():
            action = self.spec.actions.get(ea.action)
            if ea.id in parents and (action is None or not action.children):
                message = f"{ea.action!r} has children running in the case; version {version} has no such parent."
                result.errors.append(_error(ErrorCode.MISSING_IN_VERSION, message))
            elif ea.parent_id and ea.parent_id not in states and ea.trigger != SCOPE_TRIGGER and action is None:
                message = f"{ea.action!r} runs in the case; version {version} has no such action."
                result.errors.append(_error(ErrorCode.MISSING_IN_VERSION, message))
        if result.errors:
            result.moves.clear()
        else:
            result.to_state = result.moves[""][1]

    def _scope(self, result: CaseMigration, scope: str, state: str, parent: str | None) -> None:
        version = self.target.version
        where = "" if parent is None else f" (in {parent!r})"
        if parent is not None:
            action = self.spec.actions.get(parent)
            if action is None or not (action.trigger == "workflow" or action.has_scope):
                message = f"The case runs a child workflow of {parent!r}; version {version} has no such child workflow."
                result.errors.append(_error(ErrorCode.MISSING_IN_VERSION, message))
                return
        to = self.mapping.get(state, state)
        landing = self.spec.states.get(to)
        if landing is None or landing.scope != parent:
            message = (
                f"The stateMap sends {state!r}{where} to {to!r}, not a state of that scope in version {version}."
                if state in self.mapping
                else f"The case is in {state!r}{where}, which version {version} lacks; map it in stateMap."
            )
            result.errors.append(_error(ErrorCode.STATE_NOT_MAPPED, message))
        elif scope == "" and landing.terminal:
            message = f"The case would land in {to!r}, a terminal state; a running case lands in a state it can leave."
            result.errors.append(_error(ErrorCode.STATE_STRANDED, message))
        elif to not in self.finishing:
            message = f"From {to!r}{where} no terminal state can be reached in version {version}."
            result.errors.append(_error(ErrorCode.STATE_STRANDED, message))
        else:
            result.moves[scope] = (state, to)


def _error(code: ErrorCode, message: str) -> DomainError:
    return DomainError(code, message, ["caseIds"])
