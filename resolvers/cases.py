"""Reading cases: their spec, state, enabled actions and the viewer's task list."""

from collections.abc import Callable
from typing import Any

from sqlalchemy import JSON, literal, select

from engine.cases import EXECUTABLE_STATUSES, may_perform
from engine.spec.specs import RoleSpec
from engine.spec.workflows import spec_of
from models import Case, EnabledAction
from resolvers.context import Context
from resolvers.loaders import MISSING, cached, with_loaded
from resolvers.pagination import Page, check_first, check_id_cursor, keyset_page
from resolvers.records import records
from resolvers.task_order import id_range, lent_rows, party_rows, task_total, viewer_tasks


def _user_only(rows: list[EnabledAction]) -> list[EnabledAction]:
    return [ea for ea in rows if ea.trigger == "user"]


# Each field is written once, over loaded values (see ``with_loaded``): it answers at once from
# what a page prefetch put in the loaders, and awaits the loads only when something is missing.


def states(ctx: Context, case: Case) -> Any:
    """The state of every running scope of the case, top level first (a child scope runs while
    the instance owning it is ENABLED)."""
    loaders = ctx.loaders
    return with_loaded(
        [(loaders.workflow_by_id, case.workflow_id), (loaders.states_by_case, case.id)],
        lambda workflow, rows: [
            spec_of(workflow).states[row.state] for row in rows if row.owner_status in (None, "ENABLED")
        ],
    )


def scope_status(case: Case, state: Any, owner_status: str | None) -> str:
    """A scope's status, as a case status: the top level's is its case's; a child scope is
    CANCELED when its owner was, COMPLETED in a terminal state (or once its owner completed),
    else ACTIVE (SUSPENDED with its case)."""
    if owner_status is None:
        return case.status
    if owner_status == "CANCELED":
        return "CANCELED"
    if owner_status == "COMPLETED" or state.terminal:
        return "COMPLETED"
    return "SUSPENDED" if case.status == "SUSPENDED" else "ACTIVE"


def scopes(ctx: Context, case: Case, make: Callable[[Any, Any, str], Any]) -> Any:
    """Every scope of the case, top level first, finished ones too: ``make(scope, state,
    status)``, scope '' for the top level, else the id of the instance owning it."""
    loaders = ctx.loaders
    return with_loaded(
        [(loaders.workflow_by_id, case.workflow_id), (loaders.states_by_case, case.id)],
        lambda workflow, rows: [
            make(row.scope, state, scope_status(case, state, row.owner_status))
            for row in rows
            for state in (spec_of(workflow).states[row.state],)
        ],
    )


def state(ctx: Context, case: Case) -> Any:
    loaders = ctx.loaders
    return with_loaded(
        [(loaders.workflow_by_id, case.workflow_id), (loaders.states_by_case, case.id)],
        lambda workflow, rows: spec_of(workflow).states[rows[0].state],  # rows are ordered by scope; "" first
    )


def enabled_actions(ctx: Context, case: Case) -> Any:
    return with_loaded([(ctx.loaders.enabled_by_case, case.id)], _user_only)


def timers(ctx: Context, case: Case) -> Any:
    """The case's timed instances, soonest first: from the rows ``enabledActions`` reads too."""
    return with_loaded(
        [(ctx.loaders.enabled_by_case, case.id)],
        lambda rows: sorted((ea for ea in rows if ea.fire_at is not None), key=lambda ea: (ea.fire_at, ea.id)),
    )


def my_actions(ctx: Context, case: Case) -> Any:
    if case.status not in EXECUTABLE_STATUSES:  # suspended: its instances wait, but nobody may act now
        return []
    loaders, viewer = ctx.loaders, ctx.viewer
    return with_loaded(
        [
            (loaders.workflow_by_id, case.workflow_id),
            (loaders.enabled_by_case, case.id),
            (loaders.roles_by_case, case.id),
            (loaders.intents_by_resource, case.object_id),
            (loaders.standing_in_by_user, viewer.user_id),
        ],
        lambda workflow, enabled, roles, held, absent: [
            ea
            for ea in _user_only(enabled)
            if may_perform(spec_of(workflow), roles, ea, viewer, held)
            # as a deputy: the absent user's assignments and roles (engine.cases.execute's rule)
            or any(may_perform(spec_of(workflow), roles, ea, a, ()) for a in absent)
        ],
    )


