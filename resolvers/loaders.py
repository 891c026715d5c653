"""DataLoaders: one per relation, created per request, one query per batch, results in key order."""

import asyncio
import inspect
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, TypeVar

from sqlalchemy import func, select
from sqlalchemy.orm import aliased
from strawberry.dataloader import DataLoader, DefaultCache

from engine import deputies
from engine.assignment import pick_lists
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
    NotificationDelivery,
    Permission,
    Project,
    ProjectedBudget,
    Subproject,
    User,
    Workflow,
    WorkflowItem,
    kind_of,
)
from models.db import among
from resolvers import child_pages, visibility
from resolvers import deputies as deputy_reads
from resolvers.child_pages import PageKey
from resolvers.filters import (
    HistoryFilterKey,
    apply_history_filter,
)
from resolvers.pagination import Page

if TYPE_CHECKING:
    from resolvers.context import Context

# Workflow rows by id, for the life of the process (see Loaders._workflows).
_DEFINITIONS: dict[str, Any] = {}

K = TypeVar("K")
V = TypeVar("V")


class KnownValues(DefaultCache[Any, Any]):
    """A loader cache that also keeps each value once it is loaded, so a field can take it
    with one dict lookup and no await (see ``cached``)."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        future = self.cache_map.get(key)
        if future is None and key in self.values:  # primed: the future is made when a load asks
            future = asyncio.get_running_loop().create_future()
            future.set_result(self.values[key])
            self.cache_map[key] = future
        return future

    def set(self, key: Any, value: Any) -> None:
        super().set(key, value)
        if value.done():
            self._record(key, value)
        else:
            value.add_done_callback(lambda future: self._record(key, future))

    def _record(self, key: Any, future: Any) -> None:
        if self.cache_map.get(key) is future and not future.cancelled() and future.exception() is None:
            self.values[key] = future.result()

    def delete(self, key: Any) -> None:
        super().delete(key)
        self.values.pop(key, None)

    def clear(self) -> None:
        super().clear()
        self.values.clear()


def prime(loader: DataLoader[Any, Any], values: Mapping[Any, Any]) -> None:
    """``DataLoader.prime_many`` without a future per key (a page prefetch primed 1,000 per
    read): the cache makes one only if a load asks for the key."""
    if loader.cache:
        known = loader.cache_map.values  # type: ignore[attr-defined]
        for key, value in values.items():
            known.setdefault(key, value)
    else:
        loader.prime_many(values)


def cached(loader: DataLoader[Any, Any], key: Any) -> Any:
    """The loader's value for ``key`` if it is already known, else ``MISSING`` (no await)."""
    return loader.cache_map.values.get(key, MISSING) if loader.cache else MISSING  # type: ignore[attr-defined]


MISSING: Any = object()
T = TypeVar("T")


def with_loaded(needs: Sequence[tuple[DataLoader[Any, Any], Any]], compute: Callable[..., Any]) -> Any:
    """``compute(*values)`` over the loaders' values for these keys: at once when every value is
    already known (the usual case after a page prefetch, so the field costs no await), else
    after awaiting the loads. ``compute`` may return another ``with_loaded`` for values that
    depend on these; graphql-core awaits whatever comes back awaitable."""
    values = []
    for loader, key in needs:
        value = cached(loader, key)
        if value is MISSING:
            return _after_loading(needs, compute)
        values.append(value)
    return compute(*values)


def one(loader: Any, key: str | None) -> Any:
    """A single related row (None for no key): the row itself when known, else its load."""
    if key is None:
        return None
    value = cached(loader, key)
    return loader.load(key) if value is MISSING else value


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


class PickListKey(NamedTuple):
    """One role of one case; the workflow id (of the case) names the role's allowed parties."""

    case_id: str
    workflow_id: str
    role: str


