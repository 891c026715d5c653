"""Reading cases: their spec, state, enabled actions and the viewer's task list."""

from typing import Any

from sqlalchemy import and_, exists, func, or_, select

from engine.cases import may_perform
from engine.specs import StateSpec, WorkflowSpec
from engine.workflows import spec_of
from models import Case, CaseRoleParty, EnabledAction
from resolvers.context import Context
from resolvers.pagination import Page, check_first, keyset_page


async def spec_for_case(ctx: Context, case: Case) -> WorkflowSpec:
    return spec_of(await ctx.loaders.workflow_by_id.load(case.workflow_id))


async def states(ctx: Context, case: Case) -> list[StateSpec]:
    spec = await spec_for_case(ctx, case)
    return [spec.states[row.state] for row in await ctx.loaders.states_by_case.load(case.id)]


async def enabled_actions(ctx: Context, case: Case) -> list[EnabledAction]:
    return [ea for ea in await ctx.loaders.enabled_by_case.load(case.id) if ea.trigger == "user"]


async def my_actions(ctx: Context, case: Case) -> list[EnabledAction]:
    spec = await spec_for_case(ctx, case)
    roles = await ctx.loaders.roles_by_case.load(case.id)
    held = await ctx.loaders.intents_by_resource.load(case.object_id)
    return [ea for ea in await enabled_actions(ctx, case) if may_perform(spec, roles, ea, ctx.viewer, held)]


async def assignees(ctx: Context, instance: EnabledAction) -> list[Any]:
    """The party the instance is assigned to, else the players of its role where it is assigned."""
    if instance.assignee_party_id:
        party_ids = [instance.assignee_party_id]
    elif instance.assigned_role:
        party_ids = (await ctx.loaders.roles_by_case.load(instance.case_id)).get(instance.assigned_role, [])
    else:
        return []
    return [p for p in await ctx.loaders.party_by_id.load_many(party_ids) if p is not None]


async def visible_case(ctx: Context, case: Case | None) -> Case | None:
    """A case is visible exactly when its workflow item is."""
    if case is None or await ctx.loaders.item_by_id.load(case.object_id) is None:
        return None
    return case


async def my_tasks(ctx: Context, *, first: int | None, after: str | None) -> Page[EnabledAction]:
    """Enabled USER actions assigned to the viewer (directly or through a role), oldest first."""
    limit = check_first(first)
    parties = ctx.viewer.party_ids
    through_role = exists().where(
        CaseRoleParty.case_id == EnabledAction.case_id,
        CaseRoleParty.role == EnabledAction.assigned_role,
        CaseRoleParty.party_id.in_(parties),
    )
    condition = and_(
        EnabledAction.status == "ENABLED",
        EnabledAction.trigger == "user",
        or_(
            EnabledAction.assignee_party_id.in_(parties),
            and_(EnabledAction.assignee_party_id.is_(None), EnabledAction.assigned_role.is_not(None), through_role),
        ),
    )
    total = await ctx.session.scalar(select(func.count()).select_from(EnabledAction).where(condition)) or 0
    query = select(EnabledAction).where(condition).order_by(EnabledAction.id).limit(limit + 1)
    if after:
        query = query.where(EnabledAction.id > after)
    rows = list((await ctx.session.scalars(query)).all())
    return keyset_page(rows, limit=limit, total=total, cursor=lambda r: r.id)
