"""Log entries in words for the viewer (``Activity.sentence``, ``Notification.sentence``): the
engine's sentences (engine/notify/sentences.py) in the viewer's time zone, addressed to them where
an entry asks something of them. Every entry a request (or a live event) asks for is phrased in
one batch (``sentence_by_entry``), whose facts take a fixed number of statements.

The compiled road has no form for it (resolvers/compiled/): a read that selects a sentence is
answered by the resolvers, and so both roads answer alike."""

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.notify import sentences
from resolvers.loader_cache import with_loaded

if TYPE_CHECKING:
    from resolvers.context import Context

__all__ = ["HIDDEN", "SentenceKey", "entry_sentence", "load_sentences", "notification_sentence"]

HIDDEN = "Something happened that you may no longer see."
"""A notification whose entry its reader may not read now (never listed; said all the same)."""


@dataclass(frozen=True, slots=True)
class SentenceKey:
    """An entry to phrase, and the level of the notification it is phrased for (None: the
    entry itself). Keyed by the entry's id: the row rides along unhashed."""

    entry_id: str
    level: str | None
    entry: Any = field(compare=False, hash=False)


def entry_sentence(ctx: "Context", entry: Any, level: str | None = None) -> Any:
    """The entry's sentence for the viewer (an awaitable, batched with the request's others)."""
    return ctx.loaders.sentence_by_entry.load(SentenceKey(entry.id, level, entry))


def notification_sentence(ctx: "Context", notification: Any) -> Any:
    """A notification's sentence: its entry's, phrased for its level ("… is yours" when it
    asks the viewer to act)."""
    level = getattr(notification.level, "value", notification.level)

    def phrase(entry: Any) -> Any:
        return HIDDEN if entry is None else entry_sentence(ctx, entry, level)

    return with_loaded([(ctx.loaders.activity_by_id, notification.activity_id)], phrase)


async def load_sentences(ctx: "Context", keys: list[SentenceKey]) -> list[str]:
    """One batch: the entries' facts (read once per live event for all its subscribers: they
    do not depend on the viewer), the item, subproject and project each names left out where
    the viewer may not see it (through the loaders, which a live event primes), the viewer's
    time zone, then the sentences."""
    viewer = ctx.viewer
    facts = await _facts(ctx, [key.entry for key in keys])
    loaders = ctx.loaders
    visible = set()
    for loader, ids in (
        (loaders.item_by_id, {f.entry.workflow_item_id for f in facts}),
        (loaders.subproject_by_id, {f.entry.subproject_id for f in facts}),
        (loaders.project_by_id, {f.entry.project_id for f in facts}),
    ):
        listed = sorted(i for i in ids if i)
        visible |= {row.id for row in await loader.load_many(listed) if row is not None}
    user = await loaders.party_by_id.load(viewer.user_id)
    # A notification may ask the viewer to act for an absent user they stand in for (a history
    # line asks nothing of anyone): the parties lent to them, read only then, through the
    # request's loaders (the deputyships are read once per request, as cases and fields read them).
    lent = {}
    if any(k.level for k in keys):
        absent = await loaders.standing_in_by_user.load(viewer.user_id)
        lenders = await loaders.party_by_id.load_many([a.user_id for a in absent])
        lent = sentences.lent_by(absent, {u.id: u.display_name for u in lenders if u is not None})
    time_zone = getattr(user, "time_zone", None)
    reader = sentences.Reader.of(viewer.user_id, parties=viewer.party_ids, time_zone=time_zone, lent=lent)
    return [
        sentences.sentence(sentences.seen_by(f, visible), reader=reader, level=key.level).text
        for f, key in zip(facts, keys, strict=True)
    ]


async def _facts(ctx: "Context", entries: list[Any]) -> list[sentences.EntryFacts]:
    """The entries' facts; in a live event, read once for all its subscribers (the first to ask
    reads them, the others, running meanwhile or after, wait for that read)."""
    session = ctx.session  # a read session answers as an AsyncSession does
    memo = ctx.event_memo()
    if memo is None:
        return await sentences.load_facts(session, entries)  # type: ignore[arg-type]
    missing = [e for e in entries if ("sentence facts", e.id) not in memo]
    if missing:
        read: asyncio.Future[list[sentences.EntryFacts]] = asyncio.get_running_loop().create_future()
        for place, entry in enumerate(missing):
            memo[("sentence facts", entry.id)] = (read, place)
        try:
            read.set_result(await sentences.load_facts(session, missing))  # type: ignore[arg-type]
        except BaseException as error:
            for entry in missing:
                memo.pop(("sentence facts", entry.id), None)
            read.set_exception(error)
            read.exception()  # retrieved: the subscribers waiting on it raise it too
            raise
    facts = []
    for entry in entries:
        future, place = memo[("sentence facts", entry.id)]
        facts.append((await future)[place])
    return facts