class Loaders:
    """Named ``<thing>_by_<key>``; every loader sees only what the viewer may see. Each is made
    when first used: a request (or a live event) uses a few of the twenty."""

    # loader name -> the method that loads a batch of its keys
    _LOAD_FUNCTIONS: ClassVar[dict[str, str]] = {
        "party_by_id": "_parties",
        "project_by_id": "_projects",
        "subproject_by_id": "_subprojects",
        "item_by_id": "_items",
        "subprojects_by_project": "_subprojects_by_project",
        "items_by_subproject": "_items_by_subproject",
        "item_page": "_item_pages",
        "case_by_id": "_cases",
        "case_by_item": "_cases_by_item",
        "states_by_case": "_states_by_case",
        "enabled_by_case": "_enabled_by_case",
        "enabled_action_by_id": "_enabled_by_id",
        "roles_by_case": "_roles_by_case",
        "pick_list_by_case_role": "_pick_lists",
        "workflow_by_id": "_workflows",
        "budgets_by_resource": "_budgets",
        "documents_by_item": "_documents",
        "document_by_id": "_documents_by_id",
        "grants_by_resource": "_grants",
        "intents_by_resource": "_intents",
        "history_by_resource": "_history",
        "members_by_group": "_members",
        "activity_by_id": "_activities",
        "job_by_id": "_jobs",
        "jobs_by_case": "_jobs_by_case",
        "delivery_by_user": "_deliveries",
        "deputyship_by_id": "_deputyships",
        "deputyships_by_user": "_deputyships_by_user",
        "deputyships_by_deputy": "_deputyships_by_deputy",
        "standing_in_by_user": "_standing_in",
    }
    party_by_id: DataLoader[str, Any]
    project_by_id: DataLoader[str, Any]
    subproject_by_id: DataLoader[str, Any]
    item_by_id: DataLoader[str, Any]
    subprojects_by_project: DataLoader[PageKey, Page[Any]]
    items_by_subproject: DataLoader[PageKey, Page[Any]]
    item_page: DataLoader[tuple[tuple[str, ...], frozenset[str]], list[Any]]
    case_by_id: DataLoader[str, Any]
    case_by_item: DataLoader[str, Any]
    states_by_case: DataLoader[str, Any]
    enabled_by_case: DataLoader[str, Any]
    enabled_action_by_id: DataLoader[str, Any]
    roles_by_case: DataLoader[str, Any]
    pick_list_by_case_role: DataLoader[PickListKey, list[str]]
    workflow_by_id: DataLoader[str, Any]
    budgets_by_resource: DataLoader[str, Any]
    documents_by_item: DataLoader[str, Any]
    document_by_id: DataLoader[str, Any]
    grants_by_resource: DataLoader[str, Any]
    intents_by_resource: DataLoader[str, Any]
    history_by_resource: DataLoader[Any, Any]
    members_by_group: DataLoader[str, Any]
    activity_by_id: DataLoader[str, Any]
    job_by_id: DataLoader[str, Any]
    jobs_by_case: DataLoader[str, list[Any]]
    delivery_by_user: DataLoader[str, list[Any]]
    deputyship_by_id: DataLoader[str, Any]
    deputyships_by_user: DataLoader[str, list[Any]]
    deputyships_by_deputy: DataLoader[str, list[Any]]
    standing_in_by_user: DataLoader[str, list[Any]]

    def __init__(
        self, ctx: "Context", *, cache: bool = True, known: Mapping[str, Mapping[Any, Any]] | None = None
    ) -> None:
        """``cache=False`` still batches the loads of one tick but remembers nothing: for
        subscriptions, whose context lives as long as the connection. ``known`` primes loaders
        by name (values already read, e.g. shared by the subscribers of a live event)."""
        self._ctx = ctx
        self._cache = cache
        self._known = known or {}
        # ``column IN (values)``, as one array parameter on PostgreSQL (see models.db.among)
        self._in: Callable[[Any, Any], Any] = (lambda c, v: c.in_(v)) if ctx.db.is_sqlite else among

    def __getattr__(self, name: str) -> DataLoader[Any, Any]:
        method = self._LOAD_FUNCTIONS.get(name)
        if method is None:
            raise AttributeError(name)
        made: DataLoader[Any, Any] = DataLoader(
            load_fn=getattr(self, method), cache=self._cache, cache_map=KnownValues()
        )
        if name in self._known:
            prime(made, self._known[name])
        setattr(self, name, made)  # found as a plain attribute from now on
        return made

    async def _rows(self, query: Any) -> Sequence[Any]:
        """Plain Core rows: attribute access like a model, without ORM hydration."""
        return await self._ctx.session.rows(query)

    async def _parties(self, ids: list[str]) -> list[Any]:
        users = [i for i in ids if kind_of(i) == "User"]
        groups = [i for i in ids if kind_of(i) == "Group"]
        rows: list[Any] = []
        if users:
            rows += await self._rows(select(User.__table__).where(self._in(User.id, users)))
        if groups:
            rows += await self._rows(select(Group.__table__).where(self._in(Group.id, groups)))
        return _one(rows, ids, lambda r: r.id)

    async def _projects(self, ids: list[str]) -> list[Project | None]:
        actor = self._ctx.viewer
        rows = await self._rows(
            select(Project.__table__).where(self._in(Project.id, ids), visibility.project_visible(actor))
        )
        return _one(rows, ids, lambda r: r.id)

    async def _subprojects(self, ids: list[str]) -> list[Subproject | None]:
        actor = self._ctx.viewer
        rows = await self._rows(
            select(Subproject.__table__).where(self._in(Subproject.id, ids), visibility.subproject_visible(actor))
        )
        return _one(rows, ids, lambda r: r.id)

    async def _items(self, ids: list[str]) -> list[WorkflowItem | None]:
        actor = self._ctx.viewer
        rows = await self._rows(
            select(WorkflowItem.__table__).where(self._in(WorkflowItem.id, ids), visibility.item_visible(actor))
        )
        return _one(rows, ids, lambda r: r.id)

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

    async def _cases(self, ids: list[str]) -> list[Case | None]:
        return _one(await self._rows(select(Case.__table__).where(self._in(Case.id, ids))), ids, lambda r: r.id)

    async def _cases_by_item(self, ids: list[str]) -> list[Case | None]:
        rows = await self._rows(select(Case.__table__).where(self._in(Case.object_id, ids)))
        prime(self.case_by_id, {case.id: case for case in rows})  # the other key: Case fields by id cost nothing
        return _one(rows, ids, lambda r: r.object_id)

    async def _states_by_case(self, ids: list[str]) -> list[list[Any]]:
        """Every FSM scope of each case, top level ('') first: (case_id, scope, state,
        owner_status), the status of the instance owning a child scope (None at the top level)."""
        owner = EnabledAction.__table__.c
        rows = await self._rows(
            select(*CaseState.__table__.c, owner.status.label("owner_status"))
            .outerjoin(EnabledAction.__table__, owner.id == CaseState.scope)
            .where(self._in(CaseState.case_id, ids))
            .order_by(CaseState.scope)
        )
        return _many(rows, ids, lambda r: r.case_id)

    async def _enabled_by_case(self, ids: list[str]) -> list[list[EnabledAction]]:
        rows = await self._rows(
            select(EnabledAction.__table__)
            .where(self._in(EnabledAction.case_id, ids), EnabledAction.status == "ENABLED")
            .order_by(EnabledAction.enabled_at, EnabledAction.id)
        )
        return _many(rows, ids, lambda r: r.case_id)

    async def _enabled_by_id(self, ids: list[str]) -> list[EnabledAction | None]:
        return _one(
            await self._rows(select(EnabledAction.__table__).where(self._in(EnabledAction.id, ids))),
            ids,
            lambda r: r.id,
        )

    async def _roles_by_case(self, ids: list[str]) -> list[dict[str, list[str]]]:
        rows = await self._rows(
            select(CaseRoleParty.case_id, CaseRoleParty.role, CaseRoleParty.party_id)
            .where(self._in(CaseRoleParty.case_id, ids))
            .order_by(CaseRoleParty.party_id)
        )
        result: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for case_id, role, party in rows:
            result[case_id][role].append(party)
        return [dict(result.get(i, {})) for i in ids]

    async def _pick_lists(self, keys: list[PickListKey]) -> list[list[str]]:
        """The party ids of each pick list (engine.assignment.pick_lists): one statement for
        every role of every case the request shows, not one per role."""
        workflow_ids = list(dict.fromkeys(k.workflow_id for k in keys))
        workflows = dict(zip(workflow_ids, await self._workflows(workflow_ids), strict=True))
        return await pick_lists(
            self._ctx.session,
            actor=self._ctx.viewer,
            wanted=[(k.case_id, k.role) for k in keys],
            workflows={k.case_id: workflows[k.workflow_id] for k in keys},
        )

    async def _workflows(self, ids: list[str]) -> list[Workflow | None]:
        """Definitions never change (a new version is a new row) and every viewer may read
        them: each is read once per process, not once per request that shows a state."""
        missing = [i for i in ids if i not in _DEFINITIONS]
        if missing:
            for row in await self._rows(select(Workflow.__table__).where(self._in(Workflow.id, missing))):
                _DEFINITIONS[row.id] = row
        return [_DEFINITIONS.get(i) for i in ids]

    async def _budgets(self, ids: list[str]) -> list[list[ProjectedBudget]]:
        rows = await self._rows(
            select(ProjectedBudget.__table__)
            .where(self._in(ProjectedBudget.resource_id, ids))
            .order_by(ProjectedBudget.organization, ProjectedBudget.currency)
        )
        return _many(rows, ids, lambda r: r.resource_id)

    async def _documents(self, ids: list[str]) -> list[list[Document]]:
        rows = await self._rows(
            select(Document.__table__).where(self._in(Document.workflow_item_id, ids)).order_by(Document.id)
        )
        return _many(rows, ids, lambda r: r.workflow_item_id)

    async def _documents_by_id(self, ids: list[str]) -> list[Document | None]:
        """Documents of items the viewer may see (hidden ≡ missing), removed ones included."""
        rows = await self._rows(
            select(Document.__table__)
            .join(WorkflowItem, WorkflowItem.id == Document.workflow_item_id)
            .where(self._in(Document.id, ids), visibility.item_visible(self._ctx.viewer))
        )
        return _one(rows, ids, lambda r: r.id)

    async def _grants(self, ids: list[str]) -> list[dict[str, list[str]]]:
        rows = await self._rows(
            select(Permission.resource_id, Permission.intent, Permission.party_id)
            .where(self._in(Permission.resource_id, ids))
            .order_by(Permission.intent, Permission.party_id)
        )
        result: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for resource_id, intent, party in rows:
            result[resource_id][intent].append(party)
        return [dict(result.get(i, {})) for i in ids]

    async def _intents(self, ids: list[str]) -> list[frozenset[str]]:
        """The viewer's own intents on each resource (admins hold them all)."""
        actor = self._ctx.viewer
        if actor.is_admin:
            return [frozenset(intents_for(i)) for i in ids]
        rows = await self._rows(
            select(Permission.resource_id, Permission.intent).where(
                self._in(Permission.resource_id, ids), Permission.party_id.in_(actor.party_ids)
            )
        )
        result: dict[str, set[str]] = defaultdict(set)
        for resource_id, intent in rows:
            result[resource_id].add(intent)
        return [frozenset(result.get(i, ())) for i in ids]

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
            grouped = _many(rows.all(), ids, lambda r, c=column_name: getattr(r, c))
            for rid, group in zip(ids, grouped, strict=True):
                total = counts.get(rid, 0) if counted else None
                results[(column_name, rid, filt, restricted, counted)] = (group, total)
        return [results[k] for k in keys]

    async def _activities(self, ids: list[str]) -> list[Activity | None]:
        """Entries the viewer may read (engine.visibility); the others read as missing."""
        readable = visibility.entry_readable(self._ctx.viewer)
        rows = await self._rows(select(Activity.__table__).where(self._in(Activity.id, ids), readable))
        return _one(rows, ids, lambda r: r.id)

    async def _jobs(self, ids: list[str]) -> list[Any]:
        from resolvers.jobs import jobs_by_id  # it builds on the context, which builds on this

        return await jobs_by_id(self._ctx, ids, self._in)

    async def _jobs_by_case(self, ids: list[str]) -> list[list[Any]]:
        from resolvers.jobs import jobs_by_case

        return await jobs_by_case(self._ctx, ids, self._in)

    async def _deliveries(self, ids: list[str]) -> list[list[Any]]:
        """Each user's delivery choices by level (engine/delivery.py): what they chose, in one query."""
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
        """The absent users each user stands in for now (engine/deputies.py), as actors: asked
        for the viewer alone, once per request."""
        return [await deputies.standing_in(self._ctx.session, user_id=i) for i in ids]

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
