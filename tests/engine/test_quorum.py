"""complete_when conditions and the default "all done" (engine.cases.quorum), including the
open question as decided here: a CANCELED child counts as not done."""

import pytest

from engine.cases.quorum import Member, decide
from engine.spec.workflows import parse_spec

# No database at all: run once, by the SQLite run (scripts/run_tests.py).
pytestmark = pytest.mark.backend_free


def vote(**conditions) -> tuple:
    spec = parse_spec(
        {
            "short_name": "q",
            "roles": {"voters": {}},
            "states": {"open": {}, "yes_state": {"terminal": True}, "no_state": {"terminal": True}},
            "actions": {
                "poll": {
                    "trigger": "dynamic",
                    "enabled_states": ["open"],
                    "for_each": {"role": "voters", "mapping": "per_member"},
                    "states": {"voting": {}, "for": {"terminal": True}, "against": {"terminal": True}},
                    "children": {
                        "start": {"trigger": "init", "new_state": "voting"},
                        "aye": {"assigned_role": "voters", "assigned_states": ["voting"], "new_state": "for"},
                    },
                    **(
                        {"complete_when": conditions, "outputs": {o: "yes_state" for o in conditions}}
                        if conditions
                        else {"new_state": "yes_state"}
                    ),
                }
            },
        }
    )
    return spec, spec.actions["poll"]


def members(*states: str) -> list[Member]:
    """'for', 'against', 'voting', or 'x' for a CANCELED member (still voting when canceled)."""
    return [Member(status="CANCELED", state="voting") if s == "x" else Member("ENABLED", s) for s in states]


@pytest.mark.parametrize(
    ("condition", "states", "fires"),
    [
        ({"state": "for", "at_least": "2/3"}, ("for", "for", "voting"), True),
        ({"state": "for", "at_least": "2/3"}, ("for", "voting", "voting"), False),
        ({"state": "for", "more_than": "2/3"}, ("for", "for", "voting"), False),  # 2/3 is not more than 2/3
        ({"state": "for", "more_than": "1/2"}, ("for", "for", "against", "voting"), False),
        ({"state": "for", "at_least": 2}, ("for", "for", "voting", "voting", "voting"), True),  # a count
        ({"state": "for", "more_than": 2}, ("for", "for", "voting"), False),
        ({"state": "for", "all": True}, ("for", "for", "for"), True),
        ({"state": "for", "all": True}, ("for", "for", "x"), False),  # canceled: not done
        ({"state": "for", "at_least": "2/3"}, ("for", "x", "x"), False),  # canceled stay in the total
        ({"state": "for", "at_least": "1/3"}, ("for", "x", "x"), True),
        ({"state": "for", "at_least": 0}, (), False),  # no members: nothing fires by itself
    ],
)
def test_conditions_count_members_in_their_state(condition, states, fires):
    spec, poll = vote(ok=condition)
    decision = decide(spec, poll, members(*states))
    assert (decision is not None) == fires
    if fires:
        assert decision.output == "ok" and decision.total == len(states)


def test_the_first_condition_that_holds_wins_and_is_described_with_its_counts():
    spec, poll = vote(yes={"state": "for", "at_least": "2/3"}, no={"state": "against", "more_than": "1/3"})
    decision = decide(spec, poll, members("for", "for", "against"))
    assert decision.describe() == {"output": "yes", "state": "for", "at_least": "2/3", "count": 2, "of": 3}
    assert decide(spec, poll, members("against", "against", "for")).output == "no"


def test_without_conditions_every_member_must_be_done_and_none_canceled():
    spec, poll = vote()
    assert decide(spec, poll, members("for", "against")).describe() == {"all": "done", "count": 2, "of": 2}
    assert decide(spec, poll, members("for", "voting")) is None
    assert decide(spec, poll, members("for", "x")) is None  # a canceled vote never completes the parent
    stateless = [Member("COMPLETED", None), Member("CANCELED", None)]
    assert decide(spec, poll, stateless) is None
    assert decide(spec, poll, [Member("COMPLETED", None)] * 2) is not None
