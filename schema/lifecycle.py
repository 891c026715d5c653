"""Mutations of a case's own lifecycle: suspendCase, resumeCase, cancelCase (engine/cases/lifecycle.py)."""

from datetime import datetime
from typing import Any

import strawberry

from engine.cases import lifecycle
from resolvers.mutations import run
from schema.activity import Activity
from schema.base import AppInfo, UserError
from schema.case import Case

_TARGET = "Name the case by caseId or by its workflowItemId. Needs workflowItem.update on the item (or admin)."
_VERSION = "Refuse with VERSION_CONFLICT unless the case is at this version."


@strawberry.input(description=f"{_TARGET} Only an ACTIVE case can be suspended.")
class SuspendCaseInput:
    case_id: strawberry.ID | None = None
    workflow_item_id: strawberry.ID | None = None
    until: datetime | None = strawberry.field(
        default=None,
        description="Resume the case by itself at this time (later than now, at most a year ahead); "
        "without it the case stays suspended until resumeCase.",
    )
    comment: str | None = None
    expected_version: int | None = strawberry.field(default=None, description=_VERSION)


@strawberry.input(description=f"{_TARGET} Only a SUSPENDED case can be resumed.")
class ResumeCaseInput:
    case_id: strawberry.ID | None = None
    workflow_item_id: strawberry.ID | None = None
    comment: str | None = None
    expected_version: int | None = strawberry.field(default=None, description=_VERSION)


@strawberry.input(
    description=f"{_TARGET} An ACTIVE or SUSPENDED case can be canceled; CANCELED is final and closes the item."
)
class CancelCaseInput:
    case_id: strawberry.ID | None = None
    workflow_item_id: strawberry.ID | None = None
    comment: str | None = None
    expected_version: int | None = strawberry.field(default=None, description=_VERSION)


@strawberry.type
class CaseLifecyclePayload:
    case: Case | None = None
    activity: Activity | None = strawberry.field(
        default=None, description="The log entry written: case_suspended, case_resumed or case_canceled."
    )
    user_errors: list[UserError] = strawberry.field(default_factory=list)


async def _change(info: AppInfo, verb: Any, **arguments: Any) -> CaseLifecyclePayload:
    result, errors = await run(info.context, lambda session, actor: verb(session, actor=actor, **arguments))
    if result is None:
        return CaseLifecyclePayload(user_errors=errors)
    return CaseLifecyclePayload(case=result.case, activity=result.activity)  # type: ignore[arg-type]


def _common(input: Any) -> dict[str, Any]:
    return {
        "case_id": input.case_id,
        "workflow_item_id": input.workflow_item_id,
        "comment": input.comment,
        "expected_version": input.expected_version,
    }


async def suspend_case(info: AppInfo, input: SuspendCaseInput) -> CaseLifecyclePayload:
    return await _change(info, lifecycle.suspend_case, until=input.until, **_common(input))


async def resume_case(info: AppInfo, input: ResumeCaseInput) -> CaseLifecyclePayload:
    return await _change(info, lifecycle.resume_case, **_common(input))


async def cancel_case(info: AppInfo, input: CancelCaseInput) -> CaseLifecyclePayload:
    return await _change(info, lifecycle.cancel_case, **_common(input))
