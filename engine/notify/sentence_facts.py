"""What the sentences of log entries are made of, loaded for many entries at once.

An entry carries ids and short names; a sentence needs the names behind them (people, the item,
its subproject and project, the workflow version's actions, states and roles), the item's amount
and due date, and what the entry asks of whom now (the action instances it enabled that still
wait, with who is expected to act). ``load_facts`` reads them for a batch of entries in a fixed
number of statements, whatever the number of entries (at most seven; fewer when a kind of fact
is not needed): never one per entry."""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Any

from sqlalchemy import select, true
from sqlalchemy.ext.asyncio import AsyncSession

from engine.people.actors import Actor
from engine.people.visibility import item_visible, project_visible, subproject_visible
from engine.spec.specs import WorkflowSpec
from engine.spec.workflows import specs_by_ids
from models import Case, CaseRoleParty, EnabledAction, Group, Project, Subproject, User, WorkflowItem

SYSTEM_ID = "system"


@dataclass(frozen=True, slots=True)
class ItemFacts:
    id: str
    name: str
    amount: str | None
    amount_type: str
    currency: str | None
    due_date: date | None


@dataclass(frozen=True, slots=True)
class Waiting:
    """An action instance that waits now for someone: the entry enabled it (or reminds of it)."""

    id: str
    action: str  # its short name
    name: str  # its pretty name
    parties: frozenset[str]  # who is expected to act: its own assignee, else its role's players
    enabled_at: datetime
    role: str | None = None  # the role expected to act, if the action names one


@dataclass(frozen=True, slots=True)
class EntryFacts:
    """One entry with what its sentence needs. ``entry`` is the log entry itself (a
    ``models.Activity`` row, a read row or an ``engine.history.activity.LogEntry``: anything with
    its columns as attributes)."""

    entry: Any
    actor: str | None = None  # the actor's full name; None for the system (or no actor)
    on_behalf_of: str | None = None  # the absent user a deputy acted for, by name
    item: ItemFacts | None = None
    subproject: str | None = None
    subproject_currency: str | None = None
    project: str | None = None
    spec: WorkflowSpec | None = None  # the version of the workflow the item's case runs on
    subproject_spec: WorkflowSpec | None = None  # the version a subproject's new items take
    names: Mapping[str, str] = field(default_factory=dict)  # parties named in the entry's data
    roles: Mapping[str, frozenset[str]] = field(default_factory=dict)  # the case's role players now
    waiting: tuple[Waiting, ...] = ()


def data_parties(entry: Any) -> set[str]:
    """The parties an entry's data names (new players, assignees, grantees)."""
    data = entry.data if isinstance(entry.data, dict) else {}
    found: set[str] = set()
    for key in ("partyIds", "before", "after"):
        value = data.get(key)
        if isinstance(value, list):
            found |= {p for p in value if isinstance(p, str)}
    for key in ("partyId", "assigneeId", "validatorId"):
        value = data.get(key)
        if isinstance(value, str):
            found.add(value)
    return found


