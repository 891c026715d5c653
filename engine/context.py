"""Everything a case operation needs about one case, loaded once per transaction."""

from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.errors import not_found
from engine.specs import WorkflowSpec
from engine.workflows import spec_of
from models import Case, CaseRoleParty, CaseState, Subproject, Workflow, WorkflowItem


@dataclass
class CaseContext:
    session: AsyncSession
    case: Case
    item: WorkflowItem
    subproject: Subproject
    workflow: Workflow
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
    item = await session.get(WorkflowItem, case.object_id)
    workflow = await session.get(Workflow, case.workflow_id)
    assert item is not None and workflow is not None  # foreign keys guarantee both
    subproject = await session.get(Subproject, item.subproject_id)
    assert subproject is not None
    ctx = CaseContext(
        session=session, case=case, item=item, subproject=subproject, workflow=workflow, spec=spec_of(workflow)
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
