"""Reading cases: their spec, state, enabled actions and the viewer's task list."""

from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import and_, exists, func, or_, select

from engine.cases import may_perform
from engine.specs import StateSpec, WorkflowSpec
from engine.workflows import spec_of
from models import Case, CaseRoleParty, EnabledAction
from resolvers.context import Context
from resolvers.loaders import MISSING, cached
from resolvers.pagination import Page, check_first, keyset_page
from resolvers.records import records


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
    query = select(EnabledAction.__table__).where(condition).order_by(EnabledAction.id).limit(limit + 1)
    if after:
        query = query.where(EnabledAction.id > after)
    rows = records(await ctx.session.execute(query))
    return keyset_page(rows, limit=limit, total=total, cursor=lambda r: r.id)


# Synchronous versions: answer from what the loaders already hold (prefetched for a whole page
# of items), or MISSING, in which case the field falls back to the async version. A field that
# needs no await costs graphql-core a plain function call instead of a task switch.


def now_or_later(now: Any, later: Callable[[], Awaitable[Any]]) -> Any:
    return later() if now is MISSING else now


def states_now(ctx: Context, case: Case) -> list[StateSpec] | Any:
    workflow = cached(ctx.loaders.workflow_by_id, case.workflow_id)
    rows = cached(ctx.loaders.states_by_case, case.id)
    if workflow is MISSING or rows is MISSING:
        return MISSING
    spec = spec_of(workflow)
    return [spec.states[row.state] for row in rows]


def enabled_actions_now(ctx: Context, case: Case) -> list[EnabledAction] | Any:
    rows = cached(ctx.loaders.enabled_by_case, case.id)
    return MISSING if rows is MISSING else [ea for ea in rows if ea.trigger == "user"]


def spec_now(ctx: Context, case: Case) -> WorkflowSpec | Any:
    workflow = cached(ctx.loaders.workflow_by_id, case.workflow_id)
    return MISSING if workflow is MISSING else spec_of(workflow)


def parties_now(ctx: Context, party_ids: list[str]) -> list[Any] | Any:
    found = [cached(ctx.loaders.party_by_id, p) for p in party_ids]
    return MISSING if any(p is MISSING for p in found) else [p for p in found if p is not None]


async def parties(ctx: Context, party_ids: list[str]) -> list[Any]:
    return [p for p in await ctx.loaders.party_by_id.load_many(party_ids) if p is not None]


def assignees_now(ctx: Context, instance: EnabledAction) -> list[Any] | Any:
    if instance.assignee_party_id:
        return parties_now(ctx, [instance.assignee_party_id])
    if not instance.assigned_role:
        return []
    roles = cached(ctx.loaders.roles_by_case, instance.case_id)
    return MISSING if roles is MISSING else parties_now(ctx, roles.get(instance.assigned_role, []))


def action_now(ctx: Context, instance: EnabledAction) -> Any:
    case = cached(ctx.loaders.case_by_id, instance.case_id)
    spec = MISSING if case is MISSING or case is None else spec_now(ctx, case)
    return MISSING if spec is MISSING else spec.actions[instance.action]


async def action(ctx: Context, instance: EnabledAction) -> Any:
    case = await ctx.loaders.case_by_id.load(instance.case_id)
    return (await spec_for_case(ctx, case)).actions[instance.action]


def my_actions_now(ctx: Context, case: Case) -> list[EnabledAction] | Any:
    spec, enabled = spec_now(ctx, case), enabled_actions_now(ctx, case)
    roles = cached(ctx.loaders.roles_by_case, case.id)
    held = cached(ctx.loaders.intents_by_resource, case.object_id)
    if MISSING in (spec, enabled, roles, held):
        return MISSING
    return [ea for ea in enabled if may_perform(spec, roles, ea, ctx.viewer, held)]
