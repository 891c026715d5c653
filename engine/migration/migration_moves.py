"""Moving cases one by one through the engine's transitions (engine/migration/migration.py's real run):
the cases engine/migration/migration_batch.py cannot write set-based (a child scope, a parent, an AUTO
action, defaults to assign...), and any whose set-based write failed.

Each running scope's state is renamed by the map, the case names the new version, and each
running scope is recomputed on the new spec as after any action: instances still enabled are
kept (with their timers, per the timer policy), those no longer enabled are canceled, newly
enabled ones start; then automatic actions run, as they do after any change. The cases move
together in one savepoint (one flush for them all); a refusal on the way rolls it back with its
queued log entries and the others move again without that case, so a case moves whole or not at
all."""

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from engine.cases.context import CaseContext
from engine.cases.scopes import SCOPE_TRIGGER
from engine.cases.transitions import after_enable, recompute, run_automatic, timer_written
from engine.errors import DomainError
from engine.history import activity, visits
from engine.migration.migration_plan import CaseMigration, Loaded, Planner, load_instances, snapshot
from engine.people.actors import Actor
from models import Case, EnabledAction, Subproject

BATCH_RETRIES = 3  # refusals met while moving a batch before its cases move one savepoint each


async def open_transaction(session: AsyncSession, ids: list[str]) -> None:
    """SQLite: the driver opens a transaction at the first write, and a SAVEPOINT before one
    would be the outermost transaction, committed by its RELEASE. A write that changes nothing
    opens it first, so each case's savepoint nests inside the request's transaction."""
    await session.execute(update(Case).where(Case.id.in_(ids[:1])).values(version=Case.version))


async def apply(
    session: AsyncSession,
    actor: Actor,
    accepted: list[CaseMigration],
    plan: Planner,
    timer_policy: str,
    now: datetime,
) -> int:
    """Move the accepted cases as planned, all in one savepoint (one flush for the batch, its
    statements batched across cases). A refusal on the way (an automatic action reaching a state a
    rule forbids, a dynamic parent over too many parties) rolls the savepoint back, with the
    queued log entries: that case is refused, the rows are read again, and the others are moved
    again. After ``BATCH_RETRIES`` such refusals the rest move one savepoint per case. Either
    way a case moves whole or not at all. Returns how many moved."""
    pending = list(accepted)
    if not pending:
        return 0
    loaded = await load_instances(session, [r.case_id for r in pending])
    for _ in range(BATCH_RETRIES):
        if not pending:
            return 0
        failed = await _in_savepoint(session, actor, pending, loaded, plan, timer_policy, now)
        if failed is None:
            return len(pending)
        pending.remove(failed)
        loaded.merge(await load_instances(session, [r.case_id for r in pending]))
    moved = 0
    for result in pending:  # one at a time: each refusal undoes one case
        if await _in_savepoint(session, actor, [result], loaded, plan, timer_policy, now) is None:
            moved += 1
        else:
            loaded.merge(await load_instances(session, [r.case_id for r in pending if not r.errors]))
    return moved


async def _in_savepoint(
    session: AsyncSession,
    actor: Actor,
    results: list[CaseMigration],
    loaded: Loaded,
    plan: Planner,
    timer_policy: str,
    now: datetime,
) -> CaseMigration | None:
    """Move ``results`` in one savepoint; the case refused on the way (its error recorded, the
    savepoint rolled back) or None when all moved."""
    mark, noted = activity.queued(session), visits.mark(session)
    current = results[0]
    try:
        async with session.begin_nested():
            for current in results:
                await _move(session, actor, current, loaded, plan, timer_policy, now)
    except DomainError as error:
        activity.forget(session, mark)  # the entries of the rolled-back moves
        visits.forget(session, noted)  # and the state visits they started
        current.errors.append(error)
        current.to_state = None
        return current
    for result in results:
        result.case = snapshot(loaded.rows[result.case_id][0])
    return None


