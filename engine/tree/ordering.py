"""Workflow item ordering: a subproject's explicit order, then creation time.

A subproject stores an explicit list of item ids. Listing returns the listed items in that
order, then every other item by creation time (ids are time-ordered, ties broken by id). Items
created concurrently with a reorder simply follow it, so none can ever be lost.
"""

from collections.abc import Iterable, Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from engine import validation
from engine.errors import DomainError, ErrorCode
from engine.history import activity
from engine.people import permissions
from engine.people.actors import Actor
from engine.people.visibility import item_visible
from engine.tree.item_status import OPEN_CASE_STATUSES
from engine.tree.resources import lock
from models import Case, Subproject, WorkflowItem


def ordered(item_ids: Iterable[str], ordering: Sequence[str]) -> list[str]:
    """``item_ids`` in display order; ids are time-ordered, so sorting them is creation order."""
    present = set(item_ids)
    head = [i for i in dict.fromkeys(ordering) if i in present]
    listed = set(head)
    return head + sorted(i for i in present if i not in listed)


async def reorder(session: AsyncSession, *, actor: Actor, subproject_id: str, ordering: list[str]) -> Subproject:
    """Replace the whole ordering atomically (last writer wins). An item the actor may not view
    is refused exactly as an id that names no item of the subproject (``UNKNOWN_ITEM``)."""
    validation.bounded_list(ordering, "ordering", max_items=validation.MAX_ORDERING)
    subproject = await lock(session, Subproject, subproject_id, what="subproject", field="subprojectId")
    await permissions.require(
        session,
        actor=actor,
        resource_id=subproject_id,
        intent="subproject.reorderWorkflowItems",
        what="subproject",
        field="subprojectId",
    )
    if len(set(ordering)) != len(ordering):
        raise DomainError(ErrorCode.INVALID_INPUT, "The ordering names an item twice.", ["ordering"])
    known = set(
        (
            await session.scalars(
                select(WorkflowItem.id).where(
                    WorkflowItem.subproject_id == subproject_id, WorkflowItem.id.in_(ordering), item_visible(actor)
                )
            )
        ).all()
    )
    for index, item_id in enumerate(ordering):
        if item_id not in known:
            raise DomainError(
                ErrorCode.UNKNOWN_ITEM,
                f"{item_id!r} is not a workflow item of this subproject.",
                ["ordering", str(index)],
            )
    if subproject.workflow_item_ordering != ordering:
        subproject.workflow_item_ordering = list(ordering)
        await activity.record(
            session,
            kind="workflow_items_reordered",
            actor_id=actor.user_id,
            about=subproject,
            data={"ordering": ordering},
        )
    return subproject


async def require_previous_items_closed(session: AsyncSession, *, item: WorkflowItem, subproject: Subproject) -> None:
    """In an ORDERED subproject an item may not close while an item before it is open."""
    if subproject.workflow_mode != "ORDERED":
        return
    rows = (
        await session.execute(
            select(WorkflowItem.id, Case.status)
            .join(Case, Case.object_id == WorkflowItem.id)
            .where(WorkflowItem.subproject_id == subproject.id)
        )
    ).all()
    status = dict(rows)
    before: list[str] = []
    for item_id in ordered(status, subproject.workflow_item_ordering):
        if item_id == item.id:
            break
        before.append(item_id)
    still_open = [i for i in before if status[i] in OPEN_CASE_STATUSES]
    if still_open:
        raise DomainError(
            ErrorCode.PREVIOUS_ITEMS_OPEN,
            f"{len(still_open)} workflow item(s) before this one are still open; close them first.",
        )
