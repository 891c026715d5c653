"""Mutations that move cases: executeAction, reassignRole, defineWorkflow."""

from enum import Enum
from typing import Any

import strawberry
from strawberry.file_uploads import Upload

import engine
from engine import cases
from engine.documents.records import attach_with_action
from engine.workflows import cached_short_name, spec_of
from models import Workflow as WorkflowRow
from resolvers import documents
from resolvers import workflows as workflow_checks
from resolvers.mutations import run
from schema.activity import Activity
from schema.base import JSON, AppInfo, UserError
from schema.case import Case, CaseStatus
from schema.document import Document
from schema.workflow import Action, Diagnostic, State, Workflow
from server import metrics


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
    files, refused = await documents.stored_for_action(info.context, input.documents)
    if refused:
        metrics.action_executed(None, str(refused[0].code))
        return ExecuteActionPayload(user_errors=refused)  # type: ignore[arg-type]
    attached: list[Any] = []

    async def operation(session: Any, actor: Any) -> Any:
        result = await engine.execute(
            session,
            actor=actor,
            action=input.action,
            **_target(input.case_id, input.workflow_item_id),
            enabled_action_id=input.enabled_action_id,
            comment=input.comment,
            data=input.data,
            idempotency_key=input.idempotency_key,
            expected_version=input.expected_version,
            output=input.output,
            resolution=input.resolution,
        )
        if files and not result.replayed:  # a replay attached its files the first time
            attached[:] = await attach_with_action(
                session, actor=actor, case=result.case, action=input.action, files=files
            )
        if not input.dry_run:
            return result, None, None
        case, state, enabled = await cases.preview(session, case_id=result.case.id)
        workflow = await session.get(WorkflowRow, case.workflow_id)
        spec = spec_of(workflow)
        preview = CasePreview(
            state=spec.states[state],
            status=CaseStatus(case.status),
            version=case.version,  # type: ignore[arg-type]
            enabled_actions=[spec.actions[ea.action] for ea in enabled],
        )  # type: ignore[misc]
        # A rollback expires ORM rows: keep the id, the preview is plain data.
        return None, preview, case.id

    outcome, errors = await run(info.context, operation, rollback=input.dry_run)
    if outcome is None:
        metrics.action_executed(None, str(errors[0].code) if errors else "error")
        return ExecuteActionPayload(user_errors=errors)
    result, preview, dry_case_id = outcome
    if preview is not None:  # nothing happened: show the case as it still is
        case = await info.context.loaders.case_by_id.load(dry_case_id)
        metrics.action_executed(cached_short_name(case.workflow_id), "dry_run")
        return ExecuteActionPayload(case=case, preview=preview)
    metrics.action_executed(cached_short_name(result.case.workflow_id), "replayed" if result.replayed else "ok")
    return ExecuteActionPayload(
        case=result.case,
        activity=result.activity,
        replayed=result.replayed,
        documents=attached,  # type: ignore[arg-type]
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
