"""Moving running cases to another version of their workflow (docs/workflows.md, "Versions and
migration"): ``migrate_cases``, the verb; its parts live beside it by concept:

- engine/migration/migration_access.py: which cases the actor may look at and move;
- engine/migration/migration_plan.py: the batch's rows read and each case judged, without a write;
- engine/migration/migration_batch.py: the cases whose move is plain, written set-based for the batch;
- engine/migration/migration_moves.py: the others, moved through the engine's transitions.

Why in two steps, a plan then its application: a dry run is the plan alone (no writes, no
locks: four statements per batch, whatever its size), and a real run writes only what the plan
accepted, so a refused case is left whole while its neighbours move (atomic per case). A batch is
at most ``MAX_CASES`` cases; the payload's cursor says where the next call goes on (resumable: a
case once moved is on the new version, and the cases refused stay behind the cursor). A state the
map leaves out keeps its name. One ``case_migrated`` entry per case says what moved.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.clock import SYSTEM_CLOCK
from engine.errors import DomainError, ErrorCode
from engine.migration import migration_access, migration_batch, migration_moves
from engine.migration.migration_plan import CaseMigration, Loaded, Planner, load, snapshot
from engine.people import permissions
from engine.people.actors import Actor
from engine.people.permissions import GLOBAL
from engine.spec import versions
from engine.spec.workflows import spec_by_id
from models import Workflow

MAX_CASES = 500  # cases per call: one transaction's worth; the cursor resumes
MAX_MAP = 400  # stateMap entries: every state of two large versions
TIMER_POLICIES = ("KEEP", "RESTART")


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
    now = now or SYSTEM_CLOCK.now()
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
        subproject = await migration_access.subproject(
            session, actor, subproject_id, workflow, may_all=may_all, lock=not dry_run
        )
        ids, has_more = await migration_access.subproject_cases(session, subproject_id, target, after, first)
    else:
        ids, has_more = list(dict.fromkeys(case_ids or ())), False
    loaded = await load(session, ids, lock=not dry_run)
    # By case ids without the global right: the items' grants decide, case by case.
    held = None if may_all or subproject is not None else await migration_access.items_allowed(session, actor, loaded)
    numbers = dict(
        (await session.execute(select(Workflow.id, Workflow.version).where(Workflow.short_name == workflow))).all()
    )
    plan = Planner(target=target, spec=new_spec, mapping=mapping, numbers=numbers)
    results = []
    for case_id in ids:
        result = CaseMigration(case_id=case_id)
        results.append(result)
        found = loaded.rows.get(case_id)
        if found is None or (
            held is not None and not migration_access.sees(actor, found[1].id, held, loaded.roles.get(case_id))
        ):
            result.errors.append(DomainError(ErrorCode.NOT_FOUND, f"No case with id {case_id!r} exists.", ["caseIds"]))
        elif held is not None and found[1].id not in held["update"]:
            result.case = snapshot(found[0])
            message = "You may not do workflowItem.update on this case's item."
            result.errors.append(DomainError(ErrorCode.NOT_ALLOWED, message, ["caseIds"]))
        else:
            result.case = snapshot(found[0])
            await plan.case(session, result, loaded)
    migrated = 0
    if not dry_run:
        if session.bind.dialect.name == "sqlite":
            await migration_moves.open_transaction(session, ids)
        migrated = await _apply(session, actor, results, loaded, plan, timer_policy, now)
        if subproject is not None and subproject.workflow_id != target.id:
            await migration_moves.move_subproject(session, actor, subproject, plan, now)
    refused = sum(1 for r in results if r.errors)
    return MigrationResult(
        workflow=snapshot(target),
        results=results,
        migrated=migrated,
        refused=refused,
        end_cursor=ids[-1] if ids else after,
        has_more=has_more,
    )


async def _apply(
    session: AsyncSession,
    actor: Actor,
    results: list[CaseMigration],
    loaded: Loaded,
    plan: Planner,
    timer_policy: str,
    now: datetime,
) -> int:
    """Move the cases the plan accepted: the plain ones set-based, together; the others (and all
    of them, should the database refuse the set-based batch) through the transitions. Returns
    how many moved."""
    batch, one_by_one = [], []
    for result in results:
        if not result.errors:
            move = migration_batch.settle(plan, result, loaded, timer_policy, now)
            if move is None:
                one_by_one.append(result)
            else:
                batch.append(move)
    migrated = 0
    if await migration_batch.write(session, actor, batch, loaded, plan, now):
        migrated = len(batch)
    else:
        one_by_one = sorted(one_by_one + [move.result for move in batch], key=lambda r: r.case_id)
    return migrated + await migration_moves.apply(session, actor, one_by_one, plan, timer_policy, now)


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
