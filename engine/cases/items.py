"""Workflow items: create (with their case), update, assign ."""

from datetime import date, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from engine import cases, validation
from engine.cases import task_index
from engine.errors import DomainError, ErrorCode
from engine.history import activity
from engine.notify import reminder_rows
from engine.people import permissions
from engine.people.actors import Actor
from engine.spec import versions
from engine.tree.item_status import OPEN_CASE_STATUSES
from engine.tree.resources import UNSET, _require_open, apply_update, assignee_or_creator, check_party, lock
from models import Case, Subproject, WorkflowItem, new_id, utcnow

AMOUNT_TYPES = ("N/A", "ALLOCATED", "DISBURSED")
# The money fields as a refusal names them to a person (the field itself is in the error's field).
_MONEY_WORDS = {
    "amount": "amount",
    "currency": "currency",
    "exchangeRate": "exchange rate",
    "billingDate": "billing date",
}


def _budget_fields(
    amount_type: str,
    amount: str | None,
    currency: str | None,
    exchange_rate: str | None,
    billing_date: date | None,
    default_currency: str,
) -> dict[str, Any]:
    """N/A forbids every money field; otherwise an amount is required, the currency defaults
    to the subproject's and the exchange rate to "1.0". The refusals are read in the dashboard's
    item form, beside the field: they name the amount types as it does."""
    if amount_type not in AMOUNT_TYPES:
        raise validation.invalid(
            "The amount type is N/A (no amount), ALLOCATED (allocated) or DISBURSED (disbursed).", "amountType"
        )
    if amount_type == "N/A":
        for name, value in (
            ("amount", amount),
            ("currency", currency),
            ("exchangeRate", exchange_rate),
            ("billingDate", billing_date),
        ):
            if value is not None:
                raise validation.invalid(
                    f"An item with no amount has no {_MONEY_WORDS[name]}: leave it empty, or choose the amount "
                    "type Allocated or Disbursed.",
                    name,
                )
        return {"amount_type": "N/A", "amount": None, "currency": None, "exchange_rate": None, "billing_date": None}
    if amount is None:
        raise validation.invalid(f"Give the amount: the item's amount type is {amount_type.title()}.", "amount")
    return {
        "amount_type": amount_type,
        "amount": validation.decimal_string(amount, "amount"),
        "currency": validation.currency(currency or default_currency),
        "exchange_rate": validation.decimal_string(exchange_rate or "1.0", "exchangeRate", positive=True),
        "billing_date": billing_date,
    }


async def create_workflow_item(
    session: AsyncSession,
    *,
    actor: Actor,
    subproject_id: str,
    display_name: str,
    description: str | None = None,
    assignee_id: str | None = None,
    due_date: date | None = None,
    amount_type: str = "N/A",
    amount: str | None = None,
    currency: str | None = None,
    exchange_rate: str | None = None,
    billing_date: date | None = None,
    tags: list[str] | None = None,
    additional_data: dict[str, Any] | None = None,
    assignments: dict[str, list[str]] | None = None,
    now: datetime | None = None,
) -> tuple[WorkflowItem, Case]:
    """Create an item and start its case (``now``: when, for callers on an injected clock)."""
    # Lock the subproject: its hash chain and its ordering must see every new item in order.
    subproject = await lock(session, Subproject, subproject_id, what="subproject", field="subprojectId")
    await permissions.require(
        session,
        actor=actor,
        resource_id=subproject.id,
        intent="subproject.createWorkflowItem",
        what="subproject",
        field="subprojectId",
    )
    _require_open(subproject, "subproject")
    # read FOR SHARE: a retirement racing this creation waits for it, and refuses it
    await versions.usable_version(session, subproject.workflow_id, field="subprojectId", what="a new workflow item")
    item = WorkflowItem(
        id=new_id("wfi"),
        subproject_id=subproject.id,
        project_id=subproject.project_id,
        display_name=validation.require_text(display_name, "displayName"),
        description=validation.optional_text(description, "description"),
        created_by=actor.user_id,
        created_at=now or utcnow(),
        due_date=due_date,
        assignee_id=await assignee_or_creator(session, assignee_id, actor),
        tags=validation.tags(tags),
        additional_data=validation.json_object(additional_data, "additionalData"),
        **_budget_fields(amount_type, amount, currency, exchange_rate, billing_date, subproject.currency),
    )
    session.add(item)
    await session.flush()
    await permissions.grant_new_resource(
        session, resource_id=item.id, creator_id=actor.user_id, parent_id=subproject.id
    )
    await activity.record(
        session,
        kind="workflow_item_created",
        actor_id=actor.user_id,
        about=item,
        data={
            "displayName": item.display_name,
            "amountType": item.amount_type,
            "amount": item.amount,
            "currency": item.currency,
            "assigneeId": item.assignee_id,
        },
        at=item.created_at,
    )
    # The subproject's definition, read above; its spec is cached per process.
    case = await cases.start_case(
        session,
        actor=actor,
        item=item,
        workflow_id=subproject.workflow_id,
        assignments=assignments,
        now=item.created_at,
    )
    if item.due_date is not None:  # its assignees are told at due and when overdue (engine/cases/reminders.py)
        await reminder_rows.schedule_due(session, case_id=case.id, item_id=item.id, due=item.due_date)
    return item, case


