"""Mutations that move cases: executeAction, reassignRole, defineWorkflow."""

from enum import Enum
from typing import Any

import strawberry
from strawberry.file_uploads import Upload

import engine
from models import UnitOfWork
from resolvers import documents
from resolvers import workflows as workflow_checks
from resolvers.mutations import run
from schema.activity import Activity
from schema.base import JSON, AppInfo, UserError
from schema.case import Case, CaseStatus
from schema.document import Document
from schema.workflow import Action, Diagnostic, State, Workflow


@strawberry.input(description="Name the case by caseId or by its workflowItemId.")
class ExecuteActionInput:
    action: str
    workflow_item_id: strawberry.ID | None = None
    case_id: strawberry.ID | None = None
    enabled_action_id: strawberry.ID | None = strawberry.field(
        default=None,
        description="Which instance, when the action is enabled more than once (child scopes, DYNAMIC instances). "
        "Without it your own instance is taken when you are assigned to exactly one; otherwise AMBIGUOUS_ACTION "
        "names the instances you may execute.",
    )
    comment: str | None = None
    data: JSON | None = strawberry.field(default=None, description="Key/value data stored in the log entry.")
    fields: JSON | None = strawberry.field(
        default=None,
        description="Case fields to set, by name: only those the action edits (Action fields); null clears one. Each "
        "bad value is a userErrors entry INVALID_FIELD at [fields, name], and nothing changes.",
    )
    idempotency_key: str | None = strawberry.field(
        default=None, description="Replaying a request with the same key returns the first result."
    )
    expected_version: int | None = strawberry.field(
        default=None, description="Refuse with VERSION_CONFLICT unless the case is at this version."
    )
    dry_run: bool = strawberry.field(default=False, description="Report what would happen; change nothing.")
    output: str | None = strawberry.field(
        default=None,
        description="Which of the action's outputs to take (Action.outputs): required when it has outputs, "
        "unless its on_fire callback picks one; it decides the new state.",
    )
    resolution: str | None = strawberry.field(
        default=None, description="A code of Action.resolutions: required when the action has resolutions."
    )
    documents: list[Upload] | None = strawberry.field(
        default=None,
        description="Files to attach with the action, atomically (a multipart request): allowed when the action "
        "says attachDocuments, or when you may update the item; at most 10.",
    )


@strawberry.type(description="What a case would look like after a dry run of an action.")
class CasePreview:
    state: State
    status: CaseStatus
    version: int
    enabled_actions: list[Action]
    route: int | None = strawberry.field(
        default=None, description="Which of the action's routes would be taken (1 for the first); null without routes."
    )


@strawberry.type
class ExecuteActionPayload:
    case: Case | None = None
    activity: Activity | None = None
    preview: CasePreview | None = None
    replayed: bool = strawberry.field(default=False, description="True when an idempotency key replayed a result.")
    documents: list[Document] = strawberry.field(
        default_factory=list, description="The documents attached with the action (its input's documents)."
    )
    user_errors: list[UserError] = strawberry.field(default_factory=list)


@strawberry.enum
class ReassignMode(Enum):
    REPLACE = "REPLACE"
    ADD = "ADD"
    REMOVE = "REMOVE"


@strawberry.input
class ReassignRoleInput:
    role: str
    party_ids: list[strawberry.ID]
    mode: ReassignMode = ReassignMode.REPLACE
    workflow_item_id: strawberry.ID | None = None
    case_id: strawberry.ID | None = None


@strawberry.type
class CasePayload:
    case: Case | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


@strawberry.input
class DefineWorkflowInput:
    spec: JSON = strawberry.field(
        description="A workflow spec: roles, states and actions, each keyed by short name (docs/workflows.md)."
    )


@strawberry.type
class WorkflowPayload:
    workflow: Workflow | None = None
    diagnostics: list[Diagnostic] = strawberry.field(
        default_factory=list,
        description="What the checks found: with a workflow, its warnings; refused, every finding (the errors "
        "are also in userErrors, as INVALID_SPEC).",
    )
    user_errors: list[UserError] = strawberry.field(default_factory=list)


def _target(case_id: str | None, item_id: str | None) -> dict[str, Any]:
    if (case_id is None) == (item_id is None):
        raise engine.DomainError(
            engine.ErrorCode.INVALID_INPUT, "Give exactly one of caseId and workflowItemId.", ["caseId"]
        )
    return {"case_id": case_id} if case_id else {"workflow_item_id": item_id}


async def execute_action(info: AppInfo, input: ExecuteActionInput) -> ExecuteActionPayload:
    """Hands the input to ``engine.execute_action`` and shapes the payload (its outcome is
    counted where the transaction's unit of work is published)."""
    ctx = info.context
    files, refused = await documents.stored_for_action(ctx, input.documents)
    if refused:  # before any transaction: its outcome published all the same
        await ctx.db.publish(UnitOfWork(actions=[(None, str(refused[0].code))]))
        return ExecuteActionPayload(user_errors=refused)  # type: ignore[arg-type]
    outcome, errors = await run(
        ctx,
        lambda session, actor: engine.execute_action(
            session,
            actor=actor,
            action=input.action,
            case_id=input.case_id,
            workflow_item_id=input.workflow_item_id,
            files=files,
            dry_run=input.dry_run,
            enabled_action_id=input.enabled_action_id,
            comment=input.comment,
            data=input.data,
            idempotency_key=input.idempotency_key,
            expected_version=input.expected_version,
            output=input.output,
            resolution=input.resolution,
            fields=input.fields,
        ),
        rollback=input.dry_run,
    )
    if outcome is None:
        return ExecuteActionPayload(user_errors=errors)
    if outcome.preview is not None:  # nothing happened: show the case as it still is
        preview = outcome.preview
        return ExecuteActionPayload(
            case=await ctx.loaders.case_by_id.load(outcome.case_id),
            preview=CasePreview(
                state=preview.state,  # type: ignore[arg-type]
                status=CaseStatus(preview.status),
                version=preview.version,
                enabled_actions=preview.enabled_actions,  # type: ignore[arg-type]
                route=preview.route,
            ),
        )
    return ExecuteActionPayload(
        case=outcome.case,  # type: ignore[arg-type]
        activity=outcome.activity,
        replayed=outcome.replayed,
        documents=outcome.documents,  # type: ignore[arg-type]
    )


async def reassign_role(info: AppInfo, input: ReassignRoleInput) -> CasePayload:
    case, errors = await run(
        info.context,
        lambda s, a: engine.reassign(
            s,
            actor=a,
            role=input.role,
            party_ids=list(input.party_ids),
            mode=input.mode.value,
            **_target(input.case_id, input.workflow_item_id),
        ),
    )
    return CasePayload(case=case, user_errors=errors)


async def define_workflow(info: AppInfo, input: DefineWorkflowInput) -> WorkflowPayload:
    workflow, found, errors = await workflow_checks.define_workflow(info.context, input.spec)
    return WorkflowPayload(workflow=workflow, diagnostics=found, user_errors=errors)  # type: ignore[arg-type]
