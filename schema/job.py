"""Jobs as clients read them (the job record), the ``jobs`` query and the manual levers
``retryJob`` and ``resumeJob`` (resolvers/jobs.py, engine/jobs/records.py)."""

from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import strawberry

from engine.jobs import levers, policy_for
from resolvers import jobs as job_reads
from resolvers.lookahead import selects
from schema.activity import Activity
from schema.base import JSON, AppInfo, Connection, Node, UserError, by_id_prefix, connection
from schema.execution import context_only

if TYPE_CHECKING:
    from schema.case import Case


@strawberry.enum(
    description="PENDING: waiting for its first run (or retried by a person). RUNNING: a runner has it. STALLED: a "
    "run failed in a way that may pass (timeout, refused connection, 5xx, 429); it runs again at nextAttemptAt. "
    "COMPLETED: done. FAILED: it will not work as it stands (invalid input, 4xx, or attempts exhausted); a person "
    "decides (retryJob)."
)
class JobState(Enum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    STALLED = "STALLED"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"


@strawberry.type(description="Why the job's last run failed.")
class JobError:
    step: str
    code: str = strawberry.field(description="Short and stable, e.g. HTTP_503, TIMEOUT, CONNECTION, INTERNAL.")
    message: str
    recoverable: bool = strawberry.field(
        description="Whether the failure may pass by itself (STALLED rather than FAILED)."
    )
    detail: str | None = strawberry.field(
        default=None, description="Admins only: the unexpected exception behind an INTERNAL error."
    )


@strawberry.type(
    description="A side effect that leaves the database (a webhook delivery), run after its action commits."
)
class Job(Node):
    kind: str = strawberry.field(description="What the job does, e.g. webhook.")
    state: JobState
    step: str = strawberry.field(description="The step running or last run (empty before the first run).")
    attempts: int = strawberry.field(description="Runs started so far (retryJob starts again from 0).")
    next_attempt_at: datetime | None = strawberry.field(
        description="PENDING/STALLED: when it runs next; RUNNING: when its runner is presumed gone; else null."
    )
    progress: JSON = strawberry.field(description="What its steps achieved; keys are added, never changed.")
    idempotency_key: str = strawberry.field(description="Passed on with every run (a webhook's Idempotency-Key).")
    created_at: datetime
    updated_at: datetime

    is_type_of = by_id_prefix("Job")

    @strawberry.field(
        description="What the job was made with; it never changes. A webhook's payload (docs/api.md, \"Webhook "
        'payloads") is shown to admins alone: its case fields were chosen for the receiver, not for the reader.'
    )
    @context_only
    def input(self, info: AppInfo) -> JSON:
        raw: Any = self.input  # type: ignore[attr-defined]
        if info.context.viewer.is_admin or not isinstance(raw, dict):
            return raw
        return {key: value for key, value in raw.items() if key != "payload"}

    @strawberry.field(description="The most runs it gets before it FAILS, by its kind's retry policy.")
    def max_attempts(self) -> int:
        return policy_for(self.kind).max_attempts

    @strawberry.field(description="Why its last run failed; null once it completed.")
    @context_only
    def error(self, info: AppInfo) -> JobError | None:
        raw: Any = self.error  # type: ignore[attr-defined]
        if not raw:
            return None
        detail = raw.get("detail") if info.context.viewer.is_admin else None
        return JobError(
            step=raw.get("step", ""),
            code=raw.get("code", ""),
            message=raw.get("message", ""),
            recoverable=bool(raw.get("recoverable")),
            detail=detail,
        )

    @strawberry.field(
        description="Whether retryJob would run it again for you now: it is FAILED and you hold workflowItem.update "
        "on its item (or are an admin)."
    )
    @context_only
    async def can_retry(self, info: AppInfo) -> bool:
        return await _may_pull(self, info, "retry")

    @strawberry.field(
        description="Whether resumeJob would make it due now for you: it is STALLED and you hold workflowItem.update "
        "on its item (or are an admin)."
    )
    @context_only
    async def can_resume(self, info: AppInfo) -> bool:
        return await _may_pull(self, info, "resume")

    @strawberry.field(name="case")
    @context_only
    async def case_(self, info: AppInfo) -> Annotated["Case", strawberry.lazy("schema.case")] | None:
        case_id = self.case_id  # type: ignore[attr-defined]
        return None if case_id is None else await info.context.loaders.case_by_id.load(case_id)

    @strawberry.field(description="The log entry of the action that made the job, if you may read it.")
    @context_only
    async def activity(self, info: AppInfo) -> Activity | None:
        activity_id = self.activity_id  # type: ignore[attr-defined]
        return None if activity_id is None else await info.context.loaders.activity_by_id.load(activity_id)


async def _may_pull(job: Any, info: AppInfo, lever: str) -> bool:
    """The levers' own rule (engine/jobs/levers.py), the viewer's intents on the item batch-loaded."""
    viewer, item_id = info.context.viewer, job.workflow_item_id
    if job.state != levers.LEVER_STATE[lever]:
        return False  # no intents to load
    held = await info.context.loaders.intents_by_resource.load(item_id) if item_id and not viewer.is_admin else ()
    return levers.may_pull(lever, state=job.state, item_id=item_id, is_admin=viewer.is_admin, held=held)


async def jobs_query(
    info: AppInfo,
    state: JobState | None = None,
    case_id: strawberry.ID | None = None,
    first: int | None = None,
    after: str | None = None,
) -> Connection[Job]:
    page = await job_reads.jobs_page(
        info.context,
        state=state.value if state else None,
        case_id=case_id,
        first=first,
        after=after,
        counted=selects(info, "totalCount"),
    )
    return connection(page)  # type: ignore[no-any-return]


@strawberry.input(description="A job by id. Needs workflowItem.update on its item (or admin).")
class JobInput:
    id: strawberry.ID


@strawberry.type
class JobPayload:
    job: Job | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


async def retry_job(info: AppInfo, input: JobInput) -> JobPayload:
    job, errors = await job_reads.retry_job(info.context, input.id)
    return JobPayload(job=job, user_errors=errors)  # type: ignore[arg-type]


async def resume_job(info: AppInfo, input: JobInput) -> JobPayload:
    job, errors = await job_reads.resume_job(info.context, input.id)
    return JobPayload(job=job, user_errors=errors)  # type: ignore[arg-type]
