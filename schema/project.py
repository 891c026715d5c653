"""Projects and subprojects as clients read them."""

from dataclasses import replace
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Annotated

import strawberry

from engine.people.inheritance import Holding
from models import kind_of
from resolvers import resources
from resolvers.child_pages import PageKey
from resolvers.filters import ResourceFilterKey
from resolvers.loaders import one
from resolvers.lookahead import item_prefetch, selects
from resolvers.pagination import check_first, check_id_cursor
from schema.activity import ActivityConnection, HistoryFilter, activity_connection
from schema.base import JSON, AppInfo, Connection, Node, by_id_prefix, connection
from schema.execution import context_only
from schema.identity import Party

if TYPE_CHECKING:
    from schema.item import WorkflowItem
    from schema.workflow import Workflow


@strawberry.enum
class ResourceStatus(Enum):
    OPEN = "OPEN"
    CLOSED = "CLOSED"


@strawberry.enum(description="ORDERED: an item may not close while an item before it is open.")
class WorkflowMode(Enum):
    ORDERED = "ORDERED"
    UNORDERED = "UNORDERED"


@strawberry.input
class ProjectFilter:
    status: ResourceStatus | None = None
    tag: str | None = None
    search: str | None = strawberry.field(default=None, description="Text the display name contains.")

    def key(self) -> ResourceFilterKey:
        return ResourceFilterKey(status=self.status.value if self.status else None, tag=self.tag, search=self.search)


def filter_key(filter: "ProjectFilter | None") -> ResourceFilterKey:
    return filter.key() if filter else ResourceFilterKey()


@strawberry.type(description="Planned money per organization and currency.")
class ProjectedBudget:
    organization: str
    currency: str
    value: str


@strawberry.type(description="One party's hold of an intent on a resource: made there, or reaching it from above.")
class PermissionHolder:
    inherited: bool = strawberry.field(
        description="Whether the party holds the intent by a grant on a project or subproject above "
        "that reaches down (grantPermission with inherit), not by one made here."
    )
    reaches_down: bool = strawberry.field(
        description="Whether this grant, made here, also holds on everything below this resource, "
        "now and later (revoke it with inherit: true)."
    )

    @strawberry.field(description="The user or group holding the intent.")
    @context_only
    async def party(self, info: AppInfo) -> Party:
        return self.found  # type: ignore[attr-defined]

    @strawberry.field(
        description="The project or subproject whose grant reaches here; null when the grant was "
        "made here, or when you may not see that resource."
    )
    @context_only
    async def inherited_from(self, info: AppInfo) -> strawberry.ID | None:
        source = self.source  # type: ignore[attr-defined]
        if source is None:
            return None
        loader = (
            info.context.loaders.project_by_id
            if kind_of(source) == "Project"
            else info.context.loaders.subproject_by_id
        )
        return source if await loader.load(source) is not None else None


@strawberry.type(description="The parties holding one intent on a resource.")
class PermissionGrant:
    intent: str

    @strawberry.field(description="Every party holding the intent here, once each, however it holds it.")
    @context_only
    async def parties(self, info: AppInfo) -> list[Party]:
        ids = list(dict.fromkeys(h.party_id for h in self.holdings))  # type: ignore[attr-defined]
        found = await info.context.loaders.party_by_id.load_many(ids)  # type: ignore[attr-defined]
        return [p for p in found if p is not None]

    @strawberry.field(description="Each party's hold of the intent: by party, made here before inherited.")
    @context_only
    async def holders(self, info: AppInfo) -> list[PermissionHolder]:
        holdings = self.holdings  # type: ignore[attr-defined]
        found = await info.context.loaders.party_by_id.load_many([h.party_id for h in holdings])
        result = []
        for holding, party in zip(holdings, found, strict=True):
            if party is not None:
                holder = PermissionHolder(inherited=holding.source is not None, reaches_down=holding.reaches)
                holder.found, holder.source = party, holding.source  # type: ignore[attr-defined]
                result.append(holder)
        return result


def grant_list(grants: "dict[str, list[Holding]] | None") -> list[PermissionGrant] | None:
    if grants is None:
        return None
    result = []
    for intent, holdings in grants.items():
        grant = PermissionGrant(intent=intent)
        grant.holdings = holdings  # type: ignore[attr-defined]
        result.append(grant)
    return result


async def history_connection(
    info: AppInfo, resource_id: str, first: int | None, after: str | None, filter: HistoryFilter | None
) -> ActivityConnection:
    f = filter or HistoryFilter()
    archived = await resources.archived(info.context, resource_id, after=after) if selects(info, "archived") else None
    return activity_connection(
        await resources.history(
            info.context,
            resource_id,
            first=first,
            after=after,
            kind=f.kind,
            actor_id=f.actor,
            since=f.from_,
            until=f.to,
            counted=selects(info, "totalCount"),
        ),
        archived,
    )


