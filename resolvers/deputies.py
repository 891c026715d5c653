"""Reading deputyships: by id, and each user's current and coming ones (engine/people/deputies.py).
A deputyship is seen by its absent user, its deputy and admins; anyone else reads it as missing."""

from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from engine.people import deputies
from models import Deputyship

if TYPE_CHECKING:
    from resolvers.context import Context


async def by_id(ctx: "Context", ids: list[str], among: Callable[[Any, Any], Any]) -> list[Any]:
    rows = await ctx.session.rows(
        select(Deputyship.__table__).where(among(Deputyship.id, ids), deputies.visible_to(ctx.viewer))
    )
    found = {row.id: row for row in rows}
    return [found.get(i) for i in ids]


async def open_by_user(ctx: "Context", column: str, ids: list[str], among: Callable[[Any, Any], Any]) -> list[Any]:
    """For each user id, their open deputyships (as the absent user, ``column`` "user_id", or as
    the deputy, "deputy_id") that the viewer may see, soonest first: at most
    ``deputies.MAX_OPEN`` per absent user, so the lists are bounded."""
    by = getattr(Deputyship, column)
    rows = await ctx.session.rows(
        select(Deputyship.__table__)
        .where(among(by, ids), deputies.open_at(), deputies.visible_to(ctx.viewer))
        .order_by(Deputyship.starts_at, Deputyship.id)
    )
    grouped: dict[str, list[Any]] = defaultdict(list)
    for row in rows:
        grouped[getattr(row, column)].append(row)
    return [grouped.get(i, []) for i in ids]
