"""Mutations on workflow items."""

from datetime import date

import strawberry

import engine
from resolvers.mutations import run
from schema.base import JSON, AppInfo, UserError
from schema.item import WorkflowItem
from schema.project_mutations import AssignInput, given


@strawberry.input(description="Who plays a role from the start (instead of the role's default assignees).")
class RoleAssignmentInput:
    role: str
    party_ids: list[strawberry.ID]


@strawberry.input
class CreateWorkflowItemInput:
    subproject_id: strawberry.ID
    display_name: str
    description: str | None = None
    assignee_id: strawberry.ID | None = None
    due_date: date | None = None
    amount_type: str = strawberry.field(default="N/A", description="N/A, ALLOCATED or DISBURSED.")
    amount: str | None = None
    currency: str | None = None
    exchange_rate: str | None = None
    billing_date: date | None = None
    tags: list[str] | None = None
    additional_data: JSON | None = None
    assignments: list[RoleAssignmentInput] | None = None


@strawberry.input
class UpdateWorkflowItemInput:
    id: strawberry.ID
    display_name: str | None = strawberry.UNSET
    description: str | None = strawberry.UNSET
    due_date: date | None = strawberry.UNSET
    amount_type: str | None = strawberry.UNSET
    amount: str | None = strawberry.UNSET
    currency: str | None = strawberry.UNSET
    exchange_rate: str | None = strawberry.UNSET
    billing_date: date | None = strawberry.UNSET
    tags: list[str] | None = strawberry.UNSET
    additional_data: JSON | None = strawberry.UNSET


@strawberry.type
class WorkflowItemPayload:
    workflow_item: WorkflowItem | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


async def create_workflow_item(info: AppInfo, input: CreateWorkflowItemInput) -> WorkflowItemPayload:
    assignments = {a.role: list(a.party_ids) for a in input.assignments or []}
    result, errors = await run(
        info.context,
        lambda s, a: engine.create_workflow_item(
            s,
            actor=a,
            subproject_id=input.subproject_id,
            display_name=input.display_name,
            description=input.description,
            assignee_id=input.assignee_id,
            due_date=input.due_date,
            amount_type=input.amount_type,
            amount=input.amount,
            currency=input.currency,
            exchange_rate=input.exchange_rate,
            billing_date=input.billing_date,
            tags=input.tags,
            additional_data=input.additional_data,
            assignments=assignments,
        ),
    )
    return WorkflowItemPayload(workflow_item=result[0] if result else None, user_errors=errors)


async def update_workflow_item(info: AppInfo, input: UpdateWorkflowItemInput) -> WorkflowItemPayload:
    fields = {
        name: given(getattr(input, name))
        for name in (
            "display_name",
            "description",
            "due_date",
            "amount_type",
            "amount",
            "currency",
            "exchange_rate",
            "billing_date",
            "tags",
            "additional_data",
        )
    }
    item, errors = await run(info.context, lambda s, a: engine.update_workflow_item(s, actor=a, id=input.id, **fields))
    return WorkflowItemPayload(workflow_item=item, user_errors=errors)


async def assign_workflow_item(info: AppInfo, input: AssignInput) -> WorkflowItemPayload:
    item, errors = await run(
        info.context, lambda s, a: engine.assign_workflow_item(s, actor=a, id=input.id, assignee_id=input.assignee_id)
    )
    return WorkflowItemPayload(workflow_item=item, user_errors=errors)
