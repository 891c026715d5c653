"""Reading the viewer's notifications."""

from sqlalchemy import func, select

from engine.notifications import unread_count
from models import Notification
from resolvers.context import Context
from resolvers.pagination import Page, check_first, check_id_cursor, keyset_page


async def page(
    ctx: Context, *, first: int | None, after: str | None, unread_only: bool
) -> tuple[Page[Notification], int]:
    """Newest first; the cursor is the notification id (ids are time-ordered)."""
    limit = check_first(first)
    condition = Notification.recipient_id == ctx.viewer.user_id
    if unread_only:
        condition = condition & Notification.read_at.is_(None)
    total = await ctx.session.scalar(select(func.count()).select_from(Notification).where(condition)) or 0
    query = select(Notification).where(condition).order_by(Notification.id.desc()).limit(limit + 1)
    if check_id_cursor(after):
        query = query.where(Notification.id < after)
    rows = list((await ctx.session.scalars(query)).all())
    unread = await unread_count(ctx.session, user_id=ctx.viewer.user_id)  # type: ignore[arg-type]
    return keyset_page(rows, limit=limit, total=total, cursor=lambda r: r.id), unread
