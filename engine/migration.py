"""Moving running cases to another version of their workflow (docs/workflows.md, "Versions and
migration"): ``migrate_cases``.

Why in two steps, a plan then its application: a dry run is the plan alone (no writes, no
locks: four statements per batch, whatever its size), and a real run applies the plan of each
case it accepted, each in a savepoint, so a case is moved whole or not at all (atomic per case)
while its neighbours in the batch go on. A batch is at most ``MAX_CASES`` cases; the payload's
cursor says where the next call goes on (resumable: a case once moved is on the new version, and
the cases refused stay behind the cursor).

Moving a case: each running scope's state is renamed by the map (a state the map leaves out
keeps its name), the case names the new version, and each running scope is recomputed on the new
spec as after any action: instances still enabled are kept (with their timers, per the timer
policy), those no longer enabled are canceled, newly enabled ones start; then automatic actions
run, as they do after any change. One ``case_migrated`` entry per case says what moved.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from engine import activity, permissions, versions
from engine.actors import Actor
from engine.cases.context import CaseContext
from engine.cases.scopes import SCOPE_TRIGGER
from engine.cases.transitions import after_enable, recompute, run_automatic, timer_written
from engine.errors import DomainError, ErrorCode
from engine.migration_plan import CaseMigration, Loaded, Planner, load
from engine.permissions import GLOBAL
from engine.workflows import spec_by_id
from models import (
    Case,
    EnabledAction,
    Permission,
    Subproject,
    Workflow,
    WorkflowItem,
    utcnow,
)

MAX_CASES = 500  # cases per call: one transaction's worth; the cursor resumes
MAX_MAP = 400  # stateMap entries: every state of two large versions
TIMER_POLICIES = ("KEEP", "RESTART")
BATCH_RETRIES = 3  # refusals met while moving a batch before its cases move one savepoint each


@dataclass
class MigrationResult:
    workflow: Workflow  # the version moved to
    results: list[CaseMigration]
    migrated: int
    refused: int
    end_cursor: str | None  # the last case examined: pass it as ``after`` to go on
    has_more: bool


async def migrate_cases(
    session: AsyncSession,
    *,
    actor: Actor,
    workflow: str,
    to_version: int,
    state_map: Sequence[tuple[str, str]] = (),
    timer_policy: str = "KEEP",
    subproject_id: str | None = None,
    case_ids: Sequence[str] | None = None,
    dry_run: bool = False,
    first: int = MAX_CASES,
    after: str | None = None,
    now: datetime | None = None,
) -> MigrationResult:
    """Move running (ACTIVE or SUSPENDED) cases of ``workflow`` to ``to_version``: those named
    by ``case_ids``, or those of ``subproject_id`` not on it yet (at most ``first`` per call,
    after the case id ``after``). Migrating a subproject also makes it name ``to_version`` for
    its new items (a real run). Who may: holders of ``global.defineWorkflow`` (admins), or with
    ``subproject.update`` on the subproject (by subproject) or ``workflowItem.update`` on each
    case's item (by case ids)."""
    now = now or utcnow()
    mapping = _check_request(state_map, timer_policy, subproject_id, case_ids, first)
    target = await versions.find_version(session, short_name=workflow, version=to_version, field="toVersion")
    versions.require_not_retired(target, field="toVersion", what="a migration")
    new_spec = await spec_by_id(session, target.id)
    for index, (_, to) in enumerate(state_map):
        if to not in new_spec.states:
            raise DomainError(
                ErrorCode.INVALID_INPUT,
                f"Version {to_version} of {workflow!r} has no state {to[:64]!r}.",
                ["stateMap", str(index), "to"],
            )
    may_all = await permissions.has_intent(session, actor=actor, resource_id=GLOBAL, intent="global.defineWorkflow")
    subproject = None
    if subproject_id is not None:
        subproject = await _subproject(session, actor, subproject_id, workflow, may_all=may_all, lock=not dry_run)
        ids, has_more = await _subproject_cases(session, subproject_id, target, after, first)
    else:
        ids, has_more = list(dict.fromkeys(case_ids or ())), False
    loaded = await load(session, ids, lock=not dry_run)
    # By case ids without the global right: the items' grants decide, case by case.
    held = None if may_all or subproject is not None else await _items_allowed(session, actor, loaded)
    numbers = dict(
        (await session.execute(select(Workflow.id, Workflow.version).where(Workflow.short_name == workflow))).all()
    )
    plan = Planner(target=target, spec=new_spec, mapping=mapping, numbers=numbers)
    results = []
    for case_id in ids:
        result = CaseMigration(case_id=case_id)
        results.append(result)
        found = loaded.rows.get(case_id)
        if found is None or (held is not None and not _sees(actor, found[1].id, held, loaded.roles.get(case_id))):
            result.errors.append(DomainError(ErrorCode.NOT_FOUND, f"No case with id {case_id!r} exists.", ["caseIds"]))
        elif held is not None and found[1].id not in held["update"]:
            result.case = _snapshot(found[0])
            message = "You may not do workflowItem.update on this case's item."
            result.errors.append(DomainError(ErrorCode.NOT_ALLOWED, message, ["caseIds"]))
        else:
            result.case = _snapshot(found[0])
            await plan.case(session, result, loaded)
    migrated = 0
    if not dry_run:
        if session.bind.dialect.name == "sqlite":
            await _open_transaction(session, ids)
        accepted = [result for result in results if not result.errors]
        migrated = await _apply(session, actor, accepted, loaded, plan, timer_policy, now)
        if subproject is not None and subproject.workflow_id != target.id:
            await _move_subproject(session, actor, subproject, plan, now)
    refused = sum(1 for r in results if r.errors)
    return MigrationResult(
        workflow=_snapshot(target),
        results=results,
        migrated=migrated,
        refused=refused,
        end_cursor=ids[-1] if ids else after,
        has_more=has_more,
    )


