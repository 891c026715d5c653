"""Reading the viewer's notifications."""

from sqlalchemy import func, select

from engine.notify.notifications import readable_notifications, unread_count
from models import Notification
from resolvers.context import Context
from resolvers.pagination import Page, check_first, check_id_cursor, keyset_page


async def page(
    ctx: Context,
    *,
    first: int | None,
    after: str | None,
    unread_only: bool,
    counted: bool = True,
    unread_counted: bool = True,
) -> tuple[Page[Notification], int | None]:
    """Newest first; the cursor is the notification id (ids are time-ordered). Only those whose
    activity the viewer may read now (engine.people.visibility): the page, ``totalCount`` and
    ``unreadCount`` leave the others out alike, checked at each read, not only when written.
    Each count only when selected (``counted``, ``unread_counted``): it checks every one of the
    viewer's notifications, the page only ``first`` of them."""
    limit = check_first(first)
    condition = readable_notifications(ctx.viewer, unread_only=unread_only)
    total = None
    if counted:
        total = await ctx.session.scalar(select(func.count()).select_from(Notification).where(condition)) or 0
    query = select(Notification).where(condition).order_by(Notification.id.desc()).limit(limit + 1)
    if check_id_cursor(after):
        query = query.where(Notification.id < after)
    rows = list((await ctx.session.scalars(query)).all())
    unread = await unread_count(ctx.session, actor=ctx.viewer) if unread_counted else None
    return keyset_page(rows, limit=limit, total=total, cursor=lambda r: r.id), unread
