"""Log entries as sentences for people: the one place an entry, a notification, a reminder or
a digest line is phrased (docs/messages.md).

``phrase_entries(session, entries, reader=...)`` reads what the entries' sentences need in a
fixed number of statements (``sentence_facts.load_facts``) and phrases each for its reader;
``sentence(facts, reader=...)`` is the pure part. A ``Sentence`` carries its text and the
dashboard path it links to (the item, and the action asked of the reader when there is one), so
the dashboard, email and webhooks say and link alike. Phrases of each kind: ``phrases.PHRASES``.

Usage::

    reader = await reader_of(session, user_id=user.id)
    for said in await phrase_entries(session, entries, reader=reader):
        print(said.text, said.path)
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.clock import SYSTEM_CLOCK
from engine.notify import wording
from engine.notify.phrases import PHRASES, unknown
from engine.notify.sentence_facts import EntryFacts, ItemFacts, Waiting, load_facts, seen_by
from engine.notify.words import Words
from engine.people import deputies
from engine.people.actors import Actor
from models import GroupMember, User

MAX_SENTENCE = 500  # characters: a sentence is a line, whatever names and titles it holds


@dataclass(frozen=True, slots=True)
class Reader:
    """Who a sentence is for: their user id, the parties they are (themselves and their groups:
    what is asked of a group is asked of them), their time zone and today's date there, and the
    parties absent users lend them now (``lent``: party -> that user's name; ``lent_to``): what
    is asked of those is asked of the reader too, for the absent user."""

    user_id: str | None = None
    parties: frozenset[str] = frozenset()
    tz: ZoneInfo = field(default_factory=lambda: ZoneInfo("UTC"))
    today: date = field(default_factory=lambda: SYSTEM_CLOCK.now().date())  # of the reader's zone
    lent: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        user_id: str | None,
        *,
        parties: frozenset[str] | set[str] | None = None,
        time_zone: str | None = None,
        now: datetime | None = None,
        lent: Mapping[str, str] | None = None,
    ) -> "Reader":
        tz = wording.zone(time_zone)
        moment = now or SYSTEM_CLOCK.now()
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        everyone = frozenset(parties or ()) | ({user_id} if user_id else set())
        return cls(user_id, everyone, tz, moment.astimezone(tz).date(), dict(lent or {}))


def lent_by(absent: Sequence[Actor], names: Mapping[str, str]) -> dict[str, str]:
    """A ``Reader``'s ``lent``: the parties of the absent users the reader stands in for now
    (``deputies.standing_in``: each absent user and their groups), each with its lender's name
    (``names``: user id -> display name)."""
    lent: dict[str, str] = {}
    for lender in absent:
        for party in sorted(lender.party_ids):
            lent.setdefault(party, names.get(lender.user_id) or "someone")
    return lent


async def lent_to(session: AsyncSession, *, user_id: str, absent: Sequence[Actor] | None = None) -> dict[str, str]:
    """``lent_by`` read for ``user_id`` (``absent``: their ``deputies.standing_in``, when the
    caller has it): a statement for the deputyships, and one for the names when there is one."""
    if absent is None:
        absent = await deputies.standing_in(session, user_id=user_id)
    if not absent:
        return {}
    absent_ids = [lender.user_id for lender in absent]
    names = dict((await session.execute(select(User.id, User.display_name).where(User.id.in_(absent_ids)))).all())
    return lent_by(absent, names)


@dataclass(frozen=True, slots=True)
class Sentence:
    """An entry in words for one reader, and where it leads in the dashboard."""

    text: str
    item_id: str | None = None
    action: str | None = None  # the action's short name: the one asked of the reader, or done
    addressed: bool = False  # it asks something of the reader ("… is yours")
    reason: str | None = None  # for a notification: why it reached the reader, in words
    path: str | None = None  # the dashboard's path (a URL's fragment included): "/#/item/<id>/<action>"


def path_to(item_id: str | None, action: str | None = None) -> str | None:
    """The dashboard's address of an item (and of one of its actions), relative to its root."""
    if not item_id:
        return None
    return f"/#/item/{item_id}" + (f"/{action}" if action else "")


def sentence(facts: EntryFacts, *, reader: Reader | None = None, level: str | None = None) -> Sentence:
    """The entry of ``facts`` in one sentence for ``reader``; ``level``: the notification's level
    when it is phrased as one: it is then addressed to the reader where it asks them to act
    ("Start review is yours: …") and says why it reached them (``reason``). Without a level it
    reads as what happened, as a line of a history or a feed does for everyone. Without a reader:
    for nobody in particular, in UTC (a sentence that addresses no one)."""
    words = Words(facts, reader or Reader(), level)
    said = PHRASES.get(facts.entry.kind, unknown)(words)
    text = " ".join(said.text.split())  # one line; names keep their case ("dev resolved …")
    if text.startswith(("an item", "a subproject", "a project")):  # one the reader may not see
        text = wording.upper_first(text)
    if len(text) > MAX_SENTENCE:
        text = text[: MAX_SENTENCE - 1] + "…"
    item_id = facts.entry.workflow_item_id
    return Sentence(
        text=text,
        item_id=item_id,
        action=said.action,
        addressed=said.addressed,
        reason=wording.level_reason(level),
        path=path_to(item_id, said.action if said.addressed else None),
    )


@dataclass(frozen=True, slots=True)
class _TaskEntry:
    """What ``Words`` reads of an entry, for an open task, which is none: its item."""

    workflow_item_id: str
    data: dict[str, Any] = field(default_factory=dict)


def task_sentence(*, item: ItemFacts, waiting: Waiting, reader: Reader, for_user: str | None = None) -> Sentence:
    """An open task in words for its reader, as an entry that asks it of them says it ("Start
    review is yours: Office chairs (due 15 Dec)"): the lines of the open-tasks digest
    (engine/notify/messages.py). One a deputy holds for an absent user says for whom ("…, for
    Alice Analyst")."""
    said = Words(EntryFacts(entry=_TaskEntry(item.id), item=item), reader, "ASSIGNED").yours([waiting])
    text = said.text + (f", for {for_user}" if for_user else "")  # names keep their case, as ``sentence``'s
    if len(text) > MAX_SENTENCE:
        text = text[: MAX_SENTENCE - 1] + "…"
    return Sentence(
        text=text,
        item_id=item.id,
        action=waiting.action,
        addressed=True,
        reason=wording.level_reason("ASSIGNED"),
        path=path_to(item.id, waiting.action),
    )


async def phrase_entries(
    session: AsyncSession,
    entries: Sequence[Any],
    *,
    reader: Reader | None = None,
    levels: Sequence[str | None] | None = None,
    viewer: Actor | None = None,
) -> list[Sentence]:
    """The entries' sentences for ``reader``, in order (``levels``: each one's notification
    level, when they are notifications). Reads in a fixed number of statements, whatever the
    number of entries; the caller has checked that ``reader`` may read them. ``viewer``: the
    reader's actor, when the sentences are theirs: an item, subproject or project hidden from
    them is not named ("an item")."""
    facts = await load_facts(session, entries, viewer=viewer)
    levels = levels if levels is not None else [None] * len(entries)
    return [sentence(f, reader=reader, level=level) for f, level in zip(facts, levels, strict=True)]


async def reader_of(
    session: AsyncSession,
    *,
    user_id: str,
    parties: frozenset[str] | set[str] | None = None,
    now: datetime | None = None,
) -> Reader:
    """The reader ``user_id`` (their time zone read; their groups too, unless ``parties`` gives
    them, as an ``engine.people.actors.Actor``'s ``party_ids`` does)."""
    time_zone = await session.scalar(select(User.time_zone).where(User.id == user_id))
    if parties is None:
        groups = await session.scalars(select(GroupMember.group_id).where(GroupMember.user_id == user_id))
        parties = {user_id, *groups}
    lent = await lent_to(session, user_id=user_id)
    return Reader.of(user_id, parties=parties, time_zone=time_zone, now=now, lent=lent)


__all__ = [
    "MAX_SENTENCE",
    "EntryFacts",
    "ItemFacts",
    "Reader",
    "Sentence",
    "Waiting",
    "lent_by",
    "lent_to",
    "load_facts",
    "path_to",
    "phrase_entries",
    "reader_of",
    "seen_by",
    "sentence",
    "task_sentence",
]
