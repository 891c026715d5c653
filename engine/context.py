"""Everything a case operation needs about one case, loaded once per transaction."""

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, false, select, true, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from engine.errors import not_found
from engine.specs import WorkflowSpec
from engine.workflows import spec_by_id
from models import Case, CaseRoleParty, CaseState, EnabledAction, Subproject, WorkflowItem


@dataclass
class CaseContext:
    session: AsyncSession
    case: Case
    item: WorkflowItem
    subproject: Subproject
    workflow_id: str
    spec: WorkflowSpec
    states: dict[str, str] = field(default_factory=dict)  # scope -> state short name
    roles: dict[str, set[str]] = field(default_factory=dict)  # role -> party ids
    # The case's ENABLED instances, when an operation loaded them (oldest first); the same ORM
    # rows the session holds, so status changes show in place, and recompute adds what it enables.
    enabled: list[EnabledAction] | None = None

    def roles_of(self, party_ids: frozenset[str]) -> set[str]:
        return {role for role, parties in self.roles.items() if not parties.isdisjoint(party_ids)}


def _case_query(by: str, *, lock: bool) -> Any:
    """The case with its item and subproject in one round trip; ``lock`` locks the case row
    alone (FOR UPDATE OF workflow_case; SQLite serializes writers anyway)."""
    column = Case.id if by == "case" else Case.object_id
    query = (
        select(Case, WorkflowItem, Subproject)
        .join(WorkflowItem, WorkflowItem.id == Case.object_id)
        .join(Subproject, Subproject.id == WorkflowItem.subproject_id)
        .where(column == bindparam("key"))
    )
    if lock:
        query = query.with_for_update(of=Case).execution_options(populate_existing=True)
    return query


# Built once: statement construction cost as much as a round trip on the write path.
_CASE_QUERIES = {(by, lock): _case_query(by, lock=lock) for by in ("case", "item") for lock in (False, True)}
# The case's states and role players in one round trip: (True, scope, state) and
# (False, role, party) rows.
_STATES_AND_ROLES = union_all(
    select(true(), CaseState.scope, CaseState.state).where(CaseState.case_id == bindparam("case_id")),
    select(false(), CaseRoleParty.role, CaseRoleParty.party_id).where(CaseRoleParty.case_id == bindparam("case_id")),
)


async def load_case(
    session: AsyncSession,
    *,
    case_id: str | None = None,
    workflow_item_id: str | None = None,
    lock: bool = False,
) -> CaseContext:
    """Load a case by its id or its workflow item's; ``lock`` takes the row lock that
    serializes every change to the case (FOR UPDATE on PostgreSQL)."""
    by, key = ("case", case_id) if case_id is not None else ("item", workflow_item_id)
    found = (await session.execute(_CASE_QUERIES[(by, lock)], {"key": key})).first()
    if found is None:
        if case_id is not None:
            raise not_found("case", case_id, "caseId")
        raise not_found("workflow item", workflow_item_id or "", "workflowItemId")
    case, item, subproject = found
    ctx = CaseContext(
        session=session,
        case=case,
        item=item,
        subproject=subproject,
        workflow_id=case.workflow_id,
        spec=await spec_by_id(session, case.workflow_id),
    )
    for is_state, key, value in (await session.execute(_STATES_AND_ROLES, {"case_id": case.id})).all():
        if is_state:
            ctx.states[key] = value
        else:
            ctx.roles.setdefault(key, set()).add(value)
    return ctx
