"""Which cases a migration may look at and move (engine/migration/migration.py): the subproject asked for
and its next batch of cases, and, for cases named by id without the global right, the items'
grants case by case. Hidden ≡ missing: a case the actor may not see is refused as not found."""

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.errors import DomainError, ErrorCode
from engine.migration.migration_plan import Loaded
from engine.people import permissions
from engine.people.actors import Actor
from engine.people.inheritance import effective_grants, hold
from engine.spec import versions
from models import Case, Subproject, Workflow, WorkflowItem


async def subproject(
    session: AsyncSession, actor: Actor, subproject_id: str, workflow: str, *, may_all: bool, lock: bool
) -> Subproject:
    """The subproject to migrate (locked for a real run: its new items wait for its version),
    which its actor may update and which runs ``workflow``."""
    query = select(Subproject).where(Subproject.id == subproject_id)
    found = await session.scalar(query.with_for_update() if lock else query)
    if found is None:
        raise DomainError(ErrorCode.NOT_FOUND, f"No subproject with id {subproject_id!r} exists.", ["subprojectId"])
    if not may_all:
        await permissions.require(
            session,
            actor=actor,
            resource_id=found.id,
            intent="subproject.update",
            what="subproject",
            field="subprojectId",
        )
    current = await session.get(Workflow, found.workflow_id)
    if current is None or current.short_name != workflow:
        raise DomainError(
            ErrorCode.INVALID_INPUT,
            f"The subproject runs the workflow {current.short_name if current else None!r}, not {workflow!r}.",
            ["subprojectId"],
        )
    return found


async def subproject_cases(
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


def sees(actor: Actor, item_id: str, held: dict[str, set[str]], roles: dict[str, set[str]] | None) -> bool:
    """Whether the actor may see the item (engine/people/visibility.py's rule): a grant, or a role in its case."""
    plays = any(not parties.isdisjoint(actor.party_ids) for parties in (roles or {}).values())
    return item_id in held["view"] or plays


async def items_allowed(session: AsyncSession, actor: Actor, loaded: Loaded) -> dict[str, set[str]]:
    """Which of the cases' items the actor may view and update (by grant; a role player sees its
    item too, but moving a case needs workflowItem.update), in one statement."""
    items = [item.id for _, item, _ in loaded.rows.values()]
    held: dict[str, set[str]] = {"view": set(), "update": set()}
    if not items:
        return held
    # the item's own grants and those reaching it from above (engine/people/inheritance.py)
    holdings = hold(await session.execute(effective_grants(items, actor.party_ids)))
    for item_id, intents in holdings.items():
        for intent, key in (("workflowItem.view", "view"), ("workflowItem.update", "update")):
            if intent in intents:
                held[key].add(item_id)
    return held
