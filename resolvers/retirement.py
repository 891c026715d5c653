"""When each workflow version shown was retired (``Workflow.retiredAt``), read fresh per request.

Why not from the workflow rows the loaders keep (resolvers/loaders.py keeps each definition for
the life of the process, since a spec never changes): retirement is the one column of a version
that does change, and it may change in another process. A row remembered before
``retireWorkflow`` would show a retired version as open for as long as the process lives, so the
field asks the database itself: one small statement per request (or per live event) for every
version the response shows, by primary key, and only when a client selects the field. A
mutation starts the request's loaders afresh (resolvers/context.py), so its payload reads the
retirement it just committed."""

from datetime import datetime
from typing import Any
from weakref import WeakKeyDictionary

from sqlalchemy import select
from strawberry.dataloader import DataLoader

from models import Workflow

# One loader per set of request loaders: it lives and dies with them.
_LOOKUPS: "WeakKeyDictionary[Any, DataLoader[str, datetime | None]]" = WeakKeyDictionary()


async def retired_at(ctx: Any, workflow_id: str) -> datetime | None:
    """When the version was retired; None when it is not (or does not exist)."""
    loaders = ctx.loaders
    lookup = _LOOKUPS.get(loaders)
    if lookup is None:

        async def load(ids: list[str]) -> list[datetime | None]:
            rows = await ctx.session.rows(select(Workflow.id, Workflow.retired_at).where(Workflow.id.in_(ids)))
            found = {row.id: row.retired_at for row in rows}
            return [found.get(i) for i in ids]

        # A live connection's loaders outlive its queries: batched there, remembered nowhere.
        lookup = _LOOKUPS[loaders] = DataLoader(load, cache=not ctx.live)
    return await lookup.load(workflow_id)
