"""Running child workflows: enabling a parent creates its
children, disabling it closes them, and a child's completion may fire its parent.

- ``enabled``/``disabled`` are called by ``transitions.recompute`` for the instances it just
  enabled or canceled, so every way a parent gets enabled (start of a case, an action, a timer,
  an automatic action, another parent firing) starts its children, recursively (specs nest at
  most four levels).
- ``settle`` is called by ``transitions.fire`` after an instance completed: when it belongs to a
  child scope, the owning parent's condition (``engine.cases.quorum``) is evaluated in the same
  transaction, under the case lock every change takes, and when it holds the parent fires, once,
  as the system actor, through the same ``fire`` (whose log entry names the condition and the
  counts, and which closes the parent's still running children).

The recursion between the two modules is explicit: ``transitions`` imports this module and hands
down the function to recurse through (``recompute`` to ``enabled``, ``fire`` to ``settle``);
this module never imports ``transitions``.
"""

import itertools
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select

from engine.cases import assignment, quorum, scopes
from engine.cases.context import CaseContext, new_instance
from engine.errors import DomainError, ErrorCode
from engine.history.activity import LogEntry
from engine.notify import notifications
from engine.people.actors import SYSTEM
from engine.spec.spec_checker import MAX_INSTANCES
from engine.spec.specs import ActionSpec
from models import EnabledAction

# transitions.recompute(ctx, scope, now): a child FSM's first enabled actions (a result with
# ``enabled``); transitions.fire(ctx, instance, action, **how): a parent firing, its entry.
Recompute = Callable[[CaseContext, str, datetime], Awaitable[Any]]
Fire = Callable[..., Awaitable[LogEntry]]


async def enabled(
    ctx: CaseContext, instances: list[EnabledAction], now: datetime, *, recompute: Recompute
) -> list[EnabledAction]:
    """Start the children of the parents among ``instances`` (a child workflow's FSM through
    ``recompute``); returns every instance created on the way (children, their children, ...),
    which their assignees hear of."""
    created: list[EnabledAction] = []
    for parent in list(instances):
        action = ctx.spec.actions[parent.action]
        if not action.children:
            continue
        if scopes.owns_fsm(ctx, parent):  # a workflow: its own FSM, started in its initial state
            scopes.start(ctx, parent)
            created += (await recompute(ctx, parent.id, now)).enabled
            continue
        parties = await _parties(ctx, action) if action.trigger == "dynamic" else [None]
        for party in parties:
            if action.has_scope:  # one child FSM per party: a scope row owns it
                row = new_instance(ctx, action, parent.id, now, trigger=scopes.SCOPE_TRIGGER, assignee=party)
                row.assigned_role = _whole_role(action, party)
                created.append(row)
                scopes.start(ctx, row)
                created += (await recompute(ctx, row.id, now)).enabled
                continue
            for child in (ctx.spec.actions[name] for name in action.children):
                if child.trigger == "init":
                    continue
                instance = new_instance(ctx, child, parent.id, now, assignee=party)
                instance.assigned_role = child.assigned_role or _whole_role(action, party)
                created.append(instance)
                created += await enabled(ctx, [instance], now, recompute=recompute)
    await ctx.session.flush()
    return created


def disabled(ctx: CaseContext, instances: list[EnabledAction], now: datetime) -> int:
    """Close the children of parents that were just disabled (another action moved their
    scope); returns how many rows were closed."""
    parents = [i for i in instances if ctx.spec.actions[i.action].children]
    return sum(scopes.close_descendants(ctx, parents, now)) if parents else 0


def _whole_role(action: ActionSpec, party: str | None) -> str | None:
    """A per_role instance is assigned to the whole role (the first per_role one)."""
    if party is not None:
        return None
    return next((role for role, mapping in action.for_each if mapping == "per_role"), None)


async def _parties(ctx: CaseContext, action: ActionSpec) -> list[str | None]:
    """One entry per instance to create: per_role gives one
    (None: the whole role), per_member one per party playing the role, per_user one per user
    (groups expanded); several roles give the cartesian product, each instance assigned to the
    party of the first role that is not per_role."""
    axes: list[list[str | None]] = []
    for role, mapping in action.for_each:
        await assignment.assign_defaults(ctx, role)
        players = ctx.roles.get(role, set())
        if mapping == "per_role":
            axes.append([None])
        elif mapping == "per_member":
            axes.append(sorted(players))
        else:
            axes.append(sorted(await notifications.users_of(ctx.session, players)))
    count = 1
    for axis in axes:
        count *= len(axis)
    if count > MAX_INSTANCES:
        raise DomainError(
            ErrorCode.TOO_MANY_INSTANCES,
            f"{action.pretty_name} would create {count} instances; at most {MAX_INSTANCES}.",
        )
    return [next((p for p in combination if p is not None), None) for combination in itertools.product(*axes)]


# Built once: the members a parent's condition counts, whatever their status.
_MEMBERS = select(EnabledAction).where(
    EnabledAction.case_id == bindparam("case_id"), EnabledAction.parent_id == bindparam("parent_id")
)


async def settle(
    ctx: CaseContext, instance: EnabledAction, now: datetime, notified: set[str], *, fire: Fire
) -> list[LogEntry]:
    """After ``instance`` completed: fire its scope's parent, through ``fire``, when the parent's
    condition holds now. ``notified``: who heard of the completion; the parent's entry does not
    tell them again. Returns the parent's entry when it fired (the entries of outer parents that
    fired in turn are recorded as every entry is; none is lost for not being returned here)."""
    if instance.scope == "":
        return []
    owner = await ctx.session.get(EnabledAction, instance.scope)
    if owner is None or owner.status != "ENABLED":
        return []
    parent = owner
    if owner.trigger == scopes.SCOPE_TRIGGER:  # a dynamic parent's per-party scope
        parent = await ctx.session.get(EnabledAction, owner.parent_id)
        if parent is None or parent.status != "ENABLED":
            return []
    action = ctx.spec.actions[parent.action]
    if action.trigger == "workflow":
        members = [quorum.Member(status=parent.status, state=ctx.states.get(parent.id))]
    else:
        rows = await ctx.session.scalars(_MEMBERS, {"case_id": ctx.case.id, "parent_id": parent.id})
        members = [
            quorum.Member(status=row.status, state=ctx.states.get(row.id) if action.has_scope else None) for row in rows
        ]
    decision = quorum.decide(ctx.spec, action, members)
    if decision is None:
        return []
    entry = await fire(
        ctx,
        parent,
        action,
        actor=SYSTEM,
        comment=None,
        values={},
        now=now,
        output=decision.output,
        decision=decision.describe(),
        notified=notified,
    )
    return [entry]