async def load_facts(session: AsyncSession, entries: Sequence[Any], *, viewer: Actor | None = None) -> list[EntryFacts]:
    """The facts of each entry, in the entries' order, read in a bounded number of statements.
    ``viewer``: an item, subproject or project they may not see is not named (hidden is
    missing: the sentence says "an item"), though they may read an entry about it."""
    if not entries:
        return []
    party_ids = {p for e in entries for p in (e.actor_id, getattr(e, "on_behalf_of", None)) if p and p != SYSTEM_ID}
    for entry in entries:
        party_ids |= data_parties(entry)
    item_ids = {e.workflow_item_id for e in entries if e.workflow_item_id}
    subproject_ids = {e.subproject_id for e in entries if e.subproject_id}
    project_ids = {e.project_id for e in entries if e.project_id}

    names = await _party_names(session, party_ids)
    visible: set[str] = set()  # of the item, subproject and project ids, those the viewer may see
    items: dict[str, tuple[ItemFacts, str | None, str | None]] = {}  # id -> (facts, case id, workflow id)
    if item_ids:
        rows = await session.execute(
            select(
                WorkflowItem.id,
                WorkflowItem.display_name,
                WorkflowItem.amount,
                WorkflowItem.amount_type,
                WorkflowItem.currency,
                WorkflowItem.due_date,
                Case.id,
                Case.workflow_id,
                _shown(item_visible, viewer),
            )
            .outerjoin(Case, Case.object_id == WorkflowItem.id)
            .where(WorkflowItem.id.in_(item_ids))
        )
        for id, name, amount, amount_type, currency, due, case_id, workflow_id, shown in rows:
            items[id] = (ItemFacts(id, name, amount, amount_type, currency, due), case_id, workflow_id)
            visible |= {id} if shown else set()
    subprojects: dict[str, tuple[str, str, str]] = {}
    if subproject_ids:
        rows = await session.execute(
            select(
                Subproject.id,
                Subproject.display_name,
                Subproject.currency,
                Subproject.workflow_id,
                _shown(subproject_visible, viewer),
            ).where(Subproject.id.in_(subproject_ids))
        )
        for id, name, currency, workflow, shown in rows:
            subprojects[id] = (name, currency, workflow)
            visible |= {id} if shown else set()
    projects: dict[str, str] = {}
    if project_ids:
        rows = await session.execute(
            select(Project.id, Project.display_name, _shown(project_visible, viewer)).where(Project.id.in_(project_ids))
        )
        for id, name, shown in rows:
            projects[id] = name
            visible |= {id} if shown else set()

    workflow_ids = {workflow for _, _, workflow in items.values() if workflow}
    workflow_ids |= {
        subprojects[e.subproject_id][2]
        for e in entries
        if e.kind == "subproject_workflow_changed" and e.subproject_id in subprojects
    }
    specs = await specs_by_ids(session, workflow_ids)
    case_ids = {case for _, case, _ in items.values() if case}
    roles, waiting = await _waiting(session, case_ids, specs, {case: wf for _, case, wf in items.values() if case})

    facts = []
    for entry in entries:
        item = items.get(entry.workflow_item_id or "")
        subproject = subprojects.get(entry.subproject_id or "")
        case_id = item[1] if item else None
        actor_id = entry.actor_id if entry.actor_id and entry.actor_id != SYSTEM_ID else None
        deputy = getattr(entry, "on_behalf_of", None)
        facts.append(
            EntryFacts(
                entry=entry,
                actor=(names.get(actor_id) or "Someone") if actor_id else None,
                on_behalf_of=(names.get(deputy) or "someone") if deputy else None,
                item=item[0] if item else None,
                subproject=subproject[0] if subproject else None,
                subproject_currency=subproject[1] if subproject else None,
                project=projects.get(entry.project_id or ""),
                spec=specs.get(item[2] or "") if item else None,
                subproject_spec=specs.get(subproject[2]) if subproject else None,
                names={p: names[p] for p in data_parties(entry) if p in names},
                roles=roles.get(case_id or "", {}),
                waiting=_asked_by(entry, waiting.get(case_id or "", ())),
            )
        )
    return facts if viewer is None else [seen_by(f, visible) for f in facts]


def _shown(rule: Any, viewer: Actor | None) -> Any:
    """Whether the viewer may see the row, as a column (true without a viewer): the row's other
    facts (its workflow's words, what waits) are kept, its name is not."""
    return (true() if viewer is None else rule(viewer)).label("shown")


def seen_by(facts: EntryFacts, visible: set[str]) -> EntryFacts:
    """``facts`` without the item, subproject or project whose id is not in ``visible`` (the
    reader may read an entry about a thing they may not see: it is then "an item")."""
    entry = facts.entry
    hidden = {
        "item": entry.workflow_item_id and entry.workflow_item_id not in visible,
        "subproject": entry.subproject_id and entry.subproject_id not in visible,
        "project": entry.project_id and entry.project_id not in visible,
    }
    if not any(hidden.values()):
        return facts
    # Nor what the entry says of it: a name, an amount or a due date it records would name the
    # thing again ("edited an item: name \"Secret merger\""); the rest (a new state) is said.
    about = "item" if entry.workflow_item_id else "subproject" if entry.subproject_id else "project"
    unsaid = _Unsaid(entry) if hidden[about] else entry
    return replace(facts, entry=unsaid, **{name: None for name, gone in hidden.items() if gone})


