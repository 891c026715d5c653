"""Batch loads of the resource tree: parties, projects, subprojects, items and their pages,
what a page of items prefetches, budgets, documents, group members."""

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from strawberry.dataloader import DataLoader

from models import (
    Case,
    Document,
    Group,
    GroupMember,
    Project,
    ProjectedBudget,
    Subproject,
    User,
    WorkflowItem,
    kind_of,
)
from resolvers import child_pages, visibility
from resolvers.child_pages import PageKey
from resolvers.loader_cache import MISSING, Loads, all_per_key, cached, one_per_key, prime
from resolvers.pagination import Page


class TreeLoads(Loads):
    """The tree's loaders (named in ``Loaders``)."""

    async def _parties(self, ids: list[str]) -> list[Any]:
        users = [i for i in ids if kind_of(i) == "User"]
        groups = [i for i in ids if kind_of(i) == "Group"]
        rows: list[Any] = []
        if users:
            rows += await self._rows(select(User.__table__).where(self._in(User.id, users)))
        if groups:
            rows += await self._rows(select(Group.__table__).where(self._in(Group.id, groups)))
        return one_per_key(rows, ids, lambda r: r.id)

    async def _projects(self, ids: list[str]) -> list[Project | None]:
        actor = self._ctx.viewer
        rows = await self._rows(
            select(Project.__table__).where(self._in(Project.id, ids), visibility.project_visible(actor))
        )
        return one_per_key(rows, ids, lambda r: r.id)

    async def _subprojects(self, ids: list[str]) -> list[Subproject | None]:
        actor = self._ctx.viewer
        rows = await self._rows(
            select(Subproject.__table__).where(self._in(Subproject.id, ids), visibility.subproject_visible(actor))
        )
        return one_per_key(rows, ids, lambda r: r.id)

    async def _items(self, ids: list[str]) -> list[WorkflowItem | None]:
        actor = self._ctx.viewer
        rows = await self._rows(
            select(WorkflowItem.__table__).where(self._in(WorkflowItem.id, ids), visibility.item_visible(actor))
        )
        return one_per_key(rows, ids, lambda r: r.id)

    async def _subprojects_by_project(self, keys: list[PageKey]) -> list[Page[Any]]:
        return await self._child_pages(child_pages.SUBPROJECTS, self.subproject_by_id, keys)

    async def _items_by_subproject(self, keys: list[PageKey]) -> list[Page[Any]]:
        """The rows are the items' own: ``item_page`` finds them loaded."""
        return await self._child_pages(child_pages.ITEMS, self.item_by_id, keys)

    async def _child_pages(
        self, children: child_pages.Children, by_id: DataLoader[str, Any], keys: list[PageKey]
    ) -> list[Page[Any]]:
        """A page of children per parent, in display order (resolvers.child_pages); one query
        for the connections that agree on filter, size and cursor, however many children each
        parent holds."""
        batches: dict[Any, list[PageKey]] = defaultdict(list)
        for key in keys:
            batches[key.batch()].append(key)
        results: dict[PageKey, Page[Any]] = {}
        postgres = not self._ctx.db.is_sqlite
        for batch in batches.values():
            query = child_pages.query(children, batch, actor=self._ctx.viewer, postgres=postgres, among=self._in)
            found = child_pages.pages(children, batch, await self._rows(query), postgres=postgres)
            prime(by_id, {row.id: row for page in found for row in page.nodes})
            results.update(zip(batch, found, strict=True))
        return [results[key] for key in keys]

    async def _item_pages(self, keys: list[tuple[tuple[str, ...], frozenset[str]]]) -> list[list[Any]]:
        """Keys are (the item ids of a page, what the selection reads below them, see
        lookahead): each page's visible rows, in page order. The pages of every item connection
        resolved in this tick are read together, rows and what is below them one query per
        relation, so nested fields resolve without awaiting; and only the items on a page,
        however many a subproject holds. One key per connection: a load per item cost more
        than the rows (futures and callbacks, 600 of each for a 200-item read)."""
        ids = list(dict.fromkeys(i for page, _ in keys for i in page))
        missing = [i for i in ids if cached(self.item_by_id, i) is MISSING]
        found = dict(zip(missing, await self._items(missing), strict=True)) if missing else {}
        prime(self.item_by_id, found)
        rows = {i: found[i] if i in found else cached(self.item_by_id, i) for i in ids}
        for wants in {w for _, w in keys if w}:
            below = {i: rows[i] for page, w in keys if w == wants for i in page if rows[i] is not None}
            await self.prefetch_for_items(list(below.values()), wants)
        return [[rows[i] for i in page if rows[i] is not None] for page, _ in keys]

    async def prefetch_for_items(self, items: Sequence[Any], wants: frozenset[str]) -> None:
        """Load what the selection reads below these items, one query per relation, and prime
        the loaders with it."""
        item_ids = [i.id for i in items]
        party_ids = {i.assignee_id for i in items if i.assignee_id} if "parties" in wants else set()
        if "case" in wants or wants & {"states", "enabled", "roles"}:
            cases = await self._rows(select(Case.__table__).where(self._in(Case.object_id, item_ids)))
            case_ids = [c.id for c in cases]
            prime(self.case_by_item, {case.object_id: case for case in cases})
            prime(self.case_by_id, {case.id: case for case in cases})
            workflow_ids = [w for w in {c.workflow_id for c in cases} if cached(self.workflow_by_id, w) is MISSING]
            if workflow_ids:
                prime(self.workflow_by_id, {w.id: w for w in await self._workflows(workflow_ids)})
            if "states" in wants:
                prime(self.states_by_case, dict(zip(case_ids, await self._states_by_case(case_ids), strict=True)))
            if "enabled" in wants:
                prime(self.enabled_by_case, dict(zip(case_ids, await self._enabled_by_case(case_ids), strict=True)))
            if "roles" in wants or "parties" in wants:
                roles = await self._roles_by_case(case_ids)
                prime(self.roles_by_case, dict(zip(case_ids, roles, strict=True)))
                if "parties" in wants:
                    party_ids |= {p for by_role in roles for parties in by_role.values() for p in parties}
        if "intents" in wants:
            prime(self.intents_by_resource, dict(zip(item_ids, await self._intents(item_ids), strict=True)))
        missing = [p for p in party_ids if cached(self.party_by_id, p) is MISSING]
        if missing:
            prime(self.party_by_id, dict(zip(missing, await self._parties(missing), strict=True)))

    async def _budgets(self, ids: list[str]) -> list[list[ProjectedBudget]]:
        rows = await self._rows(
            select(ProjectedBudget.__table__)
            .where(self._in(ProjectedBudget.resource_id, ids))
            .order_by(ProjectedBudget.organization, ProjectedBudget.currency)
        )
        return all_per_key(rows, ids, lambda r: r.resource_id)

    async def _documents(self, ids: list[str]) -> list[list[Document]]:
        rows = await self._rows(
            select(Document.__table__).where(self._in(Document.workflow_item_id, ids)).order_by(Document.id)
        )
        return all_per_key(rows, ids, lambda r: r.workflow_item_id)

    async def _documents_by_id(self, ids: list[str]) -> list[Document | None]:
        """Documents of items the viewer may see (hidden ≡ missing), removed ones included."""
        rows = await self._rows(
            select(Document.__table__)
            .join(WorkflowItem, WorkflowItem.id == Document.workflow_item_id)
            .where(self._in(Document.id, ids), visibility.item_visible(self._ctx.viewer))
        )
        return one_per_key(rows, ids, lambda r: r.id)

    async def _members(self, ids: list[str]) -> list[list[User]]:
        rows = (
            await self._ctx.session.execute(
                select(GroupMember.group_id, User)
                .join(User, User.id == GroupMember.user_id)
                .where(self._in(GroupMember.group_id, ids))
                .order_by(User.login)
            )
        ).all()
        grouped: dict[str, list[User]] = defaultdict(list)
        for group_id, user in rows:
            grouped[group_id].append(user)
        return [grouped.get(i, []) for i in ids]
