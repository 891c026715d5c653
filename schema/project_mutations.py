"""Mutations on projects, subprojects, permissions and item ordering."""

from typing import Any

import strawberry

import engine
from engine.people import permissions
from resolvers.mutations import run
from schema.base import JSON, AppInfo, UserError
from schema.project import PermissionGrant, Project, Subproject, WorkflowMode, grant_list


def given(value: Any) -> Any:
    """Strawberry's "not sent" becomes the engine's; an explicit null stays None."""
    return engine.UNSET if value is strawberry.UNSET else value


@strawberry.input
class ProjectedBudgetInput:
    organization: str
    currency: str
    value: str = strawberry.field(description="A decimal written as a string.")


def budgets(values: list[ProjectedBudgetInput] | None) -> list[engine.BudgetInput] | None:
    if values is None or values is strawberry.UNSET:
        return None
    return [engine.BudgetInput(b.organization, b.currency, b.value) for b in values]


@strawberry.input
class CreateProjectInput:
    display_name: str
    description: str | None = None
    assignee_id: strawberry.ID | None = None
    tags: list[str] | None = None
    projected_budgets: list[ProjectedBudgetInput] | None = None
    additional_data: JSON | None = None


@strawberry.input
class UpdateResourceInput:
    id: strawberry.ID
    display_name: str | None = strawberry.UNSET
    description: str | None = strawberry.UNSET
    tags: list[str] | None = strawberry.UNSET
    additional_data: JSON | None = strawberry.UNSET
    projected_budgets: list[ProjectedBudgetInput] | None = strawberry.UNSET


@strawberry.input
class AssignInput:
    id: strawberry.ID
    assignee_id: strawberry.ID


@strawberry.input
class SetSubprojectValidatorInput:
    id: strawberry.ID
    validator_id: strawberry.ID | None = strawberry.field(
        default=None, description="A user or group; null: no validator."
    )


@strawberry.input
class CloseInput:
    id: strawberry.ID


@strawberry.type
class ProjectPayload:
    project: Project | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


@strawberry.input
class CreateSubprojectInput:
    project_id: strawberry.ID
    display_name: str
    currency: str
    description: str | None = None
    assignee_id: strawberry.ID | None = None
    validator_id: strawberry.ID | None = None
    workflow_mode: WorkflowMode = WorkflowMode.UNORDERED
    workflow: str | None = strawberry.field(default=None, description="A workflow short name; default `simple`.")
    workflow_version: int | None = strawberry.field(
        default=None,
        description="The version of `workflow` its new items take; default: the latest version not retired.",
    )
    tags: list[str] | None = None
    projected_budgets: list[ProjectedBudgetInput] | None = None
    additional_data: JSON | None = None


@strawberry.type
class SubprojectPayload:
    subproject: Subproject | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


@strawberry.input
class PermissionInput:
    resource_id: strawberry.ID = strawberry.field(description="A project, subproject or workflow item id, or `global`.")
    intent: str
    party_id: strawberry.ID
    inherit: bool = strawberry.field(
        default=False,
        description="On a project or subproject: the grant also holds, with the same suffix "
        "(project.view: subproject.view and workflowItem.view), on everything below it, now and "
        "later. Revoking such a grant needs inherit: true too; grants made below stay.",
    )


@strawberry.type
class PermissionPayload:
    permissions: list[PermissionGrant] | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


@strawberry.input
class ReorderWorkflowItemsInput:
    subproject_id: strawberry.ID
    ordering: list[strawberry.ID]


def _updates(input: UpdateResourceInput) -> dict[str, Any]:
    return {
        "display_name": given(input.display_name),
        "description": given(input.description),
        "tags": given(input.tags),
        "additional_data": given(input.additional_data),
        "projected_budgets": budgets(input.projected_budgets),
    }


async def create_project(info: AppInfo, input: CreateProjectInput) -> ProjectPayload:
    project, errors = await run(
        info.context,
        lambda s, a: engine.create_project(
            s,
            actor=a,
            display_name=input.display_name,
            description=input.description,
            assignee_id=input.assignee_id,
            tags=input.tags,
            projected_budgets=budgets(input.projected_budgets),
            additional_data=input.additional_data,
        ),
    )
    return ProjectPayload(project=project, user_errors=errors)


