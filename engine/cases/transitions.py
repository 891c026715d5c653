"""How a case moves: fire one enabled instance, recompute what is enabled, assign defaults,
and run automatic actions. Used by ``engine.cases``."""

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.cases import assignment, case_fields, case_rules, children, scopes, webhooks
from engine.cases.conditions import EnableCheck
from engine.cases.context import CaseContext, new_instance, note_move, state_row
from engine.cases.side_effects import Execution
from engine.errors import DomainError, ErrorCode
from engine.history import activity, visits
from engine.jobs import outbox
from engine.notify import notifications
from engine.people.actors import SYSTEM, Actor
from engine.registry import enable_conditions, on_fire_callbacks, side_effects
from engine.spec.specs import ActionSpec
from engine.tree import ordering
from engine.tree.resources import require_open_to_reopen
from models import EnabledAction, User, new_id, unit_of_work

MAX_AUTOMATIC_STEPS = 100


@dataclass
class Recomputed:
    enabled: list[EnabledAction] = field(default_factory=list)  # children of enabled parents too
    canceled: list[EnabledAction] = field(default_factory=list)
    closed: int = 0  # children of canceled parents closed with them


async def fire(
    ctx: CaseContext,
    instance: EnabledAction,
    spec_action: ActionSpec,
    *,
    actor: Actor,
    comment: str | None,
    values: dict[str, Any],
    now: datetime,
    output: str | None = None,
    resolution: str | None = None,
    decision: dict[str, Any] | None = None,
    notified: set[str] | None = None,
    changes: dict[str, dict[str, Any]] | None = None,
) -> activity.LogEntry:
    """Complete one instance: change its scope's state, log it, run side effects, re-enable.
    ``output`` is the caller's choice among the action's outputs (an ``on_fire`` callback may
    choose instead); ``resolution`` a code the caller has checked against its resolutions.
    A parent firing (engine.cases.children) passes the ``decision`` its entry names and who heard of
    the child's completion (``notified``), and closes its still running children. The children
    of a parallel or dynamic parent without states live in a scope without state: completing
    one changes no state."""
    scope = instance.scope
    from_state = ctx.states.get(scope)
    execution = Execution(ctx=ctx, action=spec_action, actor=actor, values=values, output=output, resolution=resolution)
    if changes:  # set before the routes, which read them; logged as {name: {from, to}}
        ctx.case.fields = case_fields.apply(ctx.spec, ctx.case.fields or {}, changes)
        execution.log_data["fields"] = changes
    to_state = from_state if from_state is None else await new_state(execution, from_state)
    if scope == "" and ctx.spec.states[to_state].terminal and not ctx.spec.states[from_state].terminal:
        await ordering.require_previous_items_closed(ctx.session, item=ctx.item, subproject=ctx.subproject)
    elif scope == "" and ctx.spec.states[from_state].terminal and not ctx.spec.states[to_state].terminal:
        await require_open_to_reopen(ctx.session, subproject_id=ctx.subproject.id)
    instance.status, instance.completed_at = "COMPLETED", now
    if actor.user_id != SYSTEM.user_id:  # who executed it; none for the system (a timer's firing writes no more)
        instance.executed_by = actor.user_id
    if spec_action.children:
        execution.log_data["children"] = await scopes.count_children(ctx, instance)
        scopes.close_descendants(ctx, [instance], now)
    if ctx.spec.has_children:  # a parent fired or disabled here closes its child scopes' visits
        visits.scopes_may_close(ctx.session, case_id=ctx.case.id)
    if decision is not None:
        execution.log_data["condition"] = decision
    if to_state != from_state:
        state_row(ctx, scope).state = to_state  # no read: load_case read it (or this transaction added it)
        ctx.states[scope] = to_state
        note_move(ctx, scope, from_state, to_state, spec_action.short_name, now)
    ctx.case.version += 1
    recomputed = Recomputed() if from_state is None else await recompute(ctx, scope, now)
    execution.log_data.update({"from": from_state, "to": to_state})
    if execution.output is not None:
        execution.log_data["output"] = execution.output
    if resolution is not None:
        execution.log_data["resolution"] = resolution
    if values:
        execution.log_data["values"] = values
    registry = side_effects()
    for name in (*spec_action.side_effects, *ctx.spec.side_effects):
        await registry[name](execution)
    if recomputed.canceled:
        execution.log_data["canceled"] = sorted({ea.action for ea in recomputed.canceled})
    if recomputed.closed:
        execution.log_data["closedChildren"] = recomputed.closed
    entry = await activity.record(
        ctx.session,
        kind="action_executed",
        actor_id=actor.user_id,
        about=ctx.item,
        case_id=ctx.case.id,
        action=spec_action.short_name,
        comment=comment,
        data=execution.log_data,
        at=now,
        title=await _title(ctx, spec_action, actor, to_state or "", resolution),
    )
    if spec_action.jobs or ctx.spec.jobs:  # the outbox: jobs commit (or roll back) with the action
        made = await outbox.enqueue(ctx, entry, (*spec_action.jobs, *ctx.spec.jobs), now)
        await webhooks.attach_payloads(  # what each receiver is told, as this transaction knows it
            ctx,
            made,
            entry,
            action=spec_action,
            actor=actor,
            from_state=from_state,
            to_state=to_state,
            output=execution.output,
            resolution=resolution,
            changes=changes,
        )
    old_status = ctx.case.status
    set_status_for_state(ctx)
    if ctx.case.status != old_status:
        await activity.record(
            ctx.session,
            kind="case_completed" if ctx.case.status == "COMPLETED" else "case_reopened",
            actor_id=actor.user_id,
            about=ctx.item,
            case_id=ctx.case.id,
            data={"state": to_state},
            at=now,
        )
    await after_enable(ctx, recomputed, now)
    heard = await notifications.notify(
        ctx, entry, assigned_parties=assigned_parties(ctx, recomputed.enabled), already=notified
    )
    await children.settle(ctx, instance, now, heard, fire=fire)  # a parent fires through this function
    return entry


