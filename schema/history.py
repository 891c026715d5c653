"""verifyHistory: whether a resource's activity log is what was written."""

from datetime import datetime

import strawberry

from engine.history.history import Problem
from resolvers import history
from schema.base import AppInfo, UserError

HistoryProblem = strawberry.enum(Problem, name="HistoryProblem", description="What is wrong with a broken history.")


@strawberry.type(name="HistoryCheckpoint", description="A chain head the server signed with its secret key.")
class HistoryCheckpointInfo:
    seq: int
    hash: str
    signed_at: datetime


@strawberry.type(description="The verdict on one resource's hash chain and its signed checkpoint.")
class HistoryReport:
    resource_id: strawberry.ID
    intact: bool
    entries: int = strawberry.field(description="Entries that verified, in seq order, before any break.")
    intact_through: int | None = strawberry.field(description="Seq of the last entry that verified; null: none did.")
    broken_at: int | None = strawberry.field(description="Seq of the first broken entry; null if intact.")
    problem: HistoryProblem | None
    message: str = strawberry.field(description="The verdict as a sentence.")
    checkpoint: HistoryCheckpointInfo | None = strawberry.field(
        description="The signed checkpoint it was checked against (null without one, or without a secret key)."
    )
    signatures_checked: bool = strawberry.field(
        description="False when the server has no secret key: only the hash chain was checked."
    )


@strawberry.type
class VerifyHistoryPayload:
    report: HistoryReport | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


async def verify_history(info: AppInfo, resource_id: strawberry.ID) -> VerifyHistoryPayload:
    report, errors = await history.verify_history(info.context, str(resource_id))
    return VerifyHistoryPayload(report=report, user_errors=errors)  # type: ignore[arg-type]


verify_history_field = strawberry.field(
    resolver=verify_history,
    description="Admins: verify the history of a project, subproject or workflow item against its hash chain "
    "and the server's signed checkpoint. Reports the first broken entry, or how far it is intact.",
)