async def update_project(info: AppInfo, input: UpdateResourceInput) -> ProjectPayload:
    project, errors = await run(
        info.context, lambda s, a: engine.update_project(s, actor=a, id=input.id, **_updates(input))
    )
    return ProjectPayload(project=project, user_errors=errors)


async def assign_project(info: AppInfo, input: AssignInput) -> ProjectPayload:
    project, errors = await run(
        info.context, lambda s, a: engine.assign_project(s, actor=a, id=input.id, assignee_id=input.assignee_id)
    )
    return ProjectPayload(project=project, user_errors=errors)


async def close_project(info: AppInfo, input: CloseInput) -> ProjectPayload:
    project, errors = await run(info.context, lambda s, a: engine.close_project(s, actor=a, id=input.id))
    return ProjectPayload(project=project, user_errors=errors)


async def create_subproject(info: AppInfo, input: CreateSubprojectInput) -> SubprojectPayload:
    subproject, errors = await run(
        info.context,
        lambda s, a: engine.create_subproject(
            s,
            actor=a,
            project_id=input.project_id,
            display_name=input.display_name,
            currency=input.currency,
            description=input.description,
            assignee_id=input.assignee_id,
            validator_id=input.validator_id,
            workflow_mode=input.workflow_mode.value,
            workflow=input.workflow,
            workflow_version=input.workflow_version,
            tags=input.tags,
            projected_budgets=budgets(input.projected_budgets),
            additional_data=input.additional_data,
        ),
    )
    return SubprojectPayload(subproject=subproject, user_errors=errors)


async def update_subproject(info: AppInfo, input: UpdateResourceInput) -> SubprojectPayload:
    subproject, errors = await run(
        info.context, lambda s, a: engine.update_subproject(s, actor=a, id=input.id, **_updates(input))
    )
    return SubprojectPayload(subproject=subproject, user_errors=errors)


async def assign_subproject(info: AppInfo, input: AssignInput) -> SubprojectPayload:
    subproject, errors = await run(
        info.context, lambda s, a: engine.assign_subproject(s, actor=a, id=input.id, assignee_id=input.assignee_id)
    )
    return SubprojectPayload(subproject=subproject, user_errors=errors)


async def set_subproject_validator(info: AppInfo, input: SetSubprojectValidatorInput) -> SubprojectPayload:
    subproject, errors = await run(
        info.context,
        lambda s, a: engine.set_subproject_validator(s, actor=a, id=input.id, validator_id=input.validator_id),
    )
    return SubprojectPayload(subproject=subproject, user_errors=errors)


async def close_subproject(info: AppInfo, input: CloseInput) -> SubprojectPayload:
    subproject, errors = await run(info.context, lambda s, a: engine.close_subproject(s, actor=a, id=input.id))
    return SubprojectPayload(subproject=subproject, user_errors=errors)


async def _change_permission(info: AppInfo, input: PermissionInput, verb: Any) -> PermissionPayload:
    async def operation(session: Any, actor: Any) -> Any:
        await verb(
            session,
            actor=actor,
            resource_id=input.resource_id,
            intent=input.intent,
            party_id=input.party_id,
            inherit=input.inherit,
        )
        return await permissions.holdings_of(session, input.resource_id)

    grants, errors = await run(info.context, operation)
    return PermissionPayload(permissions=grant_list(grants), user_errors=errors)


async def grant_permission(info: AppInfo, input: PermissionInput) -> PermissionPayload:
    return await _change_permission(info, input, permissions.grant)


async def revoke_permission(info: AppInfo, input: PermissionInput) -> PermissionPayload:
    return await _change_permission(info, input, permissions.revoke)


async def reorder_workflow_items(info: AppInfo, input: ReorderWorkflowItemsInput) -> SubprojectPayload:
    subproject, errors = await run(
        info.context,
        lambda s, a: engine.reorder(s, actor=a, subproject_id=input.subproject_id, ordering=list(input.ordering)),
    )
    return SubprojectPayload(subproject=subproject, user_errors=errors)
