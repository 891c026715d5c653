"""Root query fields that are not a single relation: lists and node lookup."""

from typing import Any

from sqlalchemy import func, select

from engine.permissions import intent_prefix
from models import Activity, Project, User, Workflow, kind_of
from resolvers import visibility
from resolvers.cases import visible_case
from resolvers.context import Context
from resolvers.filters import ResourceFilterKey, apply_resource_filter
from resolvers.pagination import Page, check_first, keyset_page
from resolvers.records import records


async def projects(ctx: Context, *, first: int | None, after: str | None, filt: ResourceFilterKey) -> Page[Project]:
    limit = check_first(first)
    condition = (
        apply_resource_filter(select(Project.id), Project, filt)
        .where(visibility.project_visible(ctx.viewer))
        .whereclause
    )
    total = await ctx.session.scalar(select(func.count()).select_from(Project).where(condition)) or 0
    query = select(Project.__table__).where(condition).order_by(Project.id).limit(limit + 1)
    if after:
        query = query.where(Project.id > after)
    rows = records(await ctx.session.execute(query))
    return keyset_page(rows, limit=limit, total=total, cursor=lambda r: r.id)


async def workflows(ctx: Context, *, first: int | None, after: str | None) -> Page[Workflow]:
    """Every version of every workflow, oldest first."""
    limit = check_first(first)
    ctx.viewer  # noqa: B018 - authentication check
    total = await ctx.session.scalar(select(func.count()).select_from(Workflow)) or 0
    query = select(Workflow.__table__).order_by(Workflow.id).limit(limit + 1)
    if after:
        query = query.where(Workflow.id > after)
    rows = records(await ctx.session.execute(query))
    return keyset_page(rows, limit=limit, total=total, cursor=lambda r: r.id)


async def users(ctx: Context, *, first: int | None, after: str | None) -> Page[User]:
    limit = check_first(first)
    ctx.viewer  # noqa: B018 - authentication check
    total = await ctx.session.scalar(select(func.count()).select_from(User)) or 0
    query = select(User.__table__).order_by(User.id).limit(limit + 1)
    if after:
        query = query.where(User.id > after)
    return keyset_page(records(await ctx.session.execute(query)), limit=limit, total=total, cursor=lambda r: r.id)


async def node(ctx: Context, id: str) -> Any:
    """Any object by its global id, or None if it does not exist or the viewer may not see it."""
    loaders = ctx.loaders
    kind = kind_of(id)
    ctx.viewer  # noqa: B018 - authentication check
    if kind == "Project":
        return await loaders.project_by_id.load(id)
    if kind == "Subproject":
        return await loaders.subproject_by_id.load(id)
    if kind == "WorkflowItem":
        return await loaders.item_by_id.load(id)
    if kind in ("User", "Group"):
        return await loaders.party_by_id.load(id)
    if kind == "Workflow":
        return await loaders.workflow_by_id.load(id)
    if kind == "Case":
        return await visible_case(ctx, await loaders.case_by_id.load(id))
    if kind == "Activity":
        return await _activity(ctx, id)
    return None


async def _activity(ctx: Context, id: str) -> Activity | None:
    """An entry is visible to whoever may read the history it belongs to."""
    entry = await ctx.session.scalar(select(Activity).where(Activity.id == id))
    if entry is None:
        return None
    resource = entry.workflow_item_id or entry.subproject_id or entry.project_id
    if resource is None:
        return None
    held = await ctx.loaders.intents_by_resource.load(resource)
    if f"{intent_prefix(resource)}.viewHistory" in held:
        return entry
    if entry.case_id and await visible_case(ctx, await ctx.loaders.case_by_id.load(entry.case_id)):
        return entry
    return None
