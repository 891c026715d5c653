"""Cases: start, list enabled actions, execute (docs/architecture.md).

Every verb runs inside the caller's transaction and never commits; ``execute`` locks the
case row first, so concurrent executions on one case are serialized and re-checked.
"""

from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine import validation
from engine.cases import assignment, case_fields, idempotency, refusals
from engine.cases.context import (
    EXECUTABLE_STATUSES,
    CaseContext,
    case_not_found,
    load_case,
    new_case_context,
    note_move,
)
from engine.cases.transitions import (
    after_enable,
    assigned_parties,
    fire,
    recompute,
    run_automatic,
    set_status_for_state,
)
from engine.clock import SYSTEM_CLOCK
from engine.errors import DomainError, ErrorCode
from engine.history import activity
from engine.history.activity import LogEntry
from engine.jobs import outbox
from engine.notify import notifications
from engine.people import deputies, permissions
from engine.people.actors import Actor
from engine.spec.specs import WorkflowSpec
from models import (
    Activity,
    Case,
    CaseState,
    EnabledAction,
    Idempotency,
    WorkflowItem,
    new_id,
)


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
    now = now or SYSTEM_CLOCK.now()
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
    note_move(ctx, "", None, state, init.short_name if init else None, now)
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
    fields: Any = None,
    now: datetime | None = None,
) -> ExecutionResult:
    """Execute a USER action on a case as ``actor``. ``fields`` sets case fields the action may
    edit (engine/cases/case_fields.py: one INVALID_FIELD error per bad value, nothing changed).
    ``output`` picks among the action's outputs (and so its new state), ``resolution`` among its
    resolution codes; each is required when the action declares them, refused when it doesn't."""
    now = now or SYSTEM_CLOCK.now()
    data = validation.json_object(data, "data")  # key/value data: a list or a string is refused
    if comment is not None:
        validation.optional_text(comment, "comment", max_len=validation.MAX_COMMENT)
    if idempotency_key is not None:
        validation.idempotency_key(idempotency_key)
        req = idempotency.request_hash(
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
                **({"fields": fields} if fields is not None else {}),
            }
        )
        previous = await idempotency.claim_key(
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
        raise refusals.runs_by_itself(ctx, spec_action) or refusals.not_enabled(ctx.spec, action)
    instance = await _find_instance(ctx, action, enabled_action_id, actor, held, stands_in_for)
    if instance is None:
        raise refusals.not_enabled(ctx.spec, action)
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
    refusals.check_choices(spec_action, output, resolution)
    changes = None
    if fields is not None or spec_action.fields or spec_action.required_fields:
        changes = await case_fields.check_changes(
            session,
            spec=ctx.spec,
            action=spec_action,
            given=fields,
            current=ctx.case.fields or {},
            currency=ctx.subproject.currency,
        )
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
        changes=changes,
    )
    entry.on_behalf_of = on_behalf_of  # hashed with the entry at commit
    await run_automatic(ctx, now)
    if idempotency_key is not None:
        record = await session.get(Idempotency, (actor.user_id, "executeAction", idempotency_key))
        assert record is not None
        record.response = {"caseId": ctx.case.id, "activityId": entry.id}
    # Not flushed here: the writes go with the log entry at commit (engine/history/folded_writes.py).
    return ExecutionResult(case=ctx.case, activity=entry)


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
    listed = ", ".join(allowed[: refusals.MAX_NAMED_ACTIONS]) + (
        f" and {len(allowed) - refusals.MAX_NAMED_ACTIONS} more" if len(allowed) > refusals.MAX_NAMED_ACTIONS else ""
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
