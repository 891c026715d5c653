"""Child scopes as rows: which enabled instance owns a scope,
starting one, and closing a parent's descendants.

A scope is named by the id of the enabled instance that owns it ('' is the top level): a
``workflow`` parent owns its child FSM; a ``dynamic`` parent with ``states`` owns one *scope
row* per party (an instance of the parent action with trigger ``scope``, assigned to that
party), each owning a child FSM; a ``parallel`` parent, or a ``dynamic`` one without states,
owns its child instances directly, in a scope without state. The state of each FSM scope is a
``case_state`` row; whether it still runs is its owner's status (ENABLED: it runs).
"""

from collections import defaultdict
from datetime import datetime

from sqlalchemy import bindparam, select

from engine.cases.context import CaseContext, note_move
from models import CaseState, EnabledAction

SCOPE_TRIGGER = "scope"  # the trigger of a dynamic parent's per-party scope rows


def start(ctx: CaseContext, owner: EnabledAction) -> None:
    """Give ``owner`` its FSM scope, in the initial state of its action's child workflow."""
    state = ctx.spec.initial_state(owner.action)
    ctx.session.add(CaseState(case_id=ctx.case.id, scope=owner.id, state=state))
    ctx.states[owner.id] = state
    init = ctx.spec.init_action(owner.action)
    note_move(ctx, owner.id, None, state, init.short_name if init else None, owner.enabled_at)


def owns_fsm(ctx: CaseContext, instance: EnabledAction) -> bool:
    """Whether the instance owns a child FSM scope (its state is in ``ctx.states``)."""
    return instance.trigger == SCOPE_TRIGGER or ctx.spec.actions[instance.action].trigger == "workflow"


def close_descendants(ctx: CaseContext, roots: list[EnabledAction], now: datetime) -> tuple[int, int]:
    """Close everything still running below ``roots`` (the parents that fired or were
    disabled): a scope row whose scope reached a terminal state is COMPLETED (closed), every
    other ENABLED descendant CANCELED; either way they are locked: no action of theirs is
    enabled again. Returns (completed, canceled). Walks the case's ENABLED rows in memory."""
    below: dict[str, list[EnabledAction]] = defaultdict(list)
    for instance in ctx.enabled or ():
        if instance.parent_id is not None and instance.status == "ENABLED":
            below[instance.parent_id].append(instance)
    completed = canceled = 0
    stack = [root.id for root in roots]
    while stack:
        for instance in below.pop(stack.pop(), ()):
            stack.append(instance.id)
            state = ctx.states.get(instance.id) if instance.trigger == SCOPE_TRIGGER else None
            if state is not None and ctx.spec.states[state].terminal:
                instance.status, completed = "COMPLETED", completed + 1
            else:
                instance.status, canceled = "CANCELED", canceled + 1
            instance.completed_at = now
    return completed, canceled


# Built once: a firing parent's members, whatever their status (what its log entry counts).
_MEMBER_ROWS = select(EnabledAction.id, EnabledAction.status).where(
    EnabledAction.case_id == bindparam("case_id"), EnabledAction.parent_id == bindparam("parent_id")
)


async def count_children(ctx: CaseContext, parent: EnabledAction) -> dict[str, int]:
    """What a firing parent's log entry says of its children (docs/workflows.md, ``children``):
    its child workflows, or for a parent without states its child instances, each counted once,
    as the parent's condition counts them (engine.cases.quorum): completed when its scope reached a
    terminal state (or the instance completed), canceled otherwise (still running, closed by the
    firing, or canceled earlier). Called before the firing closes them; the actions inside a child
    workflow are not children of the parent and are not counted."""
    if ctx.spec.actions[parent.action].trigger == "workflow":  # the parent owns its one child workflow
        done = ctx.spec.states[ctx.states[parent.id]].terminal
        return {"completed": int(done), "canceled": int(not done)}
    completed = canceled = 0
    for member_id, status in (
        await ctx.session.execute(_MEMBER_ROWS, {"case_id": ctx.case.id, "parent_id": parent.id})
    ).all():
        state = ctx.states.get(member_id)
        done = ctx.spec.states[state].terminal if state is not None else status == "COMPLETED"
        completed, canceled = (completed + 1, canceled) if done else (completed, canceled + 1)
    return {"completed": completed, "canceled": canceled}
