"""Everything a case operation needs about one case, loaded once per transaction."""

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import String, bindparam, cast, literal, null, select, union_all
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import make_transient_to_detached
from sqlalchemy.orm.util import identity_key

from engine.errors import DomainError, not_found
from engine.history import visits
from engine.notify import reminder_rows
from engine.notify.subscribers import OPT_IN_LEVELS, subscribers_query
from engine.spec.specs import ActionSpec, WorkflowSpec
from engine.spec.workflows import spec_by_id
from models import (
    Case,
    CaseRoleParty,
    CaseState,
    EnabledAction,
    Subproject,
    WorkflowItem,
    new_id,
    unit_of_work,
)

# The statuses in which a case's actions run (a completed case can still be reopened); the task
# index (engine/cases/task_index.py) holds rows for these alone.
EXECUTABLE_STATUSES = ("ACTIVE", "COMPLETED")


@dataclass
class CaseContext:
    session: AsyncSession
    case: Case
    item: WorkflowItem
    subproject: Subproject
    workflow_id: str
    spec: WorkflowSpec
    states: dict[str, str] = field(default_factory=dict)  # scope -> state short name
    roles: dict[str, set[str]] = field(default_factory=dict)  # role -> party ids
    # The case's ENABLED instances, when an operation loaded them (oldest first); the same ORM
    # rows the session holds, so status changes show in place, and recompute adds what it enables.
    enabled: list[EnabledAction] | None = None
    # Who opted in to news of this case, per level (engine.notify.notifications): read with the
    # states and roles when the case is locked for a change, which is when it is needed.
    subscribers: dict[str, set[str]] | None = None

    def roles_of(self, party_ids: frozenset[str]) -> set[str]:
        return {role for role, parties in self.roles.items() if not parties.isdisjoint(party_ids)}


def _case_query(by: str, *, lock: bool) -> Any:
    """The case with its item and subproject in one round trip; ``lock`` locks the case row
    alone (FOR UPDATE OF workflow_case; SQLite serializes writers anyway)."""
    column = Case.id if by == "case" else Case.object_id
    query = (
        select(Case, WorkflowItem, Subproject)
        .join(WorkflowItem, WorkflowItem.id == Case.object_id)
        .join(Subproject, Subproject.id == WorkflowItem.subproject_id)
        .where(column == bindparam("key"))
    )
    if lock:
        query = query.with_for_update(of=Case).execution_options(populate_existing=True)
    return query


# Built once: statement construction cost as much as a round trip on the write path.
_CASE_QUERIES = {(by, lock): _case_query(by, lock=lock) for by in ("case", "item") for lock in (False, True)}


def _case_rows(*, subscribers: bool, enabled: bool) -> Any:
    """The case's states, role players and, on request, its subscribers and ENABLED instances,
    in one round trip: ("state", scope, state), ("role", role, party) and ("news", level, user)
    rows; with ``enabled`` each row starts with an instance (None in the other rows), loaded
    as the session's ORM rows."""
    facts = [
        select(literal("state"), CaseState.scope, CaseState.state).where(CaseState.case_id == bindparam("case")),
        select(literal("role"), CaseRoleParty.role, CaseRoleParty.party_id).where(
            CaseRoleParty.case_id == bindparam("case")
        ),
    ]
    if subscribers:
        query = subscribers_query()
        facts.append(select(literal("news"), *query.selected_columns).where(query.whereclause))
    if not enabled:
        return union_all(*facts)
    instance = EnabledAction.__table__.c
    no_instance = [cast(null(), column.type).label(column.name) for column in instance]
    no_fact = [cast(null(), String).label(name) for name in ("kind", "fact_key", "fact_value")]
    rows = union_all(
        select(*instance, *no_fact).where(instance.case_id == bindparam("case"), instance.status == "ENABLED"),
        *[select(*no_instance, *fact.selected_columns).where(fact.whereclause) for fact in facts],
    )
    return select(EnabledAction, *list(rows.selected_columns)[-3:]).from_statement(rows)


# Built once, as above.
_CASE_ROWS = {
    (subscribers, enabled): _case_rows(subscribers=subscribers, enabled=enabled)
    for subscribers in (False, True)
    for enabled in (False, True)
}


async def load_case(
    session: AsyncSession,
    *,
    case_id: str | None = None,
    workflow_item_id: str | None = None,
    lock: bool = False,
    with_enabled: bool = False,
) -> CaseContext:
    """Load a case by its id or its workflow item's; ``lock`` takes the row lock that
    serializes every change to the case (FOR UPDATE on PostgreSQL) and reads the case's
    subscribers too, for the notifications of that change; ``with_enabled`` reads its ENABLED
    instances into ``ctx.enabled`` (an executed action needs them) in the same round trip."""
    by, key = ("case", case_id) if case_id is not None else ("item", workflow_item_id)
    found = (await session.execute(_CASE_QUERIES[(by, lock)], {"key": key})).first()
    if found is None:
        raise case_not_found(case_id=case_id, workflow_item_id=workflow_item_id)
    case, item, subproject = found
    return await load_facts(session, case, item, subproject, lock=lock, with_enabled=with_enabled)