async def _move(
    session: AsyncSession,
    actor: Actor,
    result: CaseMigration,
    loaded: Loaded,
    plan: Planner,
    timer_policy: str,
    now: datetime,
) -> None:
    case, item, subproject = loaded.rows[result.case_id]
    spec = plan.spec
    enabled = loaded.enabled.get(case.id, [])
    ctx = CaseContext(
        session=session,
        case=case,
        item=item,
        subproject=subproject,
        workflow_id=plan.target.id,
        spec=spec,
        states=dict(loaded.states.get(case.id, {})),
        roles={role: set(parties) for role, parties in loaded.roles.get(case.id, {}).items()},
        enabled=list(enabled),
    )
    from_version = plan.numbers[case.workflow_id]
    for scope, (state, to) in result.moves.items():
        if to != state:
            loaded.state_rows[case.id, scope].state = ctx.states[scope] = to
    case.workflow_id = plan.target.id
    case.version += 1
    gone = sorted({ea.action for ea in enabled if ea.action not in spec.actions})
    for instance in enabled:  # actions the new version lacks: canceled (the plan refused those it needed)
        if instance.action not in spec.actions:
            instance.status, instance.completed_at = "CANCELED", now
    kept = [ea for ea in enabled if ea.status == "ENABLED" and ea.trigger != SCOPE_TRIGGER]
    started: list[EnabledAction] = []
    canceled: list[EnabledAction] = []
    by_id = {ea.id: ea for ea in enabled}
    for scope in sorted(result.moves, key=lambda s: (s != "", by_id[s].enabled_at if s else now, s)):
        if scope and by_id[scope].status != "ENABLED":  # closed with a parent the top level disabled
            continue
        recomputed = await recompute(ctx, scope, now)
        await after_enable(ctx, recomputed, now)
        started += recomputed.enabled
        canceled += recomputed.canceled
    for instance in kept:
        if instance.status != "ENABLED":
            continue
        action = spec.actions[instance.action]
        instance.trigger = action.trigger
        if action.timeout_seconds is None:
            instance.fire_at = None
        elif timer_policy == "RESTART" or instance.fire_at is None:
            instance.fire_at = now + timedelta(seconds=action.timeout_seconds)
            timer_written(session, instance.fire_at)
    await activity.record(
        session,
        kind="case_migrated",
        actor_id=actor.user_id,
        about=item,
        case_id=case.id,
        data={
            "fromVersion": from_version,
            "toVersion": plan.target.version,
            "map": plan.mapping,
            "timers": timer_policy,
            "from": result.from_state,
            "to": result.to_state,
            "scopes": {scope: to for scope, (_, to) in result.moves.items() if scope},
            "canceled": sorted({ea.action for ea in canceled} | set(gone)),
            "enabled": sorted({ea.action for ea in started if ea.trigger != SCOPE_TRIGGER}),
        },
        at=now,
    )
    if case.status == "ACTIVE":
        await run_automatic(ctx, now)
    else:  # suspended: nothing fires now; what would have is due, and fires once it is resumed
        # Kept instances too: one whose USER action became AUTO would otherwise wait for good.
        for instance in (*started, *(ea for ea in kept if ea.fire_at is None)):
            if instance.status == "ENABLED" and instance.trigger == "auto":
                instance.fire_at = now
                timer_written(session, now)


async def move_subproject(
    session: AsyncSession, actor: Actor, subproject: Subproject, plan: Planner, now: datetime
) -> None:
    """The subproject's new items take the version moved to, from this transaction on."""
    data: dict[str, Any] = {
        "workflow": plan.target.short_name,
        "fromVersion": plan.numbers.get(subproject.workflow_id),
        "toVersion": plan.target.version,
    }
    subproject.workflow_id = plan.target.id
    await activity.record(
        session, kind="subproject_workflow_changed", actor_id=actor.user_id, about=subproject, data=data, at=now
    )
