"""Cases: start, list enabled actions, execute (docs/architecture.md).

Every verb runs inside the caller's transaction and never commits; ``execute`` locks the
case row first, so concurrent executions on one case are serialized and re-checked.
"""

import hashlib
import json
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine import activity, assignment, deputies, notifications, permissions, validation
from engine.activity import LogEntry
from engine.actors import Actor
from engine.cases.context import EXECUTABLE_STATUSES, CaseContext, case_not_found, load_case, new_case_context
from engine.cases.transitions import (
    after_enable,
    assigned_parties,
    fire,
    recompute,
    run_automatic,
    set_status_for_state,
)
from engine.child_specs import PARENT_TRIGGERS
from engine.errors import DomainError, ErrorCode
from engine.jobs import outbox
from engine.spec_checker import MAX_NAME
from engine.specs import ActionSpec, WorkflowSpec
from models import (
    Activity,
    Case,
    CaseState,
    EnabledAction,
    Idempotency,
    WorkflowItem,
    new_id,
    utcnow,
)
from models.db import insert_for


@dataclass
class ExecutionResult:
    case: Case
    activity: LogEntry | Activity | None  # the row read back when a request is replayed
    replayed: bool = False


async def start_case(
    session: AsyncSession,
    *,
    actor: Actor,
    item: WorkflowItem,
    workflow_id: str,
    assignments: dict[str, list[str]] | None = None,
    now: datetime | None = None,
) -> Case:
    """Create the case of a new workflow item on the definition ``workflow_id`` and run its
    INIT action."""
    now = now or utcnow()
    case = Case(id=new_id("case"), workflow_id=workflow_id, object_id=item.id, created_by=actor.user_id, created_at=now)
    session.add(case)
    await session.flush()
    ctx = await new_case_context(session, case=case, item=item)
    for role, parties in (assignments or {}).items():
        await assignment.check_assignment(ctx, role, parties, "assignments")
        await assignment.set_role_parties(ctx, role, parties)
    init = ctx.spec.init_action()
    state = ctx.spec.initial_state()
    session.add(CaseState(case_id=case.id, scope="", state=state))
    ctx.states[""] = state
    init_entry = await activity.record(
        session,
        kind="action_executed",
        actor_id=actor.user_id,
        about=ctx.item,
        case_id=ctx.case.id,
        action=init.short_name if init else None,
        data={"from": None, "to": state},
        at=now,
    )
    if (init is not None and init.jobs) or ctx.spec.jobs:  # the outbox, as for every action (transitions.fire)
        await outbox.enqueue(ctx, init_entry, (*(init.jobs if init else ()), *ctx.spec.jobs), now)
    recomputed = await recompute(ctx, "", now)
    await after_enable(ctx, recomputed, now)
    set_status_for_state(ctx)
    await notifications.notify(ctx, init_entry, assigned_parties=assigned_parties(ctx, recomputed.enabled))
    # AUTO actions (and timeouts of 0) enabled in the initial state fire now, not when someone
    # next executes an unrelated action. Free for workflows without any (spec.has_automatic).
    await run_automatic(ctx, now)
    return case


# Built once: every read of a case's enabled actions runs it.
_ENABLED = (
    select(EnabledAction)
    .where(EnabledAction.case_id == bindparam("case_id"), EnabledAction.status == "ENABLED")
    .order_by(EnabledAction.enabled_at, EnabledAction.id)
)


async def enabled_instances(session: AsyncSession, *, case_id: str) -> list[EnabledAction]:
    """The case's ENABLED instances, oldest first (ties by id)."""
    return list(await session.scalars(_ENABLED, {"case_id": case_id}))


async def get_enabled_actions(session: AsyncSession, *, case_id: str) -> list[EnabledAction]:
    """The USER-triggered instances enabled now (a multiset: one action may have several)."""
    return [ea for ea in await enabled_instances(session, case_id=case_id) if ea.trigger == "user"]


async def get_user_actions(session: AsyncSession, *, case_id: str, actor: Actor) -> list[EnabledAction]:
    """The enabled actions this actor may execute now."""
    ctx = await load_case(session, case_id=case_id)
    held = await permissions.held_intents(session, actor=actor, resource_id=ctx.item.id)
    return [
        ea
        for ea in await get_enabled_actions(session, case_id=case_id)
        if may_perform(ctx.spec, ctx.roles, ea, actor, held)
    ]


