"""An entry's facts as words for one reader: who did it, to which thing, with the workflow's
own names, dates in the reader's zone, and what of it is asked of the reader. What the phrase of
each kind (``engine/notify/phrases.py``) is written with."""

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from engine.notify import wording
from engine.notify.sentence_facts import EntryFacts, Waiting


@dataclass(frozen=True, slots=True)
class Said:
    text: str
    action: str | None = None  # the action the sentence points at (asked of the reader, or done)
    addressed: bool = False  # it asks something of the reader


class Words:
    """An entry's facts as words for one reader (``reader``: an ``engine.notify.sentences.Reader``)."""

    def __init__(self, facts: EntryFacts, reader: Any, level: str | None) -> None:
        self.facts = facts
        self.entry = facts.entry
        self.reader = reader
        self.level = level
        self.data: dict[str, Any] = facts.entry.data if isinstance(facts.entry.data, dict) else {}

    # -- who and what ---------------------------------------------------------------------

    @property
    def system(self) -> bool:
        return self.facts.actor is None

    def who(self) -> str:
        """The actor as the subject of a sentence, by name even to themselves (a history reads
        alike for all): "Alice Analyst", "Bob Builder (for Alice Analyst)" (a deputy's deed);
        "Someone" where no actor is known."""
        name = self.facts.actor or "Someone"
        if self.facts.on_behalf_of:
            name += f" (for {self.facts.on_behalf_of})"
        return name

    def by(self) -> str:
        """ " (by Alice Analyst)", or nothing for the system."""
        return "" if self.system else f" (by {self.who()})"

    @property
    def thing(self) -> str:
        """What the entry is about, by name: the item, else the subproject, else the project."""
        facts = self.facts
        if self.entry.workflow_item_id:
            return facts.item.name if facts.item else "an item"
        if self.entry.subproject_id:
            return facts.subproject or "a subproject"
        return facts.project or "a project"

    def party(self, party_id: Any) -> str:
        """A party named in the entry's data, by name ("someone" when unknown)."""
        return self.facts.names.get(party_id, "someone") if party_id else "nobody"

    def parties(self, ids: Any) -> str:
        return wording.joined(self.party(p) for p in (ids or []))

    def mine(self, ids: Any) -> bool:
        """Whether the reader is among ``ids``, themselves or standing in for one of them."""
        return bool(set(ids or ()) & self._theirs)

    @property
    def _theirs(self) -> set[str]:
        """The reader's parties and those lent to them now by absent users (``Reader.lent``)."""
        return {*self.reader.parties, *self.reader.lent}

    def for_whom(self, parties: Any) -> str:
        """ ", for Alice Analyst" when what is asked of the reader (of ``parties``: a set per
        thing asked) is theirs only as the deputy of an absent user; nothing when it is their own."""
        groups = [set(p) for p in parties]
        if any(p & self.reader.parties for p in groups):
            return ""
        lent = self.reader.lent
        names = dict.fromkeys(lent[party] for p in groups for party in sorted(p) if party in lent)
        return f", for {wording.joined(names)}" if names else ""

    # -- the workflow's words -------------------------------------------------------------

    def action_name(self, short: str | None) -> str:
        spec = self.facts.spec
        return wording.pretty(spec.actions if spec else {}, short, default="an action")

    def past(self, short: str | None) -> str:
        spec = self.facts.spec
        action = spec.actions.get(short or "") if spec else None
        if action is not None and action.pretty_past_tense:
            return action.pretty_past_tense
        return wording.pretty({}, short, default="acted")

    def state(self, short: str | None) -> str:
        spec = self.facts.spec
        return wording.pretty(spec.states if spec else {}, short, default="its first state")

    def role(self, short: str | None) -> str:
        spec = self.facts.spec
        return wording.pretty(spec.roles if spec else {}, short, default="a role")

    # -- time -----------------------------------------------------------------------------

    def day(self, value: Any) -> str | None:
        return wording.day(value, today=self.reader.today)

    def on(self, instant: Any) -> str | None:
        return wording.local_day(instant, tz=self.reader.tz, today=self.reader.today)

    def at(self, instant: Any) -> str | None:
        return wording.local_time(instant, tz=self.reader.tz, today=self.reader.today)

    def due(self) -> str:
        """ " (due 15 Dec)" when the item has a due date, " (overdue since 16 Dec)" once past."""
        item = self.facts.item
        if item is None or item.due_date is None:
            return ""
        if item.due_date < self.reader.today:
            return f" (overdue since {self.day(item.due_date + timedelta(days=1))})"
        return f" (due {'today' if item.due_date == self.reader.today else self.day(item.due_date)})"

    # -- what is asked of the reader ------------------------------------------------------

    @property
    def addressing(self) -> bool:
        """Whether the sentence may be addressed to its reader: as a notification (a message to
        them), not as a line of a history or feed, which records what happened for all alike."""
        return self.level is not None

    def asked(self) -> list[Waiting]:
        """The waiting actions of this entry the reader is expected to act on (none outside a
        notification: see ``addressing``)."""
        if not self.addressing:
            return []
        return [w for w in self.facts.waiting if w.parties & self._theirs]

    def yours(self, asked: list[Waiting], *, lead: str = "") -> Said:
        """ "Start review is yours: Office chairs (due 15 Dec)"; to a deputy, whose it is too
        (", for Alice Analyst", as the open-tasks digest says it)."""
        names = wording.joined(dict.fromkeys(w.name for w in asked))
        verb = "are" if len({w.name for w in asked}) > 1 else "is"
        behalf = self.for_whom(w.parties for w in asked)
        return Said(
            f"{lead}{names} {verb} yours: {self.thing}{self.due()}{behalf}", action=asked[0].action, addressed=True
        )


__all__ = ["Said", "Words"]
