"""DataLoaders: one per relation, created per request, one query per batch, results in key order."""

import inspect
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import func, select
from sqlalchemy.orm import aliased
from strawberry.dataloader import DataLoader

from engine.permissions import intents_for
from models import (
    Activity,
    Case,
    CaseRoleParty,
    CaseState,
    Document,
    EnabledAction,
    Group,
    GroupMember,
    Permission,
    Project,
    ProjectedBudget,
    Subproject,
    User,
    Workflow,
    WorkflowItem,
    kind_of,
)
from resolvers import visibility
from resolvers.filters import (
    HistoryFilterKey,
    ResourceFilterKey,
    apply_history_filter,
    apply_resource_filter,
)
from resolvers.records import records

if TYPE_CHECKING:
    from resolvers.context import Context

K = TypeVar("K")
V = TypeVar("V")


def cached(loader: DataLoader[Any, Any], key: Any) -> Any:
    """The loader's value for ``key`` if it is already known, else ``MISSING`` (no await)."""
    future = loader.cache_map.get(key) if loader.cache else None
    if future is not None and future.done() and not future.cancelled() and future.exception() is None:
        return future.result()
    return MISSING


MISSING: Any = object()
T = TypeVar("T")


def with_loaded(needs: Sequence[tuple[DataLoader[Any, Any], Any]], compute: Callable[..., Any]) -> Any:
    """``compute(*values)`` over the loaders' values for these keys: at once when every value is
    already known (the usual case after a page prefetch, so the field costs no await), else
    after awaiting the loads. ``compute`` may return another ``with_loaded`` for values that
    depend on these; graphql-core awaits whatever comes back awaitable."""
    values = [cached(loader, key) for loader, key in needs]
    if not any(v is MISSING for v in values):
        return compute(*values)
    return _after_loading(needs, compute)


def one(loader: Any, key: str | None) -> Any:
    """A single related row (None for no key)."""
    return None if key is None else with_loaded([(loader, key)], lambda value: value)


async def _after_loading(needs: Sequence[tuple[DataLoader[Any, Any], Any]], compute: Callable[..., Any]) -> Any:
    result = compute(*[await loader.load(key) for loader, key in needs])
    return await result if inspect.isawaitable(result) else result


def _one(rows: Sequence[Any], keys: Sequence[K], key: Callable[[Any], K]) -> list[Any]:
    by_key = {key(r): r for r in rows}
    return [by_key.get(k) for k in keys]


def _many(rows: Sequence[Any], keys: Sequence[K], key: Callable[[Any], K]) -> list[list[Any]]:
    grouped: dict[K, list[Any]] = defaultdict(list)
    for r in rows:
        grouped[key(r)].append(r)
    return [grouped.get(k, []) for k in keys]