def may_perform(
    spec: WorkflowSpec,
    roles: Mapping[str, Collection[str]],
    instance: EnabledAction,
    actor: Actor,
    held_intents: Collection[str],
) -> bool:
    """Who may perform an enabled action: assigned to it, plays its assigned or an allowed role
    (or the role the instance itself is assigned to: a per_role DYNAMIC child is the whole role's),
    holds one of its privileges on the item, or is an admin. ``roles`` maps role -> parties in
    this case. An instance of its own party (a DYNAMIC child's) is that party's alone, or an admin's."""
    if actor.is_admin:
        return True
    if instance.assignee_party_id is not None:
        return instance.assignee_party_id in actor.party_ids
    action = spec.actions[instance.action]
    played = {role for role, parties in roles.items() if not actor.party_ids.isdisjoint(parties)}
    if action.assigned_role in played or instance.assigned_role in played or played.intersection(action.allowed_roles):
        return True
    return any(p in held_intents for p in action.privileges)


def request_hash(payload: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


async def _claim_idempotency_key(
    session: AsyncSession, *, actor: Actor, operation: str, key: str, req_hash: str
) -> Idempotency | None:
    """Claim the key, or return the earlier use of it. On PostgreSQL a concurrent claimer waits
    on the unique key until the first transaction commits (then sees its row) or rolls back."""
    insert = insert_for(session)
    claimed = await session.execute(
        insert(Idempotency)
        .values(
            actor_id=actor.user_id,
            operation=operation,
            key=key,
            request_hash=req_hash,
            response={},
            created_at=utcnow(),
        )
        .on_conflict_do_nothing()
        .returning(Idempotency.key)
    )
    if claimed.first() is not None:
        return None
    previous = await session.get(Idempotency, (actor.user_id, operation, key), populate_existing=True)
    assert previous is not None
    if previous.request_hash != req_hash:
        raise DomainError(
            ErrorCode.IDEMPOTENCY_KEY_REUSED,
            "This idempotency key was already used for a different request.",
            ["idempotencyKey"],
        )
    return previous


async def execute(
    session: AsyncSession,
    *,
    actor: Actor,
    action: str,
    case_id: str | None = None,
    workflow_item_id: str | None = None,
    enabled_action_id: str | None = None,
    comment: str | None = None,
    data: dict[str, Any] | None = None,
    idempotency_key: str | None = None,
    expected_version: int | None = None,
    output: str | None = None,
    resolution: str | None = None,
    now: datetime | None = None,
) -> ExecutionResult:
    """Execute a USER action on a case as ``actor``.
    ``output`` picks among the action's outputs (and so its new state), ``resolution`` among its
    resolution codes; each is required when the action declares them, refused when it doesn't."""
    now = now or utcnow()
    data = validation.json_object(data, "data")  # key/value data: a list or a string is refused
    if comment is not None:
        validation.optional_text(comment, "comment", max_len=validation.MAX_COMMENT)
    if idempotency_key is not None:
        validation.idempotency_key(idempotency_key)
        req = request_hash(
            {
                "case": case_id,
                "item": workflow_item_id,
                "action": action,
                "instance": enabled_action_id,
                "comment": comment,
                "data": data,
                "expectedVersion": expected_version,
                "output": output,
                "resolution": resolution,
            }
        )
        previous = await _claim_idempotency_key(
            session, actor=actor, operation="executeAction", key=idempotency_key, req_hash=req
        )
        if previous is not None:
            case = await session.get(Case, previous.response["caseId"], populate_existing=True)
            entry = await session.scalar(select(Activity).where(Activity.id == previous.response["activityId"]))
            assert case is not None
            return ExecutionResult(case=case, activity=entry, replayed=True)
    ctx = await load_case(session, case_id=case_id, workflow_item_id=workflow_item_id, lock=True, with_enabled=True)
    plays_a_role = bool(ctx.roles_of(actor.party_ids))
    # Role players see their case without a grant; the intents are read only when they matter.
    held: set[str] = set()
    if not plays_a_role or _needs_privileges(ctx, action):
        held = await permissions.held_intents(session, actor=actor, resource_id=ctx.item.id)
    absent: list[Actor] | None = None  # whom the actor stands in for here: asked only when their own rights fall short

    async def stands_in_for() -> list[Actor]:
        nonlocal absent
        if absent is None:
            absent = deputies.plays_for(await deputies.standing_in(session, user_id=actor.user_id), ctx.roles)
        return absent

    if not plays_a_role and "workflowItem.view" not in held:
        if not await stands_in_for():
            raise case_not_found(case_id=case_id, workflow_item_id=workflow_item_id)
    if ctx.case.status not in EXECUTABLE_STATUSES:
        raise DomainError(ErrorCode.CASE_NOT_ACTIVE, f"The case is {ctx.case.status.lower()}; no action can run.")
    if expected_version is not None and expected_version != ctx.case.version:
        raise DomainError(
            ErrorCode.VERSION_CONFLICT,
            f"The case is at version {ctx.case.version}, not {expected_version}; reload and retry.",
            ["expectedVersion"],
        )
    spec_action = ctx.spec.actions.get(action)
    if spec_action is None or spec_action.trigger != "user":
        raise _runs_by_itself(ctx, spec_action) or _not_enabled(ctx.spec, action)
    instance = await _find_instance(ctx, action, enabled_action_id, actor, held, stands_in_for)
    if instance is None:
        raise _not_enabled(ctx.spec, action)
    on_behalf_of = None
    if not may_perform(ctx.spec, ctx.roles, instance, actor, held):
        # As a deputy: what the absent user may do by assignment or role (their grants stay theirs).
        on_behalf_of = next(
            (a.user_id for a in await stands_in_for() if may_perform(ctx.spec, ctx.roles, instance, a, ())), None
        )
        if on_behalf_of is None:
            raise DomainError(
                ErrorCode.NOT_ALLOWED, f"You may not {spec_action.pretty_name.lower()} this case.", ["action"]
            )
    _check_choices(spec_action, output, resolution)
    entry = await fire(
        ctx,
        instance,
        spec_action,
        actor=actor,
        comment=comment,
        values=data,
        now=now,
        output=output,
        resolution=resolution,
    )
    entry.on_behalf_of = on_behalf_of  # hashed with the entry at commit
    await run_automatic(ctx, now)
    if idempotency_key is not None:
        record = await session.get(Idempotency, (actor.user_id, "executeAction", idempotency_key))
        assert record is not None
        record.response = {"caseId": ctx.case.id, "activityId": entry.id}
    # Not flushed here: the writes go with the log entry at commit (engine/folded_writes.py).
    return ExecutionResult(case=ctx.case, activity=entry)


def _check_choices(action: ActionSpec, output: str | None, resolution: str | None) -> None:
    """An output only for an action with outputs (which one is checked as the state changes, as
    an ``on_fire`` callback may pick it); a resolution one of the action's codes, and required
    when it has some: the person resolving picks one. Messages name the allowed
    values, never echo the one given (it may be long)."""
    if output is not None and not action.outputs:
        raise DomainError(
            ErrorCode.INVALID_INPUT, f"{action.pretty_name} has no outputs; leave output out.", ["output"]
        )
    codes = [code for code, _ in action.resolutions]
    if resolution is None and not codes:
        return
    if not codes:
        raise DomainError(
            ErrorCode.INVALID_INPUT, f"{action.pretty_name} has no resolutions; leave resolution out.", ["resolution"]
        )
    if resolution not in codes:
        raise DomainError(
            ErrorCode.INVALID_INPUT,
            f"{action.pretty_name} needs a resolution, one of: {', '.join(codes)}."
            if resolution is None
            else f"That is not a resolution of {action.pretty_name}; one of: {', '.join(codes)}.",
            ["resolution"],
        )


# Action names an UNKNOWN_ACTION message lists: enough for any hand-written workflow, bounded for any.
MAX_NAMED_ACTIONS = 20


def _not_enabled(spec: WorkflowSpec, action: str) -> DomainError:
    """Why ``action`` cannot run: the workflow has no such action (naming those it has, so a typo
    is easy to fix), or it exists but is not enabled now. Built only on the refusal path."""
    if action in spec.actions:
        return DomainError(ErrorCode.ACTION_NOT_ENABLED, f"{action!r} is not enabled in this case now.", ["action"])
    names = list(spec.actions)
    listed = ", ".join(names[:MAX_NAMED_ACTIONS])
    if len(names) > MAX_NAMED_ACTIONS:
        listed += f" and {len(names) - MAX_NAMED_ACTIONS} more"
    shown = action if len(action) <= MAX_NAME else action[:MAX_NAME] + "…"
    message = f"The workflow {spec.short_name!r} has no action {shown!r}; its actions: {listed}."
    return DomainError(ErrorCode.UNKNOWN_ACTION, message, ["action"])


def _runs_by_itself(ctx: CaseContext, action: ActionSpec | None) -> DomainError | None:
    """Why an enabled parent or timed action cannot be executed by hand: it runs by itself, and
    the refusal says when (a parent when its children complete, a TIME action when its timer
    falls due). None when the action is not enabled now (or runs otherwise)."""
    if action is None or action.trigger not in ("time", *PARENT_TRIGGERS):
        return None
    due = [ea.fire_at for ea in ctx.enabled or () if ea.action == action.short_name and ea.status == "ENABLED"]
    if not due:
        return None
    if action.trigger == "time":
        when = min((at for at in due if at is not None), default=None)
        message = f"{action.short_name!r} runs when its timer falls due at {when.isoformat() if when else 'its time'}"
    else:
        message = f"{action.short_name!r} runs when its children complete"
    return DomainError(ErrorCode.ACTION_NOT_ENABLED, f"{message}; it cannot be executed by hand.", ["action"])


def _needs_privileges(ctx: CaseContext, action: str) -> bool:
    spec_action = ctx.spec.actions.get(action)
    return spec_action is not None and bool(spec_action.privileges)


async def _find_instance(
    ctx: CaseContext,
    action: str,
    enabled_action_id: str | None,
    actor: Actor,
    held: Collection[str],
    stands_in_for: Callable[[], Awaitable[list[Actor]]],
) -> EnabledAction | None:
    """The instance of ``action`` to execute, among the ENABLED ones load_case read: the one
    named by ``enabled_action_id``; else the only one; else, when the action is enabled several
    times (child scopes, DYNAMIC instances), the caller's own instance if they are assigned to
    exactly one; else, when they are assigned to none, the one assigned to an absent user they
    stand in for (``stands_in_for``, asked only then), as ``myTasks`` lists their own tasks first
    and then those on behalf. Otherwise the caller must name one: AMBIGUOUS_ACTION lists the
    instances they may execute, themselves or on behalf (none of them: NOT_ALLOWED, as for a
    single instance)."""
    found = [
        ea
        for ea in ctx.enabled or ()
        if ea.action == action and ea.trigger == "user" and enabled_action_id in (None, ea.id)
    ]
    if len(found) <= 1:
        return found[0] if found else None
    own = [ea for ea in found if ea.assignee_party_id is not None and ea.assignee_party_id in actor.party_ids]
    if len(own) == 1:
        return own[0]
    absent = [] if own else await stands_in_for()
    lent = [
        ea
        for ea in found
        if ea.assignee_party_id is not None and any(ea.assignee_party_id in a.party_ids for a in absent)
    ]
    if len(lent) == 1:
        return lent[0]
    allowed = [
        ea.id
        for ea in found
        if may_perform(ctx.spec, ctx.roles, ea, actor, held)
        or any(may_perform(ctx.spec, ctx.roles, ea, a, ()) for a in absent)
    ]
    if not allowed:
        return found[0]  # refused by the permission check that follows
    listed = ", ".join(allowed[:MAX_NAMED_ACTIONS]) + (
        f" and {len(allowed) - MAX_NAMED_ACTIONS} more" if len(allowed) > MAX_NAMED_ACTIONS else ""
    )
    raise DomainError(
        ErrorCode.AMBIGUOUS_ACTION,
        f"{action!r} is enabled {len(found)} times in this case; give enabledActionId, one of: {listed}.",
        ["enabledActionId"],
    )


async def preview(session: AsyncSession, *, case_id: str) -> tuple[Case, str, list[EnabledAction]]:
    """The case, its top-level state and its enabled USER actions, as they stand in this session."""
    ctx = await load_case(session, case_id=case_id)
    return ctx.case, ctx.states[""], await get_enabled_actions(session, case_id=case_id)