# What an entry records of the thing itself, which would name it or say what it is about.
_NAMING = frozenset({"displayName", "description", "amount", "currency", "dueDate", "billingDate", "tags"})


class _Unsaid:
    """A log entry seen without what its data says of the thing (``_NAMING``); the rest as is."""

    __slots__ = ("_entry", "data")

    def __init__(self, entry: Any) -> None:
        self._entry = entry
        data = entry.data if isinstance(entry.data, dict) else {}
        self.data = {key: value for key, value in data.items() if key not in _NAMING}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._entry, name)


async def _party_names(session: AsyncSession, ids: set[str]) -> dict[str, str]:
    if not ids:
        return {}
    users = select(User.id, User.display_name).where(User.id.in_(ids))
    groups = select(Group.id, Group.display_name).where(Group.id.in_(ids))
    return {id: name for id, name in await session.execute(users.union_all(groups))}


async def _waiting(
    session: AsyncSession, case_ids: set[str], specs: Mapping[str, WorkflowSpec], workflow_of: Mapping[str, str]
) -> tuple[dict[str, dict[str, frozenset[str]]], dict[str, tuple[Waiting, ...]]]:
    """Each case's role players and the user actions it waits on now (ENABLED)."""
    if not case_ids:
        return {}, {}
    players: dict[str, dict[str, set[str]]] = {}
    rows = await session.execute(
        select(CaseRoleParty.case_id, CaseRoleParty.role, CaseRoleParty.party_id).where(
            CaseRoleParty.case_id.in_(case_ids)
        )
    )
    for case_id, role, party in rows:
        players.setdefault(case_id, {}).setdefault(role, set()).add(party)
    roles = {case: {role: frozenset(parties) for role, parties in by_role.items()} for case, by_role in players.items()}
    instances = await session.scalars(
        select(EnabledAction)
        .where(EnabledAction.case_id.in_(case_ids), EnabledAction.status == "ENABLED", EnabledAction.trigger == "user")
        .order_by(EnabledAction.enabled_at, EnabledAction.id)
    )
    waiting: dict[str, list[Waiting]] = {}
    for instance in instances:
        spec = specs.get(workflow_of.get(instance.case_id, ""))
        action = spec.actions.get(instance.action) if spec else None
        if instance.assignee_party_id:
            parties = frozenset({instance.assignee_party_id})
        else:
            parties = roles.get(instance.case_id, {}).get(instance.assigned_role or "", frozenset())
        name = action.pretty_name if action else instance.action.replace("_", " ")
        waiting.setdefault(instance.case_id, []).append(
            Waiting(instance.id, instance.action, name, parties, instance.enabled_at, instance.assigned_role)
        )
    return roles, {case: tuple(listed) for case, listed in waiting.items()}


def _asked_by(entry: Any, waiting: Iterable[Waiting]) -> tuple[Waiting, ...]:
    """The waiting instances this entry asks someone to act on: those it enabled (same instant:
    an action enables the next ones as it is logged), or the one a reminder or an escalation
    is about; what a role's new players or a resumed (or due) item wait on."""
    data = entry.data if isinstance(entry.data, dict) else {}
    about = data.get("enabledActionId")
    if entry.kind in ("action_reminded", "action_escalated", "timer_failed"):
        return tuple(w for w in waiting if w.id == about)
    if entry.kind in ("action_executed", "case_migrated"):
        return tuple(w for w in waiting if w.enabled_at == entry.at)
    if entry.kind in ("role_assigned", "role_reassigned"):  # what the role's new players are asked
        return tuple(w for w in waiting if w.role is not None and w.role == data.get("role"))
    if entry.kind in ("case_resumed", "workflow_item_due", "workflow_item_overdue"):
        return tuple(waiting)  # what the item waits on
    return ()


__all__ = ["EntryFacts", "ItemFacts", "Waiting", "data_parties", "load_facts", "seen_by"]
