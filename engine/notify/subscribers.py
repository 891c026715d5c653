"""Who opted in to news of a case, and what of a case the notifications read.

Here, in the notify wing, below the case machinery that calls it: ``engine/cases/context.py``
reads the subscribers with a case it locks (one round trip for states, roles and subscribers),
with the query written here once, and hands ``engine/notify/notifications.py`` its context,
which that module reads through ``CaseFacts`` alone (it never imports the cases wing)."""

from typing import Any, Protocol

from sqlalchemy import and_, bindparam, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from models import Case, NotificationSubscription, Subproject, WorkflowItem

OPT_IN_LEVELS = ("ROLE", "CASE", "WORKFLOW")


class CaseFacts(Protocol):
    """What notifying reads of a case: ``engine.cases.context.CaseContext`` has it all."""

    session: AsyncSession
    case: Case
    item: WorkflowItem
    subproject: Subproject
    workflow_id: str
    roles: dict[str, set[str]]
    subscribers: dict[str, set[str]] | None


def subscribers_query() -> Any:
    """Who opted in to news of a case, as (level, user) rows: everyone at ROLE (narrowed to the
    case's role players by engine.notify.notifications), the item or case at CASE, its subproject or
    workflow at WORKFLOW."""
    sub = NotificationSubscription
    return select(sub.level, sub.user_id).where(
        or_(
            and_(sub.level == "ROLE", sub.target_id == ""),
            and_(sub.level == "CASE", sub.target_id.in_([bindparam("item"), bindparam("case")])),
            and_(sub.level == "WORKFLOW", sub.target_id.in_([bindparam("subproject"), bindparam("workflow")])),
        )
    )


__all__ = ["OPT_IN_LEVELS", "CaseFacts", "subscribers_query"]
