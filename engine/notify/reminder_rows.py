"""The rows of engine/cases/reminders.py, written where what they are about is: a reminder and an
escalation row when an instance of an action that asks for them is enabled
(``engine.cases.context.new_instance``), a due and an overdue row when an item gets a due date
(``engine.cases.items``). Kept apart from the firing so that those low modules need nothing above them.
"""

from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from engine.spec.specs import ActionSpec
from models import EnabledAction, Reminder, unit_of_work

REMIND, ESCALATE, DUE, OVERDUE = "REMIND", "ESCALATE", "DUE", "OVERDUE"


def schedule_instance(session: AsyncSession, instance: EnabledAction, action: ActionSpec, now: datetime) -> None:
    """The reminder and escalation rows of a newly enabled instance; the sweepers are told."""

    def row(kind: str, seconds: int) -> Reminder:
        return Reminder(
            id=f"{kind.lower()}:{instance.id}",
            kind=kind,
            case_id=instance.case_id,
            enabled_action_id=instance.id,
            fire_at=now + timedelta(seconds=seconds),
        )

    made = []
    if action.reminders is not None:
        made.append(row(REMIND, action.reminders.every))
    if action.escalate is not None:
        made.append(row(ESCALATE, action.escalate.after))
    session.add_all(made)
    for row in made:
        unit_of_work(session).timer_written(row.fire_at)


def due_start(due: date) -> datetime:
    """A due date is due from its first instant (UTC) and overdue from the next day's."""
    return datetime.combine(due, time(0), tzinfo=UTC)


async def schedule_due(session: AsyncSession, *, case_id: str, item_id: str, due: date | None) -> None:
    """Replace the item's due-date rows with those of ``due`` (none for None); the sweepers are told."""
    await session.execute(delete(Reminder).where(Reminder.id.in_([f"due:{item_id}", f"overdue:{item_id}"])))
    if due is None:
        return
    start = due_start(due)
    session.add_all(
        [
            Reminder(id=f"due:{item_id}", kind=DUE, case_id=case_id, fire_at=start),
            Reminder(id=f"overdue:{item_id}", kind=OVERDUE, case_id=case_id, fire_at=start + timedelta(days=1)),
        ]
    )
    unit_of_work(session).timer_written(start)


__all__ = ["DUE", "ESCALATE", "OVERDUE", "REMIND", "due_start", "schedule_due", "schedule_instance"]
