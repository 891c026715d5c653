"""Reminders, escalations and due dates (docs/workflows.md, "Reminders and escalation";
docs/api.md, "Due dates"): timers that tell people about waiting work instead of firing an
action.

A ``reminder`` row is written with what it is about (engine/notify/reminder_rows.py): when an
instance of an action with ``reminders`` or ``escalate`` is enabled, and when an item gets a
due date. The sweeper fires due rows like timers
(``claim_due`` + ``fire_claimed``: one transaction each, the row and its case locked, ``FOR
UPDATE SKIP LOCKED``, so several processes fire each once; a suspended case's wait, a closed
case's are dropped): a log entry
about the item, written by the system, and notifications as for any entry, the people it is
for at the ASSIGNED level:

- REMIND: the instance's assignees, ``action_reminded`` (the n-th of max), again ``every``
  seconds later while the instance is still ENABLED, at most ``max`` times;
- ESCALATE: the players of ``to_role``, ``action_escalated``, once;
- DUE (the due date's start, 00:00 UTC) and OVERDUE (its end): the item's assignee and the
  assignees of its case's waiting actions, ``workflow_item_due`` / ``workflow_item_overdue``.

A row whose instance is no longer enabled, or whose due date changed, is dropped when it comes
due. These verbs work in the caller's transaction and never commit.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.cases.context import CaseContext, load_facts
from engine.cases.transitions import assigned_parties
from engine.history import activity
from engine.notify import notifications
from engine.notify.reminder_rows import DUE, ESCALATE, OVERDUE, REMIND, due_start
from engine.people.actors import SYSTEM
from models import Case, Reminder, Subproject, WorkflowItem

# A suspended case's reminders wait for its resumption; a closed case's are claimed to be dropped.
_DUE = (Reminder.fire_at <= bindparam("now")) & (Case.status != "SUSPENDED")
_CLAIM = (
    select(Reminder, Case, WorkflowItem, Subproject)
    .join(Case, Case.id == Reminder.case_id)
    .join(WorkflowItem, WorkflowItem.id == Case.object_id)
    .join(Subproject, Subproject.id == WorkflowItem.subproject_id)
    .where(_DUE)
    .order_by(Reminder.fire_at)
    .limit(1)
    .with_for_update(of=[Reminder.__table__, Case.__table__], skip_locked=True)
)
_NEXT = select(func.min(Reminder.fire_at)).join(Case, Case.id == Reminder.case_id).where(Case.status != "SUSPENDED")


@dataclass
class Claimed:
    reminder: Reminder
    case: Case
    item: WorkflowItem
    subproject: Subproject
    entries: list[activity.LogEntry] = field(default_factory=list)


async def claim_due(session: AsyncSession, *, now: datetime) -> Claimed | None:
    """The oldest reminder due at ``now`` of a case that is not suspended, locked with its case;
    None when none is (or every due one's case is busy)."""
    found = (await session.execute(_CLAIM, {"now": now})).first()
    return None if found is None else Claimed(*found)


async def next_due(session: AsyncSession) -> datetime | None:
    """When the next reminder of a case not suspended falls due (possibly already past)."""
    return await session.scalar(_NEXT)


async def fire_claimed(session: AsyncSession, claimed: Claimed, *, now: datetime) -> Claimed:
    """Tell the people a claimed reminder is for, and schedule its next one (or drop it)."""
    row = claimed.reminder
    if claimed.case.status != "ACTIVE":  # completed or canceled: nobody waits on it any more
        await session.delete(row)
        return claimed
    ctx = await load_facts(session, claimed.case, claimed.item, claimed.subproject, lock=True, with_enabled=True)
    if row.kind in (DUE, OVERDUE):
        await _fire_due(ctx, row, now, claimed)
        return claimed
    instance = next((ea for ea in ctx.enabled or () if ea.id == row.enabled_action_id), None)
    action = None if instance is None else ctx.spec.actions.get(instance.action)
    if instance is None or action is None:  # executed, canceled, or no longer in the workflow
        await session.delete(row)
        return claimed
    if row.kind == REMIND and action.reminders is not None:
        row.sent += 1
        data = {
            "enabledActionId": instance.id,
            "reminder": row.sent,
            "of": action.reminders.max,
            "enabledAt": instance.enabled_at.isoformat(),
        }
        entry = await _record(ctx, "action_reminded", instance.action, data, now)
        await notifications.notify(ctx, entry, assigned_parties=assigned_parties(ctx, [instance]))
        claimed.entries.append(entry)
        if row.sent < action.reminders.max:
            row.fire_at = now + timedelta(seconds=action.reminders.every)
            return claimed
    elif row.kind == ESCALATE and action.escalate is not None:
        data = {
            "enabledActionId": instance.id,
            "toRole": action.escalate.to_role,
            "waitedSeconds": action.escalate.after,
            "enabledAt": instance.enabled_at.isoformat(),
        }
        entry = await _record(ctx, "action_escalated", instance.action, data, now)
        await notifications.notify(ctx, entry, assigned_parties=ctx.roles.get(action.escalate.to_role, set()))
        claimed.entries.append(entry)
    await session.delete(row)
    return claimed


async def _fire_due(ctx: CaseContext, row: Reminder, now: datetime, claimed: Claimed) -> None:
    item = ctx.item
    start = None if item.due_date is None else due_start(item.due_date)
    expected = start if row.kind == DUE else (None if start is None else start + timedelta(days=1))
    if expected == row.fire_at:  # else the due date changed since: a stale row, dropped
        kind = "workflow_item_due" if row.kind == DUE else "workflow_item_overdue"
        entry = await _record(ctx, kind, None, {"dueDate": item.due_date.isoformat()}, now)  # type: ignore[union-attr]
        waiting = [ea for ea in ctx.enabled or () if ea.trigger == "user"]
        parties = assigned_parties(ctx, waiting) | ({item.assignee_id} if item.assignee_id else set())
        await notifications.notify(ctx, entry, assigned_parties=parties)
        claimed.entries.append(entry)
    await ctx.session.delete(row)


async def _record(ctx: CaseContext, kind: str, action: str | None, data: dict, now: datetime) -> activity.LogEntry:  # type: ignore[type-arg]
    return await activity.record(
        ctx.session,
        kind=kind,
        actor_id=SYSTEM.user_id,
        about=ctx.item,
        case_id=ctx.case.id,
        action=action,
        data=data,
        at=now,
    )


__all__ = [
    "DUE",
    "ESCALATE",
    "OVERDUE",
    "REMIND",
    "Claimed",
    "claim_due",
    "fire_claimed",
    "next_due",
]