def roles(ctx: Context, case: Case, make: Callable[[RoleSpec, list[str], Case], Any]) -> Any:
    """Every role of the workflow, ``make(role, party ids, case)`` for each."""
    loaders = ctx.loaders
    return with_loaded(
        [(loaders.workflow_by_id, case.workflow_id), (loaders.roles_by_case, case.id)],
        lambda workflow, played: [
            make(role, played.get(name, []), case) for name, role in spec_of(workflow).roles.items()
        ],
    )


def parties(ctx: Context, party_ids: list[str]) -> Any:
    return with_loaded(
        [(ctx.loaders.party_by_id, p) for p in party_ids], lambda *found: [p for p in found if p is not None]
    )


def assignees(ctx: Context, instance: EnabledAction) -> Any:
    """The party the instance is assigned to, else the players of its role where it is assigned."""
    if instance.assignee_party_id:
        return parties(ctx, [instance.assignee_party_id])
    if not instance.assigned_role:
        return []
    role = instance.assigned_role
    return with_loaded(
        [(ctx.loaders.roles_by_case, instance.case_id)], lambda played: parties(ctx, played.get(role, []))
    )


def action(ctx: Context, instance: EnabledAction) -> Any:
    """The instance's action in its case's workflow: a nested read asks this of every enabled
    instance, whose case and workflow the page's prefetch already holds, so that is tried
    first, without the closures of the general way."""
    loaders = ctx.loaders
    case = cached(loaders.case_by_id, instance.case_id)
    workflow = MISSING if case is MISSING else cached(loaders.workflow_by_id, case.workflow_id)
    if workflow is not MISSING:
        return spec_of(workflow).actions[instance.action]
    return with_loaded(
        [(loaders.case_by_id, instance.case_id)],
        lambda case: with_loaded(
            [(loaders.workflow_by_id, case.workflow_id)], lambda workflow: spec_of(workflow).actions[instance.action]
        ),
    )


async def case_of(ctx: Context, instance: EnabledAction) -> Case | None:
    """An enabled instance's case, if the viewer may see it (hidden ≡ missing: a task may be
    assigned to someone who may not see its item)."""
    return await visible_case(ctx, await ctx.loaders.case_by_id.load(instance.case_id))


async def visible_case(ctx: Context, case: Case | None) -> Case | None:
    """A case is visible exactly when its workflow item is."""
    if case is None or await ctx.loaders.item_by_id.load(case.object_id) is None:
        return None
    return case


async def my_tasks(ctx: Context, *, first: int | None, after: str | None, counted: bool = True) -> Page[EnabledAction]:
    """Enabled USER actions assigned to the viewer (directly or through a role), oldest first,
    in cases where an action can run now (``EXECUTABLE_STATUSES``): read from the task index
    (engine/cases/task_index.py), never from the instances. Each of the viewer's parties (the user and
    their groups) is a range of the index's key, read past the cursor up to one page, and so are
    the parties of the absent users the viewer stands in for now (engine/people/deputies.py: such a
    row carries ``on_behalf_of``, unless the task is the viewer's own too); the page is the first
    ids of their union, once each (a user and their group can both be assigned: both rules are
    ``resolvers.task_order.viewer_tasks``), joined to their instances in the same statement.
    So a page costs the same for a user with no task and one with a million. ``counted``:
    ``totalCount`` was selected; it is read from the parties' kept counts (``resolvers.task_order.task_total``)."""
    limit = check_first(first)
    cursor = check_id_cursor(after)
    viewer = ctx.viewer
    postgres = ctx.session.bind.dialect.name == "postgresql"
    own, lent = party_rows(literal(sorted(viewer.party_ids), JSON()), postgres), lent_rows(viewer.user_id)
    found = viewer_tasks(own, lent, id_range(postgres, cursor, limit + 1))
    ids = found.order_by(found.selected_columns.id).limit(limit + 1).subquery("page_ids")
    query = (
        select(EnabledAction.__table__, ids.c.behalf.label("on_behalf_of"))
        .join(ids, ids.c.id == EnabledAction.id)
        .order_by(EnabledAction.id)
    )
    rows = records(await ctx.session.execute(query))
    total = None
    if counted:
        total = await ctx.session.scalar(select(task_total(own, lent, postgres))) or 0
    return keyset_page(rows, limit=limit, total=total, cursor=lambda r: r.id)  # type: ignore[arg-type]