class Loaders:
    """Named ``<thing>_by_<key>``; every loader sees only what the viewer may see."""

    def __init__(self, ctx: "Context", *, cache: bool = True) -> None:
        """``cache=False`` still batches the loads of one tick but remembers nothing: for
        subscriptions, whose context lives as long as the connection."""
        self._ctx = ctx

        def loader(fn: Callable[[list[Any]], Awaitable[list[Any]]]) -> DataLoader[Any, Any]:
            return DataLoader(load_fn=fn, cache=cache)

        self.party_by_id = loader(self._parties)
        self.project_by_id = loader(self._projects)
        self.subproject_by_id = loader(self._subprojects)
        self.item_by_id = loader(self._items)
        self.subprojects_by_project = loader(self._subprojects_by_project)
        self.items_by_subproject = loader(self._items_by_subproject)
        self.case_by_id = loader(self._cases)
        self.case_by_item = loader(self._cases_by_item)
        self.states_by_case = loader(self._states_by_case)
        self.enabled_by_case = loader(self._enabled_by_case)
        self.enabled_action_by_id = loader(self._enabled_by_id)
        self.roles_by_case = loader(self._roles_by_case)
        self.workflow_by_id = loader(self._workflows)
        self.budgets_by_resource = loader(self._budgets)
        self.documents_by_item = loader(self._documents)
        self.grants_by_resource = loader(self._grants)
        self.intents_by_resource = loader(self._intents)
        self.history_by_resource = loader(self._history)
        self.members_by_group = loader(self._members)
        self.activity_by_id = loader(self._activities)

    async def _rows(self, query: Any) -> Sequence[Any]:
        """Plain Core rows: attribute access like a model, without ORM hydration."""
        return records(await self._ctx.session.execute(query))

    async def _parties(self, ids: list[str]) -> list[Any]:
        users = [i for i in ids if kind_of(i) == "User"]
        groups = [i for i in ids if kind_of(i) == "Group"]
        rows: list[Any] = []
        if users:
            rows += await self._rows(select(User.__table__).where(User.id.in_(users)))
        if groups:
            rows += await self._rows(select(Group.__table__).where(Group.id.in_(groups)))
        return _one(rows, ids, lambda r: r.id)

    async def _projects(self, ids: list[str]) -> list[Project | None]:
        actor = self._ctx.viewer
        rows = await self._rows(select(Project.__table__).where(Project.id.in_(ids), visibility.project_visible(actor)))
        return _one(rows, ids, lambda r: r.id)

    async def _subprojects(self, ids: list[str]) -> list[Subproject | None]:
        actor = self._ctx.viewer
        rows = await self._rows(
            select(Subproject.__table__).where(Subproject.id.in_(ids), visibility.subproject_visible(actor))
        )
        return _one(rows, ids, lambda r: r.id)

    async def _items(self, ids: list[str]) -> list[WorkflowItem | None]:
        actor = self._ctx.viewer
        rows = await self._rows(
            select(WorkflowItem.__table__).where(WorkflowItem.id.in_(ids), visibility.item_visible(actor))
        )
        return _one(rows, ids, lambda r: r.id)

    async def _subprojects_by_project(self, keys: list[tuple[str, ResourceFilterKey]]) -> list[list[Subproject]]:
        """Keys are (project id, filter); one query per distinct filter, all parents at once."""
        actor = self._ctx.viewer
        results: dict[tuple[str, ResourceFilterKey], list[Subproject]] = {}
        for filt in {f for _, f in keys}:
            parents = [p for p, f in keys if f == filt]
            query = select(Subproject.__table__).where(
                Subproject.project_id.in_(parents), visibility.subproject_visible(actor)
            )
            rows = await self._rows(apply_resource_filter(query, Subproject, filt).order_by(Subproject.id))
            for parent, group in zip(parents, _many(rows, parents, lambda r: r.project_id), strict=True):
                results[(parent, filt)] = group
        return [results[k] for k in keys]

    async def _items_by_subproject(
        self, keys: list[tuple[str, ResourceFilterKey, frozenset[str]]]
    ) -> list[list[WorkflowItem]]:
        """Visible items per subproject, unordered: the caller applies the subproject's ordering.
        The third part of a key says what the selection reads below the items (see lookahead):
        that is fetched for all of them at once, so nested fields resolve without awaiting."""
        actor = self._ctx.viewer
        results: dict[tuple[str, ResourceFilterKey, frozenset[str]], list[WorkflowItem]] = {}
        for filt, wants in {(f, w) for _, f, w in keys}:
            parents = [p for p, f, w in keys if f == filt and w == wants]
            query = select(WorkflowItem.__table__).where(
                WorkflowItem.subproject_id.in_(parents), visibility.item_visible(actor)
            )
            rows = await self._rows(apply_resource_filter(query, WorkflowItem, filt))
            for parent, group in zip(parents, _many(rows, parents, lambda r: r.subproject_id), strict=True):
                results[(parent, filt, wants)] = group
            if wants:
                await self.prefetch_for_items(rows, wants)
        return [results[k] for k in keys]

    async def prefetch_for_items(self, items: Sequence[Any], wants: frozenset[str]) -> None:
        """Load what the selection reads below these items, one query per relation, and prime
        the loaders with it."""
        item_ids = [i.id for i in items]
        party_ids = {i.assignee_id for i in items if i.assignee_id} if "parties" in wants else set()
        if "case" in wants or wants & {"states", "enabled", "roles"}:
            cases = await self._rows(select(Case.__table__).where(Case.object_id.in_(item_ids)))
            case_ids = [c.id for c in cases]
            for case in cases:
                self.case_by_item.prime(case.object_id, case)
                self.case_by_id.prime(case.id, case)
            workflow_ids = [w for w in {c.workflow_id for c in cases} if cached(self.workflow_by_id, w) is MISSING]
            if workflow_ids:
                for workflow in await self._workflows(workflow_ids):
                    self.workflow_by_id.prime(workflow.id, workflow)
            if "states" in wants:
                self.states_by_case.prime_many(dict(zip(case_ids, await self._states_by_case(case_ids), strict=True)))
            if "enabled" in wants:
                self.enabled_by_case.prime_many(dict(zip(case_ids, await self._enabled_by_case(case_ids), strict=True)))
            if "roles" in wants or "parties" in wants:
                roles = await self._roles_by_case(case_ids)
                self.roles_by_case.prime_many(dict(zip(case_ids, roles, strict=True)))
                if "parties" in wants:
                    party_ids |= {p for by_role in roles for parties in by_role.values() for p in parties}
        if "intents" in wants:
            self.intents_by_resource.prime_many(dict(zip(item_ids, await self._intents(item_ids), strict=True)))
        missing = [p for p in party_ids if cached(self.party_by_id, p) is MISSING]
        if missing:
            self.party_by_id.prime_many(dict(zip(missing, await self._parties(missing), strict=True)))

    async def _cases(self, ids: list[str]) -> list[Case | None]:
        return _one(await self._rows(select(Case.__table__).where(Case.id.in_(ids))), ids, lambda r: r.id)

    async def _cases_by_item(self, ids: list[str]) -> list[Case | None]:
        rows = await self._rows(select(Case.__table__).where(Case.object_id.in_(ids)))
        for case in rows:  # prime the other key, so Case fields reached by id cost nothing
            self.case_by_id.prime(case.id, case)
        return _one(rows, ids, lambda r: r.object_id)

    async def _states_by_case(self, ids: list[str]) -> list[list[CaseState]]:
        rows = await self._rows(select(CaseState.__table__).where(CaseState.case_id.in_(ids)).order_by(CaseState.scope))
        return _many(rows, ids, lambda r: r.case_id)

    async def _enabled_by_case(self, ids: list[str]) -> list[list[EnabledAction]]:
        rows = await self._rows(
            select(EnabledAction.__table__)
            .where(EnabledAction.case_id.in_(ids), EnabledAction.status == "ENABLED")
            .order_by(EnabledAction.enabled_at, EnabledAction.id)
        )
        return _many(rows, ids, lambda r: r.case_id)

    async def _enabled_by_id(self, ids: list[str]) -> list[EnabledAction | None]:
        return _one(
            await self._rows(select(EnabledAction.__table__).where(EnabledAction.id.in_(ids))), ids, lambda r: r.id
        )

    async def _roles_by_case(self, ids: list[str]) -> list[dict[str, list[str]]]:
        rows = (
            await self._ctx.session.execute(
                select(CaseRoleParty.case_id, CaseRoleParty.role, CaseRoleParty.party_id)
                .where(CaseRoleParty.case_id.in_(ids))
                .order_by(CaseRoleParty.party_id)
            )
        ).all()
        result: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for case_id, role, party in rows:
            result[case_id][role].append(party)
        return [dict(result.get(i, {})) for i in ids]

    async def _workflows(self, ids: list[str]) -> list[Workflow | None]:
        return _one(await self._rows(select(Workflow.__table__).where(Workflow.id.in_(ids))), ids, lambda r: r.id)

    async def _budgets(self, ids: list[str]) -> list[list[ProjectedBudget]]:
        rows = await self._rows(
            select(ProjectedBudget.__table__)
            .where(ProjectedBudget.resource_id.in_(ids))
            .order_by(ProjectedBudget.organization, ProjectedBudget.currency)
        )
        return _many(rows, ids, lambda r: r.resource_id)

    async def _documents(self, ids: list[str]) -> list[list[Document]]:
        rows = await self._rows(
            select(Document.__table__).where(Document.workflow_item_id.in_(ids)).order_by(Document.id)
        )
        return _many(rows, ids, lambda r: r.workflow_item_id)

    async def _grants(self, ids: list[str]) -> list[dict[str, list[str]]]:
        rows = (
            await self._ctx.session.execute(
                select(Permission.resource_id, Permission.intent, Permission.party_id)
                .where(Permission.resource_id.in_(ids))
                .order_by(Permission.intent, Permission.party_id)
            )
        ).all()
        result: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for resource_id, intent, party in rows:
            result[resource_id][intent].append(party)
        return [dict(result.get(i, {})) for i in ids]

    async def _intents(self, ids: list[str]) -> list[frozenset[str]]:
        """The viewer's own intents on each resource (admins hold them all)."""
        actor = self._ctx.viewer
        if actor.is_admin:
            return [frozenset(intents_for(i)) for i in ids]
        rows = (
            await self._ctx.session.execute(
                select(Permission.resource_id, Permission.intent).where(
                    Permission.resource_id.in_(ids), Permission.party_id.in_(actor.party_ids)
                )
            )
        ).all()
        result: dict[str, set[str]] = defaultdict(set)
        for resource_id, intent in rows:
            result[resource_id].add(intent)
        return [frozenset(result.get(i, ())) for i in ids]

    async def _history(self, keys: list[tuple[str, str, HistoryFilterKey]]) -> list[tuple[list[Activity], int]]:
        """Keys are (column, resource id, filter incl. page args): for each distinct
        (column, filter), one windowed query returns the page of every resource at once."""
        results: dict[tuple[str, str, HistoryFilterKey], tuple[list[Activity], int]] = {}
        for column_name, filt in {(c, f) for c, _, f in keys}:
            ids = [r for c, r, f in keys if c == column_name and f == filt]
            column = getattr(Activity, column_name)
            counts = dict(
                (
                    await self._ctx.session.execute(
                        apply_history_filter(
                            select(column, func.count()).where(column.in_(ids)), filt, with_cursor=False
                        ).group_by(column)
                    )
                ).all()
            )
            ranked = apply_history_filter(
                select(Activity, func.row_number().over(partition_by=column, order_by=Activity.seq).label("rn")).where(
                    column.in_(ids)
                ),
                filt,
                with_cursor=True,
            ).subquery()
            entry = aliased(Activity, ranked)
            rows = (
                await self._ctx.session.scalars(select(entry).where(ranked.c.rn <= filt.limit + 1).order_by(entry.seq))
            ).all()
            for rid, group in zip(ids, _many(rows, ids, lambda r, c=column_name: getattr(r, c)), strict=True):
                results[(column_name, rid, filt)] = (group, counts.get(rid, 0))
        return [results[k] for k in keys]

    async def _activities(self, ids: list[str]) -> list[Activity | None]:
        return _one(await self._rows(select(Activity.__table__).where(Activity.id.in_(ids))), ids, lambda r: r.id)

    async def _members(self, ids: list[str]) -> list[list[User]]:
        rows = (
            await self._ctx.session.execute(
                select(GroupMember.group_id, User)
                .join(User, User.id == GroupMember.user_id)
                .where(GroupMember.group_id.in_(ids))
                .order_by(User.login)
            )
        ).all()
        grouped: dict[str, list[User]] = defaultdict(list)
        for group_id, user in rows:
            grouped[group_id].append(user)
        return [grouped.get(i, []) for i in ids]
