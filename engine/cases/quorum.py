"""When a parent action fires (its ``complete_when``, or all children done).

A parent counts its *members*: for a parent with a child scope (``workflow``, or ``dynamic``
with ``states``) its scopes, each in a state; for one without (``parallel``, ``dynamic``
without ``states``) its child instances, each COMPLETED or not yet.

What a CANCELED child means is a choice; the rule here: **a CANCELED member counts as
not done.** It is never in any state a condition counts and never completed, but it stays in
the total that fractions are taken of, so cancellations can only make a condition harder to
meet. When they make it impossible, the parent stays enabled until another action disables it
(or its timer, if it has one, fires it): nothing is decided for the people who did not act.
A parent without members (a dynamic parent whose role is empty) never fires by itself either.
"""

from dataclasses import dataclass
from typing import Any

from engine.spec.child_specs import Condition
from engine.spec.specs import ActionSpec, WorkflowSpec


@dataclass(frozen=True, slots=True)
class Member:
    status: str  # ENABLED, COMPLETED or CANCELED
    state: str | None  # the member scope's state; None for a child instance without a scope


@dataclass(frozen=True, slots=True)
class Decision:
    """The parent may fire: with ``output`` (None: its ``new_state``), because of ``condition``
    (None: every member is done), ``count`` of ``total`` members being in its state or done."""

    output: str | None
    condition: Condition | None
    count: int
    total: int

    def describe(self) -> dict[str, Any]:
        """What the parent's log entry says of why it fired."""
        named = self.condition.describe() if self.condition else {"all": "done"}
        return {**named, "count": self.count, "of": self.total}


def decide(spec: WorkflowSpec, parent: ActionSpec, members: list[Member]) -> Decision | None:
    """The first ``complete_when`` condition that holds (in the spec's order); without any,
    whether every member is done (its scope in a terminal state, or the instance COMPLETED)."""
    total = len(members)
    if total == 0:
        return None
    live = [m for m in members if m.status != "CANCELED"]
    for condition in parent.complete_when:
        count = sum(1 for m in live if m.state == condition.state)
        if _holds(condition, count, total):
            return Decision(output=condition.output, condition=condition, count=count, total=total)
    if parent.complete_when:
        return None
    done = sum(1 for m in live if _done(spec, m))
    return Decision(output=None, condition=None, count=done, total=total) if done == total else None


def _done(spec: WorkflowSpec, member: Member) -> bool:
    if member.state is not None:
        return spec.states[member.state].terminal
    return member.status == "COMPLETED"


def _holds(condition: Condition, count: int, total: int) -> bool:
    if condition.every:
        return count == total
    # a fraction p/q of all members: count/total >= p/q, in whole numbers
    wanted = condition.quota if condition.whole else condition.quota * total
    return count > wanted if condition.strict else count >= wanted
