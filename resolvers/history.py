"""Verifying a resource's history, for admins."""

from engine.errors import DomainError, ErrorCode
from engine.history import history
from resolvers.context import Context
from resolvers.errors import UserErrorRow, user_errors


async def verify_history(ctx: Context, resource_id: str) -> tuple[history.HistoryReport | None, list[UserErrorRow]]:
    """Admins only, whatever the id: a refusal says nothing about whether the resource exists."""
    if not ctx.viewer.is_admin:
        refusal = DomainError(ErrorCode.NOT_ALLOWED, "Only an admin may verify history.", ["resourceId"])
        return None, user_errors(refusal)
    try:
        async with ctx.db.read_session() as session:
            report = await history.verify_history(session, resource_id=resource_id, secret_key=ctx.settings.secret_key)
    except DomainError as error:
        return None, user_errors(error)
    return report, []
