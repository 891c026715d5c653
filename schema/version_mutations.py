"""Mutations on workflow versions: migrateCases and retireWorkflow (engine/migration/migration.py,
engine/spec/versions.py)."""

from enum import Enum

import strawberry

from engine.migration import migration
from engine.spec import versions
from resolvers.errors import UserErrorRow, user_errors
from resolvers.mutations import run
from schema.base import AppInfo, UserError
from schema.case import Case
from schema.workflow import Workflow


@strawberry.enum(description="What a migrated case's running timers do.")
class TimerPolicy(Enum):
    KEEP = strawberry.enum_value("KEEP", description="Keep each due time (a timer the new version adds starts now).")
    RESTART = strawberry.enum_value("RESTART", description="Restart each timer from now, with the new timeout.")


@strawberry.input(description="One state of the old version and the state of the new one it becomes.")
class StateMapEntry:
    from_: str = strawberry.field(name="from")
    to: str


@strawberry.input(
    description="Move running (active or suspended) cases of `workflow` to `toVersion`: those of `subprojectId` "
    "not on it yet, or those named by `caseIds`. Needs global.defineWorkflow (admins), or subproject.update "
    "on the subproject, or workflowItem.update on each case's item."
)
class MigrateCasesInput:
    workflow: str = strawberry.field(description="The workflow's short name.")
    to_version: int
    state_map: list[StateMapEntry] = strawberry.field(
        default_factory=list,
        description=f"Where each state goes (at most {migration.MAX_MAP}); a state left out keeps its name, "
        "which the new version must have.",
    )
    timer_policy: TimerPolicy = TimerPolicy.KEEP
    subproject_id: strawberry.ID | None = strawberry.field(
        default=None, description="Its cases, and its new items from now on (a real run)."
    )
    case_ids: list[strawberry.ID] | None = strawberry.field(
        default=None, description=f"These cases (1 to {migration.MAX_CASES})."
    )
    dry_run: bool = strawberry.field(default=False, description="Report what would happen; change nothing.")
    first: int = strawberry.field(
        default=migration.MAX_CASES, description=f"Cases per call, at most {migration.MAX_CASES} (by subproject)."
    )
    after: str | None = strawberry.field(default=None, description="The endCursor of the previous call.")


@strawberry.type(description="One case: where it lands, or why it stays.")
class CaseMigrationResult:
    case_id: strawberry.ID
    case: Case | None = strawberry.field(description="Null when the case does not exist or is not yours to see.")
    from_state: str | None = strawberry.field(description="Its top-level state before (a short name).")
    to_state: str | None = strawberry.field(description="Its top-level state after (null when refused).")
    user_errors: list[UserError] = strawberry.field(description="Why the case is refused; empty when it moves.")


@strawberry.type
class MigrateCasesPayload:
    workflow: Workflow | None = strawberry.field(default=None, description="The version moved to.")
    results: list[CaseMigrationResult] = strawberry.field(default_factory=list)
    migrated: int = strawberry.field(default=0, description="Cases moved (0 in a dry run).")
    refused: int = 0
    end_cursor: str | None = strawberry.field(default=None, description="Pass as `after` to go on.")
    has_more: bool = strawberry.field(default=False, description="More cases of the subproject follow endCursor.")
    user_errors: list[UserError] = strawberry.field(default_factory=list)


@strawberry.input(
    description="Retire a version: no new subproject or workflow item may use it. Needs global.defineWorkflow."
)
class RetireWorkflowInput:
    workflow: str
    version: int


@strawberry.type
class RetireWorkflowPayload:
    workflow: Workflow | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


def _case_errors(result: migration.CaseMigration) -> list[UserErrorRow]:
    return [row for error in result.errors for row in user_errors(error)]


async def migrate_cases(info: AppInfo, input: MigrateCasesInput) -> MigrateCasesPayload:
    result, errors = await run(
        info.context,
        lambda s, a: migration.migrate_cases(
            s,
            actor=a,
            workflow=input.workflow,
            to_version=input.to_version,
            state_map=[(entry.from_, entry.to) for entry in input.state_map],
            timer_policy=input.timer_policy.value,
            subproject_id=input.subproject_id,
            case_ids=None if input.case_ids is None else [str(id_) for id_ in input.case_ids],
            dry_run=input.dry_run,
            first=input.first,
            after=input.after,
        ),
        rollback=input.dry_run,
    )
    if result is None:
        return MigrateCasesPayload(user_errors=errors)  # type: ignore[arg-type]
    return MigrateCasesPayload(
        workflow=result.workflow,  # type: ignore[arg-type]
        results=[
            CaseMigrationResult(
                case_id=strawberry.ID(r.case_id),
                case=r.case,  # type: ignore[arg-type]
                from_state=r.from_state,
                to_state=r.to_state,
                user_errors=_case_errors(r),  # type: ignore[arg-type]
            )
            for r in result.results
        ],
        migrated=result.migrated,
        refused=result.refused,
        end_cursor=result.end_cursor,
        has_more=result.has_more,
    )


async def retire_workflow(info: AppInfo, input: RetireWorkflowInput) -> RetireWorkflowPayload:
    workflow, errors = await run(
        info.context,
        lambda s, a: versions.retire_workflow(s, actor=a, workflow=input.workflow, version=input.version),
    )
    return RetireWorkflowPayload(workflow=workflow, user_errors=errors)  # type: ignore[arg-type]