async def new_state(execution: Execution, from_state: str) -> str:
    """The state the action leads to (outputs, docs/workflows.md): its ``new_state``
    (none: the state stays), or for an action with outputs the state of the output taken, which
    its ``on_fire`` callback picks (returning None keeps the caller's) or else the caller."""
    action = execution.action
    if action.routes:
        target, place = case_rules.route(execution.ctx, action, execution.actor, from_state)
        execution.log_data["route"] = place + 1
        return target
    if not action.outputs:
        return action.new_state or from_state
    if action.on_fire is not None:
        picked = await on_fire_callbacks()[action.on_fire](execution)
        if picked is not None:
            execution.output = picked
    target = None if execution.output is None else action.output_state(execution.output)
    if target is None:
        allowed = ", ".join(name for name, _ in action.outputs)
        raise DomainError(
            ErrorCode.INVALID_INPUT,
            f"{action.pretty_name} needs an output, one of: {allowed}."
            if execution.output is None
            else f"That is not an output of {action.pretty_name}; one of: {allowed}.",
            ["output"],
        )
    return target


async def _title(ctx: CaseContext, action: ActionSpec, actor: Actor, state: str, resolution: str | None) -> str | None:
    """The entry's title when the action declares one; the actor's name is read only then."""
    if action.log_title is None:
        return None
    name = "The system"
    if actor.user_id != SYSTEM.user_id and "{actor}" in action.log_title:
        user = await ctx.session.get(User, actor.user_id)
        name = user.display_name if user is not None else actor.login
    return case_rules.title(ctx, action, actor_name=name, state=state, resolution=resolution)


def assigned_parties(ctx: CaseContext, instances: Iterable[EnabledAction]) -> set[str]:
    """Who is expected to act on ``instances`` (those just enabled, or those a resumed case
    waits on): each one's own assignee, else the players of its assigned role."""
    parties: set[str] = set()
    for instance in instances:
        if instance.assignee_party_id:
            parties.add(instance.assignee_party_id)
        elif instance.assigned_role:
            parties |= ctx.roles.get(instance.assigned_role, set())
    return parties


def set_status_for_state(ctx: CaseContext) -> None:
    terminal = ctx.spec.states[ctx.states[""]].terminal
    if terminal and ctx.case.status == "ACTIVE":
        ctx.case.status = "COMPLETED"
    elif not terminal and ctx.case.status == "COMPLETED":
        ctx.case.status = "ACTIVE"