def _check_request(
    state_map: Sequence[tuple[str, str]],
    timer_policy: str,
    subproject_id: str | None,
    case_ids: Sequence[str] | None,
    first: int,
) -> dict[str, str]:
    """The request's own checks, before anything is read; the map as a dict."""
    if (subproject_id is None) == (case_ids is None):
        raise DomainError(ErrorCode.INVALID_INPUT, "Give subprojectId or caseIds, not both.", ["subprojectId"])
    if case_ids is not None and not 0 < len(case_ids) <= MAX_CASES:
        raise DomainError(ErrorCode.INVALID_INPUT, f"Give 1 to {MAX_CASES} caseIds.", ["caseIds"])
    if not 0 < first <= MAX_CASES:
        raise DomainError(ErrorCode.INVALID_INPUT, f"first is 1 to {MAX_CASES}.", ["first"])
    if timer_policy not in TIMER_POLICIES:
        raise DomainError(ErrorCode.INVALID_INPUT, "timerPolicy is KEEP or RESTART.", ["timerPolicy"])
    if len(state_map) > MAX_MAP:
        raise DomainError(ErrorCode.INVALID_INPUT, f"A stateMap has at most {MAX_MAP} entries.", ["stateMap"])
    mapping: dict[str, str] = {}
    for index, (source, to) in enumerate(state_map):
        if source in mapping:
            raise DomainError(
                ErrorCode.INVALID_INPUT,
                f"The stateMap maps {source[:64]!r} twice.",
                ["stateMap", str(index), "from"],
            )
        mapping[source] = to
    return mapping


async def _subproject(
    session: AsyncSession, actor: Actor, subproject_id: str, workflow: str, *, may_all: bool, lock: bool
) -> Subproject:
    """The subproject to migrate (locked for a real run: its new items wait for its version),
    which its actor may update and which runs ``workflow``."""
    query = select(Subproject).where(Subproject.id == subproject_id)
    subproject = await session.scalar(query.with_for_update() if lock else query)
    if subproject is None:
        raise DomainError(ErrorCode.NOT_FOUND, f"No subproject with id {subproject_id!r} exists.", ["subprojectId"])
    if not may_all:
        await permissions.require(
            session,
            actor=actor,
            resource_id=subproject.id,
            intent="subproject.update",
            what="subproject",
            field="subprojectId",
        )
    current = await session.get(Workflow, subproject.workflow_id)
    if current is None or current.short_name != workflow:
        raise DomainError(
            ErrorCode.INVALID_INPUT,
            f"The subproject runs the workflow {current.short_name if current else None!r}, not {workflow!r}.",
            ["subprojectId"],
        )
    return subproject


