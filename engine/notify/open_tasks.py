"""A user's open tasks, as the "your open tasks" digest lists them (seed 003, S003-28: every
action the user is assigned to, with its enabled date, its due date and a link to it).

Read from the task index (``task_assignment``, kept by engine/cases/task_index.py), as ``myTasks``
is: the enabled user instances assigned to one of the reader's parties (the user and their
groups), directly or through a role, in cases where an action can run.

**Deputies.** A task is lent as ``myTasks`` lends it (engine/people/deputies.py): while a
deputyship is active, the deputy's list holds the absent user's tasks too, each marked with the
absent user (``for_user``: "for Alice"), unless the task is the deputy's own as well (then it is
theirs, unmarked). The absent user's own list keeps them, unmarked: both may act, both are told.
Lent by two absent users at once: marked with the first by id, listed once.

**Hidden ≡ missing.** Only tasks whose item the reader may see now
(``engine.people.visibility.item_visible``, a deputy's lent roles included): a task on an item the
reader may not see is neither listed nor counted.

**Bounded.** Each party's tasks are two ranges of ``ix_task_assignment_party_due`` (the dated ones
by due date, the undated by id), each read up to the list's length, so a reader with a million
tasks costs a page; the count beyond the list ("and N more") stops at ``MAX_COUNTED``.
Order: soonest due first (the overdue, then today's, then later), undated last, ties by instance.
A task is overdue when its item's due date is before the reader's today (in their time zone),
as its sentence says it ("overdue since …", engine/notify/words.py).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import String, cast, func, literal, null, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession

from engine.people import deputies
from engine.people.actors import Actor
from engine.people.visibility import item_visible
from engine.spec import workflows
from models import Case, EnabledAction, TaskAssignment, User, WorkflowItem

MAX_LISTED = 50  # tasks one message lists; the rest are counted
MAX_COUNTED = 1000  # where that count stops


@dataclass(frozen=True, slots=True)
class OpenTask:
    enabled_action_id: str
    action: str  # the action's short name
    action_name: str  # its pretty name, from the case's workflow version
    item_id: str
    item_name: str
    amount: str | None
    amount_type: str
    currency: str | None
    case_id: str
    enabled_at: datetime
    due_date: date | None
    overdue: bool
    for_user_id: str | None  # the absent user a deputy holds the task for (None: the reader's own)
    for_user: str | None  # that user's display name


@dataclass(frozen=True, slots=True)
class OpenTasks:
    tasks: list[OpenTask]
    total: int  # every open task the reader may see, counted up to MAX_COUNTED
    overdue: int  # how many of them are overdue (same bound)

    @property
    def more(self) -> int:
        return max(0, self.total - len(self.tasks))


def is_overdue(due: date | None, today: date) -> bool:
    """Overdue: due before the reader's ``today`` (the date in their time zone)."""
    return due is not None and due < today


async def _parties(session: AsyncSession, actor: Actor, absent: Sequence[Actor] | None) -> list[tuple[str, str | None]]:
    """(party, the absent user it is lent by or None): the reader's own first. ``absent``: the
    users the reader stands in for now, when the caller has read them."""
    if absent is None:
        absent = await deputies.standing_in(session, user_id=actor.user_id)
    own = [(party, None) for party in sorted(actor.party_ids)]
    return own + [(party, lender.user_id) for lender in absent for party in sorted(lender.party_ids)]