async def _lock_for_change(session: AsyncSession, actor: Actor, item_id: str, intent: str) -> WorkflowItem:
    item = await lock(session, WorkflowItem, item_id, what="workflow item")
    await permissions.require(session, actor=actor, resource_id=item.id, intent=intent, what="workflow item")

    status = await session.scalar(select(Case.status).where(Case.object_id == item.id))
    if status not in OPEN_CASE_STATUSES:
        raise DomainError(ErrorCode.RESOURCE_CLOSED, "The workflow item is closed and cannot change.")
    return item


async def update_workflow_item(
    session: AsyncSession,
    *,
    actor: Actor,
    id: str,
    display_name: Any = UNSET,
    description: Any = UNSET,
    due_date: Any = UNSET,
    amount_type: Any = UNSET,
    amount: Any = UNSET,
    currency: Any = UNSET,
    exchange_rate: Any = UNSET,
    billing_date: Any = UNSET,
    tags: Any = UNSET,
    additional_data: Any = UNSET,
) -> WorkflowItem:
    item = await _lock_for_change(session, actor, id, "workflowItem.update")
    changes: dict[str, Any] = {
        "display_name": UNSET if display_name is UNSET else validation.require_text(display_name, "displayName"),
        "description": UNSET if description is UNSET else validation.optional_text(description, "description"),
        "due_date": due_date,
        "tags": UNSET if tags is UNSET else validation.tags(tags),
        "additional_data": UNSET
        if additional_data is UNSET
        else validation.json_object(additional_data, "additionalData"),
    }
    money = {
        "amount_type": amount_type,
        "amount": amount,
        "currency": currency,
        "exchange_rate": exchange_rate,
        "billing_date": billing_date,
    }
    if any(v is not UNSET for v in money.values()):
        merged = {k: getattr(item, k) if v is UNSET else v for k, v in money.items()}
        if amount_type == "N/A":  # switching to N/A clears the money fields
            merged.update(amount=None, currency=None, exchange_rate=None, billing_date=None)
        subproject = await session.get(Subproject, item.subproject_id)
        assert subproject is not None
        changes.update(_budget_fields(default_currency=subproject.currency, **merged))
    before = item.due_date
    updated = await apply_update(session, actor=actor, resource=item, kind="workflow_item_updated", changes=changes)
    if updated.due_date != before:  # a new due date: new reminders (engine/cases/reminders.py)
        case_id = await session.scalar(select(Case.id).where(Case.object_id == item.id))
        task_index.touch(session, [case_id])  # its tasks' rows carry the due date (their order by it)
        await reminder_rows.schedule_due(session, case_id=case_id, item_id=item.id, due=updated.due_date)
    return updated


async def assign_workflow_item(session: AsyncSession, *, actor: Actor, id: str, assignee_id: str) -> WorkflowItem:
    item = await _lock_for_change(session, actor, id, "workflowItem.assign")
    party = await check_party(session, assignee_id, "assigneeId")
    return await apply_update(
        session, actor=actor, resource=item, kind="workflow_item_assigned", changes={"assignee_id": party}
    )