# Built once: every executed action runs it.
_ENABLED_IN_SCOPE = select(EnabledAction).where(
    EnabledAction.case_id == bindparam("case_id"),
    EnabledAction.scope == bindparam("scope"),
    EnabledAction.status == "ENABLED",
)


async def recompute(ctx: CaseContext, scope: str, now: datetime) -> Recomputed:
    """Bring the scope's enabled instances in line with its state: cancel what is no longer
    enabled, keep what still is (its timer keeps running), enable what newly is; the children
    of parents enabled or canceled here are started or closed with them (engine.cases.children)."""
    owner = None if scope == "" else await ctx.session.get(EnabledAction, scope)
    parent = None if owner is None else owner.action
    state = ctx.states[scope]
    wanted = {
        a.short_name: a
        for a in ctx.spec.scope_actions(parent)
        if a.trigger != "init" and a.is_enabled_in(state) and await _gates_open(ctx, a)
    }
    result = Recomputed()
    if ctx.enabled is not None:  # loaded by this operation: the same rows, without a round trip
        existing = [ea for ea in ctx.enabled if ea.scope == scope and ea.status == "ENABLED"]
    else:
        existing = list(await ctx.session.scalars(_ENABLED_IN_SCOPE, {"case_id": ctx.case.id, "scope": scope}))
    seen: set[str] = set()
    refused: dict[str, EnabledAction] | None = None
    held = {name for name, a in wanted.items() if a.enabled_when is None or case_rules.enabled(ctx, a, state)}
    for instance in existing:
        spec_action = wanted.get(instance.action)
        if spec_action is None or name_not_held(instance.action, held, spec_action):
            instance.status, instance.completed_at = "CANCELED", now
            result.canceled.append(instance)
            continue
        seen.add(instance.action)
        instance.assigned_role = spec_action.assigned_role if spec_action.is_assigned_in(state) else None
    for name, spec_action in wanted.items():
        if name in seen:
            continue
        if name not in held or (spec_action.enable_conditions and not await _conditions_allow(ctx, spec_action, scope)):
            if refused is None:
                refused = await _refused_in_scope(ctx, scope)
            _refuse(ctx, refused.get(name), spec_action, scope, now)
            continue
        instance = new_instance(ctx, spec_action, scope, now, assignee=owner.assignee_party_id if owner else None)
        instance.assigned_role = spec_action.assigned_role if spec_action.is_assigned_in(state) else None
        result.enabled.append(instance)
    if result.canceled:
        result.closed = children.disabled(ctx, result.canceled, now)
    if result.enabled and ctx.spec.has_children:  # which may recompute their scopes: handed down
        result.enabled += await children.enabled(ctx, result.enabled, now, recompute=recompute)
    return result  # flushed with the operation's other writes (by its next read, or at commit)


def name_not_held(name: str, held: set[str], action: ActionSpec) -> bool:
    """An enabled instance whose enabled_when no longer holds (its fields changed) is canceled."""
    return action.enabled_when is not None and name not in held


# Built once: gating counts, per dependency, in workflows that use depends_on.
_COMPLETED_COUNT = select(func.count(EnabledAction.id)).where(
    EnabledAction.case_id == bindparam("case_id"),
    EnabledAction.action == bindparam("action"),
    EnabledAction.status == "COMPLETED",
)
_REFUSED_IN_SCOPE = select(EnabledAction).where(
    EnabledAction.case_id == bindparam("case_id"),
    EnabledAction.scope == bindparam("scope"),
    EnabledAction.status == "REFUSED",
)


async def _gates_open(ctx: CaseContext, action: ActionSpec) -> bool:
    """Gating (depends_on): each dependency has completed at least min and at
    most max times. A dependency on the action itself caps its runs: enabling it once more is
    allowed only while it has completed fewer than max times, so it runs at most max times."""
    if not action.depends_on:
        return True
    for dep, lo, hi in action.depends_on:
        done = await ctx.session.scalar(_COMPLETED_COUNT, {"case_id": ctx.case.id, "action": dep}) or 0
        if dep == action.short_name and hi is not None:
            hi -= 1
        if done < lo or (hi is not None and done > hi):
            return False
    return True