@strawberry.type
class ResourceFields:
    """Fields every project, subproject and workflow item has (mixed into each type)."""

    @strawberry.field(description="The intents you hold on this resource.")
    @context_only
    async def allowed_intents(self, info: AppInfo) -> list[str]:
        return await resources.allowed_intents(info.context, self.id)  # type: ignore[attr-defined]

    @strawberry.field(description="Every grant on this resource; null without the listPermissions intent.")
    @context_only
    async def permissions(self, info: AppInfo) -> list[PermissionGrant] | None:
        return grant_list(await resources.grants(info.context, self.id))  # type: ignore[attr-defined]

    @strawberry.field(description="The log of this resource and everything inside it, oldest first.")
    async def history(
        self, info: AppInfo, first: int | None = None, after: str | None = None, filter: HistoryFilter | None = None
    ) -> ActivityConnection:
        return await history_connection(info, self.id, first, after, filter)  # type: ignore[attr-defined]

    @strawberry.field
    @context_only
    def assignee(self, info: AppInfo) -> Party | None:
        return one(info.context.loaders.party_by_id, self.assignee_id)  # type: ignore[attr-defined]


@strawberry.type(description="The root of the resource tree: holds subprojects.")
class Project(ResourceFields, Node):
    display_name: str
    description: str
    status: ResourceStatus
    created_at: datetime
    tags: list[str]
    additional_data: JSON

    is_type_of = by_id_prefix("Project")

    @strawberry.field
    @context_only
    async def projected_budgets(self, info: AppInfo) -> list[ProjectedBudget]:
        return await info.context.loaders.budgets_by_resource.load(self.id)

    @strawberry.field
    async def subprojects(
        self, info: AppInfo, first: int | None = None, after: str | None = None, filter: ProjectFilter | None = None
    ) -> Connection["Subproject"]:
        key = PageKey(
            self.id, (), filter_key(filter), check_first(first), check_id_cursor(after), selects(info, "totalCount")
        )
        return connection(await info.context.loaders.subprojects_by_project.load(key))


@strawberry.type(description="A part of a project with its own currency, workflow and workflow items.")
class Subproject(ResourceFields, Node):
    display_name: str
    description: str
    status: ResourceStatus
    created_at: datetime
    currency: str
    workflow_mode: WorkflowMode
    tags: list[str]
    additional_data: JSON

    is_type_of = by_id_prefix("Subproject")

    @strawberry.field(description="The items this subproject's ordering lists, in order: those you may view.")
    @context_only
    async def workflow_item_ordering(self, info: AppInfo) -> list[strawberry.ID]:
        ids = list(self.workflow_item_ordering)  # the stored column: it may name items you may not view
        if not ids:
            return []
        found = await info.context.loaders.item_by_id.load_many(ids)
        return [strawberry.ID(i) for i, row in zip(ids, found, strict=True) if row is not None]

    @strawberry.field
    @context_only
    async def project(self, info: AppInfo) -> Project | None:
        return await info.context.loaders.project_by_id.load(self.project_id)  # type: ignore[attr-defined]

    @strawberry.field
    @context_only
    async def validator(self, info: AppInfo) -> Party | None:
        vid = self.validator_id  # type: ignore[attr-defined]
        return await info.context.loaders.party_by_id.load(vid) if vid else None

    @strawberry.field(
        description="Who may grant permissions on this subproject (by its own grants or ones reaching it "
        "from its project), each once: whom to ask for access to what is in it."
    )
    @context_only
    async def grantors(self, info: AppInfo) -> list[Party]:
        grants = await info.context.loaders.grants_by_resource.load(self.id)
        ids = list(dict.fromkeys(h.party_id for h in grants.get("subproject.intent.grantPermission", [])))
        found = await info.context.loaders.party_by_id.load_many(ids)
        return [p for p in found if p is not None]

    @strawberry.field(description="The workflow (and version) this subproject's items follow.")
    @context_only
    async def workflow(self, info: AppInfo) -> Annotated["Workflow", strawberry.lazy("schema.workflow")]:
        return await info.context.loaders.workflow_by_id.load(self.workflow_id)  # type: ignore[attr-defined]

    @strawberry.field
    @context_only
    async def projected_budgets(self, info: AppInfo) -> list[ProjectedBudget]:
        return await info.context.loaders.budgets_by_resource.load(self.id)

    @strawberry.field(description="Items in the subproject's ordering, then the rest by creation time.")
    async def workflow_items(
        self,
        info: AppInfo,
        first: int | None = None,
        after: str | None = None,
        filter: ProjectFilter | None = None,
    ) -> Connection[Annotated["WorkflowItem", strawberry.lazy("schema.item")]]:
        loaders = info.context.loaders
        ordering = tuple(self.workflow_item_ordering)
        key = PageKey(
            self.id,
            ordering,
            filter_key(filter),
            check_first(first),
            check_id_cursor(after),
            selects(info, "totalCount"),
        )
        page = await loaders.items_by_subproject.load(key)
        ids = tuple(row.id for row in page.nodes)
        rows = await loaders.item_page.load((ids, item_prefetch(info))) if ids else []
        return connection(replace(page, nodes=rows, cursors=[row.id for row in rows]))
