"""Root query fields that are not a single relation: lists and node lookup."""

from typing import Any

from sqlalchemy import func, or_, select

from models import Group, Project, User, Workflow, kind_of
from resolvers import visibility
from resolvers.cases import visible_case
from resolvers.context import Context
from resolvers.filters import MAX_SEARCH, ResourceFilterKey, apply_resource_filter
from resolvers.pagination import Page, check_first, check_id_cursor, invalid_argument, keyset_page, past_id
from resolvers.records import records


async def _by_id(
    ctx: Context, model: Any, *, first: int | None, after: str | None, counted: bool, where: Any = None
) -> Page[Any]:
    """A keyset page of a table in id (= creation) order; the cursor is the id. Counted only
    when the selection asks for ``totalCount``: a count reads every matching row, the page only
    ``first`` of them (bench R5: 10,000 users counted to show 20)."""
    limit = check_first(first)
    count = select(func.count()).select_from(model)
    query = select(model.__table__).order_by(model.id).limit(limit + 1)
    if where is not None:
        count, query = count.where(where), query.where(where)
    if check_id_cursor(after):
        query = query.where(past_id(model.id, after))
    total = (await ctx.session.scalar(count) or 0) if counted else None
    return keyset_page(records(await ctx.session.execute(query)), limit=limit, total=total, cursor=lambda r: r.id)


async def projects(
    ctx: Context, *, first: int | None, after: str | None, filt: ResourceFilterKey, counted: bool = True
) -> Page[Project]:
    visible = visibility.project_visible(ctx.viewer)
    condition = apply_resource_filter(select(Project.id), Project, filt).where(visible).whereclause
    return await _by_id(ctx, Project, first=first, after=after, counted=counted, where=condition)


async def workflows(ctx: Context, *, first: int | None, after: str | None, counted: bool = True) -> Page[Workflow]:
    """Every version of every workflow, oldest first."""
    ctx.viewer  # noqa: B018 - authentication check
    return await _by_id(ctx, Workflow, first=first, after=after, counted=counted)


# Characters of users(search:) and groups(search:): a LIKE over every login and name.
MAX_PICKER_SEARCH = MAX_SEARCH


def _picker_search(search: str | None, *columns: Any) -> Any:
    """Rows one of whose ``columns`` contains ``search`` (case aside); None: every row."""
    if search is None:
        return None
    if len(search) > MAX_PICKER_SEARCH:
        raise invalid_argument(f"search is longer than {MAX_PICKER_SEARCH} characters.", "search")
    return or_(*(visibility.name_contains(c, search) for c in columns))


async def users(
    ctx: Context, *, first: int | None, after: str | None, search: str | None = None, counted: bool = True
) -> Page[User]:
    """Every user (names are no secret to anyone logged in): an assignee picker's list."""
    ctx.viewer  # noqa: B018 - authentication check
    where = _picker_search(search, User.login, User.display_name)
    return await _by_id(ctx, User, first=first, after=after, counted=counted, where=where)


async def groups(
    ctx: Context, *, first: int | None, after: str | None, search: str | None = None, counted: bool = True
) -> Page[Group]:
    """Every group, as ``users``."""
    ctx.viewer  # noqa: B018 - authentication check
    where = _picker_search(search, Group.name, Group.display_name)
    return await _by_id(ctx, Group, first=first, after=after, counted=counted, where=where)


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
        return await loaders.activity_by_id.load(id)
    if kind == "Job":
        return await loaders.job_by_id.load(id)
    if kind == "Document":
        return await loaders.document_by_id.load(id)
    if kind == "Deputyship":
        return await loaders.deputyship_by_id.load(id)
    return None
