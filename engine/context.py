"""Everything a case operation needs about one case, loaded once per transaction."""

from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.errors import not_found
from engine.specs import WorkflowSpec
from engine.workflows import spec_by_id
from models import Case, CaseRoleParty, CaseState, Subproject, WorkflowItem


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

    def roles_of(self, party_ids: frozenset[str]) -> set[str]:
        return {role for role, parties in self.roles.items() if not parties.isdisjoint(party_ids)}


async def load_case(
    session: AsyncSession,
    *,
    case_id: str | None = None,
    workflow_item_id: str | None = None,
    lock: bool = False,
) -> CaseContext:
    """Load a case by its id or its workflow item's; ``lock`` takes the row lock that
    serializes every change to the case (FOR UPDATE on PostgreSQL)."""
    query = select(Case)
    if case_id is not None:
        query = query.where(Case.id == case_id)
    else:
        query = query.where(Case.object_id == workflow_item_id)
    if lock:
        query = query.with_for_update().execution_options(populate_existing=True)
    case = await session.scalar(query)
    if case is None:
        if case_id is not None:
            raise not_found("case", case_id, "caseId")
        raise not_found("workflow item", workflow_item_id or "", "workflowItemId")
    item, subproject = (
        await session.execute(
            select(WorkflowItem, Subproject)
            .join(Subproject, Subproject.id == WorkflowItem.subproject_id)
            .where(WorkflowItem.id == case.object_id)
        )
    ).one()  # foreign keys guarantee the row
    ctx = CaseContext(
        session=session,
        case=case,
        item=item,
        subproject=subproject,
        workflow_id=case.workflow_id,
        spec=await spec_by_id(session, case.workflow_id),
    )
    for scope, state in (
        await session.execute(select(CaseState.scope, CaseState.state).where(CaseState.case_id == case.id))
    ).all():
        ctx.states[scope] = state
    for role, party in (
        await session.execute(
            select(CaseRoleParty.role, CaseRoleParty.party_id).where(CaseRoleParty.case_id == case.id)
        )
    ).all():
        ctx.roles.setdefault(role, set()).add(party)
    return ctx
