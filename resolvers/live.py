"""What the live subscribers of one batch of activity entries share.

An entry points to an actor, a project, a subproject and a workflow item. Read through each
subscriber's own loaders, a dashboard selecting ``actor { login } workflowItem { displayName }``
cost two queries per subscriber per event: 2,000 per event at 1,000 subscribers. The event hub
reads these rows once per batch with who may view each, and every subscriber's loaders start
with the rows it may see (``None`` for the others, as its own visibility-filtered read finds).
"""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.people.actors import Actor
from models import (
    Activity,
    Case,
    CaseRoleParty,
    Group,
    Permission,
    Project,
    Subproject,
    User,
    WorkflowItem,
    kind_of,
)
from resolvers.records import records

# entry column -> (loader, the table it reads, the intent that lets a party view a row)
_VISIBLE_BY_GRANT = {
    "project_id": ("project_by_id", Project, "project.view"),
    "subproject_id": ("subproject_by_id", Subproject, "subproject.view"),
    "workflow_item_id": ("item_by_id", WorkflowItem, "workflowItem.view"),
}


@dataclass(frozen=True, slots=True)
class SharedRows:
    rows: dict[str, Any]  # id -> row, as the loaders read it
    viewers: dict[str, frozenset[str]]  # resource id -> parties that may view it
    # (entry id, admin, parties) -> view_of: a thousand subscribers are a handful of viewers
    _views: dict[tuple[Any, ...], tuple[bool, ...]] = field(default_factory=dict)

    def view_of(self, actor: Actor, entry: Activity) -> tuple[bool, ...]:
        """Which of ``entry``'s rows ``actor`` may see, all that tells two viewers' ``known_to``
        apart: the rows are the same objects for every viewer of the event."""
        key = (entry.id, actor.is_admin, actor.party_ids)
        view = self._views.get(key)
        if view is None:
            view = self._views[key] = tuple(
                self._may_view(actor, resource_id)
                for column in _VISIBLE_BY_GRANT
                if (resource_id := getattr(entry, column)) is not None
            )
        return view

    def _may_view(self, actor: Actor, resource_id: str) -> bool:
        return actor.is_admin or not self.viewers.get(resource_id, frozenset()).isdisjoint(actor.party_ids)

    def known_to(self, actor: Actor, entry: Activity) -> dict[str, dict[str, Any]]:
        """Loader name -> {id: row, or None where ``actor`` may not view it} for ``entry``."""
        known: dict[str, dict[str, Any]] = {}
        actor_id = entry.actor_id
        if actor_id in self.rows:  # parties are not filtered by visibility
            known["party_by_id"] = {actor_id: self.rows[actor_id]}
        for column, (loader, _, _) in _VISIBLE_BY_GRANT.items():
            resource_id = getattr(entry, column)
            if resource_id is None:
                continue
            known[loader] = {resource_id: self.rows.get(resource_id) if self._may_view(actor, resource_id) else None}
        return known


async def read_shared(session: AsyncSession, entries: Sequence[Activity]) -> SharedRows:
    """The rows the entries point to, and their viewers: holders of the resource's view intent
    and, for a workflow item, the players of its case (resolvers/visibility.py, in Python)."""
    rows: dict[str, Any] = {}
    parties = {e.actor_id for e in entries if e.actor_id}
    for table, kind in ((User, "User"), (Group, "Group")):
        ids = [i for i in parties if kind_of(i) == kind]
        if ids:
            rows.update(
                (r.id, r) for r in records(await session.execute(select(table.__table__).where(table.id.in_(ids))))
            )
    view_intent: dict[str, str] = {}  # resource id -> the intent that lets a party view it
    for column, (_, table, intent) in _VISIBLE_BY_GRANT.items():
        ids = {getattr(e, column) for e in entries if getattr(e, column)}
        if ids:
            rows.update(
                (r.id, r) for r in records(await session.execute(select(table.__table__).where(table.id.in_(ids))))
            )
            view_intent.update(dict.fromkeys(ids, intent))
    viewers: dict[str, set[str]] = defaultdict(set)
    if view_intent:
        grants = select(Permission.resource_id, Permission.intent, Permission.party_id, Permission.inherit).where(
            Permission.resource_id.in_(view_intent), Permission.intent.in_(set(view_intent.values()))
        )
        reaching: dict[str, set[str]] = defaultdict(set)  # view grants that reach down
        for resource_id, intent, party, inherit in await session.execute(grants):
            if view_intent[resource_id] == intent:
                viewers[resource_id].add(party)
                if inherit:
                    reaching[resource_id].add(party)
        # An entry names its item's subproject and project too: their reaching view grants
        # were read above (engine/people/inheritance.py).
        for resource_id in view_intent:
            row = rows.get(resource_id)
            for above in ("subproject_id", "project_id"):
                if row is not None and resource_id != getattr(row, above, resource_id):
                    viewers[resource_id] |= reaching.get(getattr(row, above), set())
        items = [i for i, intent in view_intent.items() if intent == "workflowItem.view"]
        if items:
            players = (
                select(Case.object_id, CaseRoleParty.party_id)
                .join(CaseRoleParty, CaseRoleParty.case_id == Case.id)
                .where(Case.object_id.in_(items))
            )
            for item_id, party in await session.execute(players):
                viewers[item_id].add(party)
    return SharedRows(rows, {resource: frozenset(found) for resource, found in viewers.items()})
