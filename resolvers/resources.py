"""Fields every resource has: the viewer's intents, the grants, the history."""

from datetime import datetime
from typing import Any

from engine.people.inheritance import Holding
from engine.people.permissions import intent_prefix
from resolvers.context import Context
from resolvers.filters import HistoryFilterKey
from resolvers.pagination import Page, check_first, keyset_page, parse_seq_cursor, seq_cursor
from resolvers.timestamps import day_words_text

HISTORY_COLUMN = {"project": "project_id", "subproject": "subproject_id", "workflowItem": "workflow_item_id"}


async def allowed_intents(ctx: Context, resource_id: str) -> list[str]:
    return sorted(await ctx.loaders.intents_by_resource.load(resource_id))


async def grants(ctx: Context, resource_id: str) -> dict[str, list[Holding]] | None:
    """All grants holding on the resource (reaching ones too), or None when the viewer may not
    list them."""
    held = await ctx.loaders.intents_by_resource.load(resource_id)
    if f"{intent_prefix(resource_id)}.intent.listPermissions" not in held:
        return None
    return await ctx.loaders.grants_by_resource.load(resource_id)


async def history(
    ctx: Context,
    resource_id: str,
    *,
    first: int | None,
    after: str | None,
    kind: str | None = None,
    actor_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    counted: bool = True,
) -> Page[Any]:
    """A page of the resource's log, oldest first; the cursor is the entry's ``seq``. Every
    entry is one the viewer may read (``engine.people.visibility.entry_readable``): with viewHistory on
    the resource itself that is all of them but grant changes (which need listPermissions on
    their resource); without it,
    each entry is checked (a grant on an enclosing resource, a role in the item's case), so a
    user who may only view an item reads none of its comments. ``counted``: whether the
    selection asks for ``totalCount`` (a count of every matching entry, which a page does not
    need)."""
    limit = check_first(first)
    prefix = intent_prefix(resource_id)
    restricted = f"{prefix}.viewHistory" not in await ctx.loaders.intents_by_resource.load(resource_id)
    key = HistoryFilterKey(
        kind=kind, actor_id=actor_id, since=since, until=until, after_seq=parse_seq_cursor(after), limit=limit
    )
    rows, total = await ctx.loaders.history_by_resource.load(
        (HISTORY_COLUMN[prefix], resource_id, key, restricted, counted)
    )
    return keyset_page(rows, limit=limit, total=total, cursor=lambda r: seq_cursor(r.seq))


async def archived(ctx: Context, resource_id: str, *, after: str | None) -> str | None:
    """The sentence a page of the resource's history carries when its oldest entries were
    archived (`caseway archive-history`) and the page starts where the database's part begins
    (no cursor, or a cursor of an archived entry); None otherwise. The same for every viewer of
    the history: it says where entries went, not what they were."""
    end = await ctx.loaders.archived_by_resource.load((HISTORY_COLUMN[intent_prefix(resource_id)], resource_id))
    cursor = parse_seq_cursor(after)
    if end is None or (cursor is not None and cursor >= end.seq):
        return None
    return (
        f"Entries before seq {end.seq + 1}, the newest written {day_words_text(end.at)}, are archived: they left "
        f"the database on {day_words_text(end.archived_at)} for the archive an administrator keeps "
        "(caseway archive-history)."
    )