async def load_facts(
    session: AsyncSession, case: Case, item: WorkflowItem, subproject: Subproject, *, lock: bool, with_enabled: bool
) -> CaseContext:
    """The rest of ``load_case`` for a case whose row (with its item and subproject) is in hand:
    its states, role players, and per ``lock`` and ``with_enabled`` its subscribers and ENABLED
    instances, in one round trip. A caller that locked the case with a statement of its own (a
    timer's claim, engine/cases/timers.py) calls it after that statement: read in the locking one,
    these rows would come from before the lock was granted."""
    ctx = await _context(session, case, item, subproject)
    params = {"case": case.id}
    if lock:
        ctx.subscribers = {level: set() for level in OPT_IN_LEVELS}
        params.update(item=item.id, subproject=subproject.id, workflow=case.workflow_id)
    rows = (await session.execute(_CASE_ROWS[(lock, with_enabled)], params)).all()
    if with_enabled:
        ctx.enabled = sorted((row[0] for row in rows if row[0] is not None), key=_oldest_first)
        rows = [row[1:] for row in rows if row[0] is None]
    for kind, key, value in rows:
        if kind == "state":
            ctx.states[key] = value
        elif kind == "role":
            ctx.roles.setdefault(key, set()).add(value)
        else:
            ctx.subscribers[key].add(value)  # type: ignore[index]
    return ctx


def state_row(ctx: CaseContext, scope: str) -> CaseState:
    """The session's row of the case's state in ``scope``, to change it, without reading it
    again: ``load_case`` read its value, so the row exists and is attached as if loaded, and a
    change to it is flushed as one UPDATE with the operation's other writes (checked to have
    matched its row). A row this transaction added or already holds is the one returned."""
    session = ctx.session.sync_session
    key = (ctx.case.id, scope)
    held = session.identity_map.get(identity_key(CaseState, key))
    if held is None:
        held = next((o for o in session.new if isinstance(o, CaseState) and (o.case_id, o.scope) == key), None)
    if held is None:
        held = CaseState(case_id=ctx.case.id, scope=scope, state=ctx.states[scope])
        make_transient_to_detached(held)
        session.add(held)
    return held  # type: ignore[return-value]


def note_move(
    ctx: CaseContext, scope: str, from_state: str | None, to_state: str, action: str | None, at: datetime
) -> None:
    """The one way the case machinery tells engine/history/visits.py that a scope changed state
    (``from_state`` None: the scope starts), so a visit ends and one starts with the log entry."""
    visits.moved(
        ctx.session,
        case_id=ctx.case.id,
        subproject_id=ctx.item.subproject_id,
        workflow_id=ctx.workflow_id,
        scope=scope,
        scope_action=ctx.spec.states[to_state].scope,
        from_state=from_state,
        to_state=to_state,
        action=action,
        at=at,
        has_scopes=ctx.spec.has_children,
    )


def case_not_found(*, case_id: str | None, workflow_item_id: str | None) -> DomainError:
    """The answer for a case that does not exist, by whichever id it was named; a case the actor
    may not view gets exactly this too, never naming the other id."""
    if case_id is not None:
        return not_found("case", case_id, "caseId")
    return not_found("workflow item", workflow_item_id or "", "workflowItemId")


async def new_case_context(session: AsyncSession, *, case: Case, item: WorkflowItem) -> CaseContext:
    """The context of a case created in this transaction, from the rows in hand: it has no
    states, role players or instances yet, so there is nothing to read (its item's subproject
    was loaded, and locked, when the item was created)."""
    subproject = await session.get(Subproject, item.subproject_id)
    assert subproject is not None
    ctx = await _context(session, case, item, subproject)
    ctx.enabled = []
    return ctx


async def _context(session: AsyncSession, case: Case, item: WorkflowItem, subproject: Subproject) -> CaseContext:
    """A case's context before its states, roles and instances are known."""
    return CaseContext(
        session=session,
        case=case,
        item=item,
        subproject=subproject,
        workflow_id=case.workflow_id,
        spec=await spec_by_id(session, case.workflow_id),
    )


def _oldest_first(instance: EnabledAction) -> tuple[Any, str]:
    return instance.enabled_at, instance.id


def new_instance(
    ctx: CaseContext,
    action: ActionSpec,
    scope: str,
    now: datetime,
    *,
    trigger: str | None = None,
    assignee: str | None = None,
) -> EnabledAction:
    """A new ENABLED instance of ``action`` in ``scope`` (its parent, for a child scope). A new
    instance starts a new clock: disabled and enabled again, a timer restarts. A scope row
    (``trigger``) has no timer of its own: its parent's is the one that runs."""
    timeout = action.timeout_seconds if trigger is None else None
    fire_at = None if timeout is None else now + timedelta(seconds=timeout)
    instance = EnabledAction(
        id=new_id("ea"),
        case_id=ctx.case.id,
        action=action.short_name,
        scope=scope,
        parent_id=scope or None,
        trigger=trigger or action.trigger,
        assignee_party_id=assignee,
        fire_at=fire_at,
        enabled_at=now,
    )
    if fire_at is not None:  # the sweepers are told once the transaction commits
        unit_of_work(ctx.session).timer_written(fire_at)
    if trigger is None and (action.reminders or action.escalate):  # told while it waits (engine/cases/reminders.py)
        reminder_rows.schedule_instance(ctx.session, instance, action, now)
    ctx.session.add(instance)
    if ctx.enabled is not None:
        ctx.enabled.append(instance)
    return instance
