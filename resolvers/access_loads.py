"""Batch loads of who may do what and what happened: grants, the viewer's intents, history
pages, log entries, delivery choices, deputyships."""

from collections import defaultdict
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import aliased

from engine.people import deputies
from engine.people.inheritance import Holding, effective_grants, hold
from engine.people.permissions import GLOBAL, intents_for
from models import (
    Activity,
    ArchivedChain,
    NotificationDelivery,
    Permission,
)
from resolvers import deputies as deputy_reads
from resolvers import visibility
from resolvers.filters import (
    HistoryFilterKey,
    apply_history_filter,
)
from resolvers.loader_cache import Loads, all_per_key, one_per_key


class AccessLoads(Loads):
    """The access and history loaders (named in ``Loaders``)."""

    async def _grants(self, ids: list[str]) -> list[dict[str, list[Holding]]]:
        """Who holds each intent on each resource, their own grants and those reaching them
        from above (engine/people/inheritance.py), in one statement."""
        found = hold(await self._rows(effective_grants(ids, among=self._in)))
        return [found.get(i, {}) for i in ids]

    async def _intents(self, ids: list[str]) -> list[frozenset[str]]:
        """The viewer's own intents on each resource, reaching ones included (admins hold them
        all)."""
        actor = self._ctx.viewer
        if actor.is_admin:
            return [frozenset(intents_for(i)) for i in ids]
        found = hold(await self._rows(effective_grants(ids, actor.party_ids, self._in)))
        return [frozenset(found.get(i, ())) for i in ids]

    async def _global_intents(self, ids: list[str]) -> list[list[str]]:
        """The global intents granted to each party itself (not through a group), sorted: a few
        rows per party, in one statement."""
        rows = await self._rows(
            select(Permission.party_id, Permission.intent).where(
                Permission.resource_id == GLOBAL, self._in(Permission.party_id, ids)
            )
        )
        grouped: dict[str, list[str]] = defaultdict(list)
        for row in rows:
            grouped[row.party_id].append(row.intent)
        return [sorted(grouped.get(i, [])) for i in ids]

    async def _history(
        self, keys: list[tuple[str, str, HistoryFilterKey, bool, bool]]
    ) -> list[tuple[list[Activity], int | None]]:
        """Keys are (column, resource id, filter incl. page args, restricted, counted): for each
        distinct (column, filter, restricted, counted), one query returns the page of every
        resource at once. ``restricted``: the viewer lacks viewHistory on the resource itself, so
        each entry is kept only if the visibility rule lets the viewer read it some other way (a
        grant on an enclosing resource, a role in the item's case). ``counted``: the selection
        asks for ``totalCount``, a count of every matching entry (None otherwise)."""
        results: dict[tuple[str, str, HistoryFilterKey, bool, bool], tuple[list[Activity], int | None]] = {}
        for column_name, filt, restricted, counted in {(c, f, r, n) for c, _, f, r, n in keys}:
            ids = [i for c, i, f, r, n in keys if (c, f, r, n) == (column_name, filt, restricted, counted)]
            column = getattr(Activity, column_name)
            within = [column == ids[0] if len(ids) == 1 else self._in(column, ids)]
            if restricted:
                within.append(visibility.entry_readable(self._ctx.viewer))
            else:  # viewHistory on the resource reads all but grant changes (listPermissions)
                within.append(visibility.grant_entries_readable(self._ctx.viewer))
            counts: dict[str, int] = {}
            if counted:
                counts = dict(
                    (
                        await self._ctx.session.execute(
                            apply_history_filter(
                                select(column, func.count()).where(*within), filt, with_cursor=False
                            ).group_by(column)
                        )
                    ).all()
                )
            rows = await self._ctx.session.scalars(_history_pages(column, within, filt, single=len(ids) == 1))
            grouped = all_per_key(rows.all(), ids, lambda r, c=column_name: getattr(r, c))
            for rid, group in zip(ids, grouped, strict=True):
                total = counts.get(rid, 0) if counted else None
                results[(column_name, rid, filt, restricted, counted)] = (group, total)
        return [results[k] for k in keys]

    async def _archived(self, keys: list[tuple[str, str]]) -> list[Any]:
        """Keys are (history column, resource id): where the resource's archived history ends
        (the newest archived entry's seq and time, when it was archived), or None: one
        statement per column over the chains' anchors (``ArchivedChain``)."""
        found: dict[tuple[str, str], Any] = {}
        for column_name in {c for c, _ in keys}:
            column = getattr(ArchivedChain, column_name)
            ids = [i for c, i in keys if c == column_name]
            query = (
                select(
                    column.label("k"),
                    func.max(ArchivedChain.seq).label("seq"),
                    func.max(ArchivedChain.at).label("at"),
                    func.max(ArchivedChain.archived_at).label("archived_at"),
                )
                .where(self._in(column, ids))
                .group_by(column)
            )
            found.update(((column_name, row.k), row) for row in await self._rows(query))
        return [found.get(key) for key in keys]

    async def _activities(self, ids: list[str]) -> list[Activity | None]:
        """Entries the viewer may read (engine.people.visibility); the others read as missing."""
        readable = visibility.entry_readable(self._ctx.viewer)
        rows = await self._rows(select(Activity.__table__).where(self._in(Activity.id, ids), readable))
        return one_per_key(rows, ids, lambda r: r.id)

    async def _deliveries(self, ids: list[str]) -> list[list[Any]]:
        """Each user's delivery choices by level (engine/notify/delivery.py): what they chose, in one query."""
        rows = await self._rows(
            select(NotificationDelivery.__table__).where(self._in(NotificationDelivery.user_id, ids))
        )
        grouped: dict[str, list[Any]] = defaultdict(list)
        for row in rows:
            grouped[row.user_id].append(row)
        return [grouped.get(i, []) for i in ids]

    async def _deputyships(self, ids: list[str]) -> list[Any]:
        return await deputy_reads.by_id(self._ctx, ids, self._in)

    async def _deputyships_by_user(self, ids: list[str]) -> list[list[Any]]:
        return await deputy_reads.open_by_user(self._ctx, "user_id", ids, self._in)

    async def _deputyships_by_deputy(self, ids: list[str]) -> list[list[Any]]:
        return await deputy_reads.open_by_user(self._ctx, "deputy_id", ids, self._in)

    async def _standing_in(self, ids: list[str]) -> list[list[Any]]:
        """The absent users each user stands in for now (engine/people/deputies.py), as actors: asked
        for the viewer alone, once per request."""
        return [await deputies.standing_in(self._ctx.session, user_id=i) for i in ids]


def _history_pages(column: Any, within: list[Any], filt: HistoryFilterKey, *, single: bool) -> Any:
    """The entries of each resource's page, in seq order. One resource's page is read by keyset,
    the entries after the cursor under a LIMIT, so it stops once the page is full: an index
    range of the resource's entries whatever their number (bench R5: a project of 2,000 items
    has 9,000 entries, and ranking all of them cost each page 10x what it cost at 200 items).
    Several resources' pages (a page of cases, each with its log) are ranked by a window over
    their entries, partitioned by resource, in one statement."""
    if single:
        page = apply_history_filter(select(Activity).where(*within), filt, with_cursor=True)
        return page.order_by(Activity.seq).limit(filt.limit + 1)
    rank = func.row_number().over(partition_by=column, order_by=Activity.seq).label("rn")
    ranked = apply_history_filter(select(Activity, rank).where(*within), filt, with_cursor=True).subquery()
    entry = aliased(Activity, ranked)
    return select(entry).where(ranked.c.rn <= filt.limit + 1).order_by(entry.seq)