async def _subproject_cases(
    session: AsyncSession, subproject_id: str, target: Workflow, after: str | None, first: int
) -> tuple[list[str], bool]:
    """The next ``first`` running cases of the subproject not on ``target`` yet, by case id."""
    other_versions = select(Workflow.id).where(Workflow.short_name == target.short_name, Workflow.id != target.id)
    query = (
        select(Case.id)
        .join(WorkflowItem, WorkflowItem.id == Case.object_id)
        .where(
            WorkflowItem.subproject_id == subproject_id,
            Case.workflow_id.in_(other_versions),
            Case.status.in_(versions.RUNNING_STATUSES),
        )
        .order_by(Case.id)
        .limit(first + 1)
    )
    if after is not None:
        query = query.where(Case.id > after)
    ids = list((await session.scalars(query)).all())
    return ids[:first], len(ids) > first


def _sees(actor: Actor, item_id: str, held: dict[str, set[str]], roles: dict[str, set[str]] | None) -> bool:
    """Whether the actor may see the item (engine/visibility.py's rule): a grant, or a role in its case."""
    plays = any(not parties.isdisjoint(actor.party_ids) for parties in (roles or {}).values())
    return item_id in held["view"] or plays


async def _items_allowed(session: AsyncSession, actor: Actor, loaded: Loaded) -> dict[str, set[str]]:
    """Which of the cases' items the actor may view and update (by grant; a role player sees its
    item too, but moving a case needs workflowItem.update), in one statement."""
    items = [item.id for _, item, _ in loaded.rows.values()]
    held: dict[str, set[str]] = {"view": set(), "update": set()}
    if not items:
        return held
    rows = await session.execute(
        select(Permission.intent, Permission.resource_id).where(
            Permission.resource_id.in_(items),
            Permission.intent.in_(("workflowItem.view", "workflowItem.update")),
            Permission.party_id.in_(actor.party_ids),
        )
    )
    for intent, item_id in rows:
        held["view" if intent == "workflowItem.view" else "update"].add(item_id)
    return held


async def _open_transaction(session: AsyncSession, ids: list[str]) -> None:
    """SQLite: the driver opens a transaction at the first write, and a SAVEPOINT before one
    would be the outermost transaction, committed by its RELEASE. A write that changes nothing
    opens it first, so each case's savepoint nests inside the request's transaction."""
    await session.execute(update(Case).where(Case.id.in_(ids[:1])).values(version=Case.version))


async def _apply(
    session: AsyncSession,
    actor: Actor,
    accepted: list[CaseMigration],
    loaded: Loaded,
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
    for _ in range(BATCH_RETRIES):
        if not pending:
            return 0
        failed = await _in_savepoint(session, actor, pending, loaded, plan, timer_policy, now)
        if failed is None:
            return len(pending)
        pending.remove(failed)
        loaded.merge(await load(session, [r.case_id for r in pending], lock=False))
    moved = 0
    for result in pending:  # one at a time: each refusal undoes one case
        if await _in_savepoint(session, actor, [result], loaded, plan, timer_policy, now) is None:
            moved += 1
        else:
            loaded.merge(await load(session, [r.case_id for r in pending if not r.errors], lock=False))
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
    mark = activity.queued(session)
    current = results[0]
    try:
        async with session.begin_nested():
            for current in results:
                await _move(session, actor, current, loaded, plan, timer_policy, now)
    except DomainError as error:
        activity.forget(session, mark)  # the entries of the rolled-back moves
        current.errors.append(error)
        current.to_state = None
        return current
    for result in results:
        result.case = _snapshot(loaded.rows[result.case_id][0])
    return None


def _snapshot(row: Any) -> Any:
    """A row's columns as they stand, apart from the session: what the caller reads after the
    transaction, whether it committed or rolled back (a rollback expires the session's rows).
    Plain attributes, as the read path's rows are (an ORM instance cost 0.6 ms to build)."""
    return SimpleNamespace(**{column.name: getattr(row, column.name) for column in type(row).__table__.c})


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
        for instance in started:
            if instance.status == "ENABLED" and instance.trigger == "auto":
                instance.fire_at = now
                timer_written(session, now)


async def _move_subproject(
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
