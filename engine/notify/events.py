"""Live events: who may see which activity entries, and the bounded queue of one subscriber.

Audiences (``engine.people.visibility``, the rule every read path applies) are computed once per batch
of entries, for every subscriber at once, so fan-out costs O(1) queries per batch instead of one
per subscriber."""

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from engine.people.visibility import Audience, audiences
from models import Activity, Notification


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


__all__ = ["Audience", "Event", "Subscriber", "SubscriberDropped", "audiences"]
