"""Live events: who may see which activity entries, and the bounded queue of one subscriber.

Audiences are computed once per batch of entries, for every subscriber at once, so fan-out
costs O(1) queries per batch instead of one per subscriber."""

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.actors import Actor
from models import Activity, CaseRoleParty, Notification, Permission

_HISTORY_INTENT = {
    "project_id": "project.viewHistory",
    "subproject_id": "subproject.viewHistory",
    "workflow_item_id": "workflowItem.viewHistory",
}


@dataclass(frozen=True, slots=True)
class Audience:
    """The parties that may see one entry: viewHistory holders on any resource it belongs to,
    and the players of its case's roles."""

    parties: frozenset[str]

    def admits(self, actor: Actor) -> bool:
        return actor.is_admin or not self.parties.isdisjoint(actor.party_ids)


async def audiences(session: AsyncSession, entries: Sequence[Activity]) -> dict[str, Audience]:
    resources = {getattr(e, column) for e in entries for column in _HISTORY_INTENT if getattr(e, column)}
    case_ids = {e.case_id for e in entries if e.case_id}
    holders: dict[tuple[str, str], set[str]] = defaultdict(set)
    if resources:
        rows = await session.execute(
            select(Permission.resource_id, Permission.intent, Permission.party_id).where(
                Permission.resource_id.in_(resources), Permission.intent.in_(_HISTORY_INTENT.values())
            )
        )
        for resource_id, intent, party in rows:
            holders[(resource_id, intent)].add(party)
    players: dict[str, set[str]] = defaultdict(set)
    if case_ids:
        for case_id, party in await session.execute(
            select(CaseRoleParty.case_id, CaseRoleParty.party_id).where(CaseRoleParty.case_id.in_(case_ids))
        ):
            players[case_id].add(party)
    result = {}
    for entry in entries:
        parties: set[str] = set(players.get(entry.case_id or "", ()))
        for column, intent in _HISTORY_INTENT.items():
            resource = getattr(entry, column)
            if resource:
                parties |= holders.get((resource, intent), set())
        result[entry.id] = Audience(frozenset(parties))
    return result


class SubscriberDropped(Exception):
    """The subscriber fell too far behind; it should reconnect with its last cursor."""


@dataclass(eq=False)
class Subscriber:
    start_seq: int
    wants_notifications_for: str | None = None
    maxsize: int = 10_000
    queue: asyncio.Queue[Any] = field(init=False)
    dropped: bool = False

    def __post_init__(self) -> None:
        self.queue = asyncio.Queue(self.maxsize)

    def offer(self, item: Any) -> None:
        if self.dropped:
            return
        try:
            self.queue.put_nowait(item)
        except asyncio.QueueFull:
            self.dropped = True
            self.queue = asyncio.Queue(1)
            self.queue.put_nowait(SubscriberDropped())

    async def events(self) -> AsyncIterator[Any]:
        while True:
            item = await self.queue.get()
            if isinstance(item, SubscriberDropped):
                raise item
            yield item


@dataclass(frozen=True, slots=True)
class Event:
    entry: Activity
    audience: Audience
    notifications: tuple[Notification, ...] = ()
    shared: Any = None  # what the read layer read once for the batch's subscribers (resolvers/live.py)
    # What the delivery layer computed for this event once for every subscriber that would get
    # the same (schema/execution.py), keyed by that layer.
    results: dict[Any, Any] = field(default_factory=dict)