def _ranges(actor: Actor, parties: list[tuple[str, str | None]], limit: int, *columns: Any) -> Any:
    """Each party's first ``limit`` tasks of each run (dated by due date, undated by id) that the
    reader may see, with ``behalf`` and ``columns`` (of the instance, its case and its item):
    one statement."""
    task = TaskAssignment.__table__.c
    selects = []
    for party, behalf in parties:
        marked = cast(null(), String) if behalf is None else literal(behalf, String)
        base = (
            select(task.enabled_action_id.label("id"), marked.label("behalf"), task.due_date.label("due"), *columns)
            .join(EnabledAction, EnabledAction.id == task.enabled_action_id)
            .join(Case, Case.id == task.case_id)
            .join(WorkflowItem, WorkflowItem.id == Case.object_id)
            .where(task.party_id == party, item_visible(actor))
        )
        dated = base.where(task.due_date.is_not(None)).order_by(task.due_date, task.enabled_action_id)
        undated = base.where(task.due_date.is_(None)).order_by(task.enabled_action_id)
        for run in (dated, undated):
            selects.append(select(*run.limit(limit).subquery().c))
    return union_all(*selects).subquery("open_tasks")


async def open_tasks(
    session: AsyncSession,
    *,
    actor: Actor,
    today: date,
    limit: int = MAX_LISTED,
    counted: bool = True,
    absent: Sequence[Actor] | None = None,
) -> OpenTasks:
    """The reader's open tasks they may see, soonest due first, at most ``limit`` listed;
    ``counted``: and all of them counted (else ``total`` counts the listed alone). ``today``:
    the reader's date, which tells the overdue. ``absent``: the users the reader stands in for
    (``deputies.standing_in``), when the caller has read them."""
    parties = await _parties(session, actor, absent)
    if not parties:
        return OpenTasks([], 0, 0)
    found = _ranges(
        actor,
        parties,
        limit,
        EnabledAction.action,
        EnabledAction.enabled_at,
        Case.id.label("case_id"),
        Case.workflow_id,
        WorkflowItem.id.label("item_id"),
        WorkflowItem.display_name,
        WorkflowItem.amount,
        WorkflowItem.amount_type,
        WorkflowItem.currency,
    )
    rows = (await session.execute(select(found))).all()
    # Once per instance: the reader's own when any of their parties has it, else lent by the
    # first absent user (by id).
    chosen: dict[str, Any] = {}
    for row in rows:
        held = chosen.get(row.id)
        if held is None or (held.behalf is not None and (row.behalf is None or row.behalf < held.behalf)):
            chosen[row.id] = row
    ordered = sorted(chosen.values(), key=lambda r: (r.due is None, r.due or date.min, r.id))[:limit]
    absent = {r.behalf for r in ordered if r.behalf is not None}
    names = dict((await session.execute(select(User.id, User.display_name).where(User.id.in_(absent)))).all())
    tasks = []
    for row in ordered:
        spec = await workflows.spec_by_id(session, row.workflow_id)  # cached per process
        action = spec.actions.get(row.action)
        tasks.append(
            OpenTask(
                enabled_action_id=row.id,
                action=row.action,
                action_name=action.pretty_name if action is not None else row.action,
                item_id=row.item_id,
                item_name=row.display_name,
                amount=row.amount,
                amount_type=row.amount_type,
                currency=row.currency,
                case_id=row.case_id,
                enabled_at=row.enabled_at,
                due_date=row.due,
                overdue=is_overdue(row.due, today),
                for_user_id=row.behalf,
                for_user=names.get(row.behalf) if row.behalf else None,
            )
        )
    if len(chosen) < limit or not counted:  # every one of every range, or no count asked
        return OpenTasks(tasks, len(chosen), sum(is_overdue(r.due, today) for r in chosen.values()))
    reach = _ranges(actor, parties, MAX_COUNTED)
    distinct = select(reach.c.id, func.min(reach.c.due).label("due")).group_by(reach.c.id).limit(MAX_COUNTED)
    distinct = distinct.subquery("distinct_tasks")
    overdue = func.count(distinct.c.due).filter(distinct.c.due < today)
    total, late = (await session.execute(select(func.count(), overdue).select_from(distinct))).one()
    return OpenTasks(tasks, total, late)


__all__ = ["MAX_COUNTED", "MAX_LISTED", "OpenTask", "OpenTasks", "is_overdue", "open_tasks"]