async def _conditions_allow(ctx: CaseContext, action: ActionSpec, scope: str) -> bool:
    """Ask the action's enable conditions , in order; the first refusal wins."""
    registered = enable_conditions()
    check = EnableCheck(ctx=ctx, action=action, scope=scope)
    for name in action.enable_conditions:
        if not await registered[name](check):
            return False
    return True


async def _refused_in_scope(ctx: CaseContext, scope: str) -> dict[str, EnabledAction]:
    """The scope's REFUSED instances by action: at most one each, the latest refusal, updated at
    each one after it (read only when a condition refuses)."""
    rows = await ctx.session.scalars(_REFUSED_IN_SCOPE, {"case_id": ctx.case.id, "scope": scope})
    return {row.action: row for row in rows}


def _refuse(ctx: CaseContext, instance: EnabledAction | None, action: ActionSpec, scope: str, now: datetime) -> None:
    """Record that the action's enable conditions refused it now: one REFUSED instance per action
    and scope, ``enabled_at`` its first refusal and ``completed_at`` its latest, so that a
    condition asked at every change of a long case adds no row per change. It is asked again at
    the next change; once allowed, a new ENABLED instance is made as for any action."""
    if instance is None:
        instance = EnabledAction(
            id=new_id("ea"),
            case_id=ctx.case.id,
            action=action.short_name,
            scope=scope,
            trigger=action.trigger,
            status="REFUSED",
            enabled_at=now,
        )
        ctx.session.add(instance)
    instance.completed_at = now


async def after_enable(ctx: CaseContext, recomputed: Recomputed, now: datetime) -> None:
    """Lazy default assignment: an empty role gets its defaults when an action naming it (as
    assigned or allowed role) first becomes enabled, so that e.g. a bug's submitter can comment
    from the start, while a role needed only later is resolved from the case as it is then."""
    for instance in recomputed.enabled:
        action = ctx.spec.actions[instance.action]
        for role in (action.assigned_role, *action.allowed_roles):
            if role is not None:
                await assignment.assign_defaults(ctx, role)


async def run_automatic(ctx: CaseContext, now: datetime) -> list[activity.LogEntry]:
    """Fire enabled AUTO actions (and timeouts of 0, and timers already due) one at a time, oldest
    first, until none is left; the entries of what fired."""
    if not ctx.spec.has_automatic:
        return []
    fired: list[activity.LogEntry] = []
    for _ in range(MAX_AUTOMATIC_STEPS):
        due = await ctx.session.scalar(
            select(EnabledAction)
            .where(
                EnabledAction.case_id == ctx.case.id,
                EnabledAction.status == "ENABLED",
                (EnabledAction.trigger == "auto") | (EnabledAction.fire_at <= now),
            )
            .order_by(func.coalesce(EnabledAction.fire_at, EnabledAction.enabled_at), EnabledAction.id)
            .limit(1)
        )
        if due is None:
            return fired
        fired.append(await fire_as_system(ctx, due, now))
    raise DomainError(
        ErrorCode.WORKFLOW_LOOP, f"Automatic actions fired {MAX_AUTOMATIC_STEPS} times in a row; the workflow loops."
    )


async def fire_as_system(ctx: CaseContext, instance: EnabledAction, now: datetime) -> activity.LogEntry:
    """Fire an instance nobody executes (AUTO, or its timer), through the path a user's takes. A
    timer's entry says which instance and when it was due, so its firing can be told and counted."""
    entry = await fire(ctx, instance, ctx.spec.actions[instance.action], actor=SYSTEM, comment=None, values={}, now=now)
    if instance.fire_at is not None:  # the entry is queued, hashed at commit: adding to it is safe
        entry.data["timer"] = {"enabledActionId": instance.id, "fireAt": instance.fire_at.isoformat()}
    return entry


def timer_written(session: AsyncSession, fire_at: datetime) -> None:
    """Record the timer in the transaction's unit of work: once it commits, the sweepers (which
    otherwise sleep until the timer they knew of) are told the earliest."""
    unit_of_work(session).timer_written(fire_at)


def written_timer(session: AsyncSession) -> datetime | None:
    """The earliest timer written in this transaction, if any."""
    return unit_of_work(session).timer_at
