"""insights over GraphQL (issue 49): cases that waited known times (the engine's verbs take
``now``; the resolver's clock is the test's) give exactly the expected figures, on SQLite and
PostgreSQL; a suspended stretch is not waiting; a viewer sees the figures of the cases they may
see; a child workflow's states come under their scope; bad input is a userError."""

from datetime import date, timedelta

import pytest

import engine
from engine.clock import SettableClock
from engine.people import permissions
from resolvers import insights as reading
from tests.fixtures.child_workflows import REVIEW
from tests.fixtures.engine import new_subproject
from tests.fixtures.insights import T0, history, reviewed_subproject
from tests.fixtures.jobs import token_of

DAY = 86400
NOW = T0 + timedelta(days=10)

INSIGHTS = """query($input: InsightsInput!, $interval: InsightsInterval) { insights(input: $input) {
  from to
  states { state { shortName prettyName } scope { shortName } entered inStateNow oldestSince
    timeInState { count p50 p90 mean max } }
  actions { action { shortName } executed byRole { role count } }
  cycleTime { completed p50 p90 mean bins { upTo count } } openAge { open p50 p90 }
  throughput(interval: $interval) { start started completed }
  rework { state { shortName } scope { shortName } returned cases }
  overdue { open late }
  userErrors { code message field } } }"""


def window(**extra):
    return {"workflow": "reviewed", "from": T0.isoformat(), "to": (T0 + timedelta(days=7)).isoformat(), **extra}


@pytest.fixture
def clock(monkeypatch):
    moved = SettableClock(NOW)
    monkeypatch.setattr(reading, "clock", moved)
    return moved


async def six_cases(db, owner, reviewer):
    """Five cases in the window (one more after it), each waiting known seconds."""
    sub = await reviewed_subproject(db, owner)
    day = lambda n: T0 + timedelta(days=n)  # noqa: E731
    made = {
        "A": await history(
            db, owner, sub.id, [(100, "submit"), (400, "approve")], reviewer=reviewer, due=date(2030, 3, 4)
        ),
        "B": await history(
            db,
            owner,
            sub.id,
            [(200, "submit"), (300, "send_back"), (500, "submit"), (1100, "approve")],
            start=day(1),
            reviewer=reviewer,
            due=date(2030, 3, 4),
        ),
        "C": await history(
            db,
            owner,
            sub.id,
            [(300, "submit"), (400, "suspend"), (1400, "resume"), (1700, "approve")],
            start=day(2),
            reviewer=reviewer,
        ),
        "E": await history(db, owner, sub.id, [(50, "submit")], start=day(3), reviewer=reviewer, due=date(2030, 3, 10)),
        "F": await history(db, owner, sub.id, [], start=day(4), reviewer=reviewer, due=date(2030, 3, 20)),
        "late": await history(db, owner, sub.id, [(10, "submit")], start=day(8), reviewer=reviewer),
    }
    return sub, made


def by_state(answer):
    return {s["state"]["shortName"]: s for s in answer["states"]}


async def test_cases_that_waited_known_times_give_exactly_the_expected_figures(db, gql, make_actor, clock):
    owner, rita = await make_actor("owner", admin=True), await make_actor("rita")
    sub, _ = await six_cases(db, owner, rita)
    token = await _token(db, owner.user_id)
    answer = (await gql(INSIGHTS, {"input": window(subprojectId=sub.id), "interval": "DAY"}, token=token))["insights"]
    assert answer["userErrors"] == []
    states = by_state(answer)
    assert list(states) == ["draft", "review", "approved"]
    # draft: A 100, B 200 and 200 again (sent back), C 300, E 50; F is still in it
    assert states["draft"] == {
        "state": {"shortName": "draft", "prettyName": "Draft"},
        "scope": None,
        "entered": 6,
        "inStateNow": 1,
        "oldestSince": "2030-03-08T09:00:00+00:00",
        "timeInState": {"count": 5, "p50": 200.0, "p90": 260.0, "mean": 170.0, "max": 300.0},
    }
    # review: A 300, B 100 and 600, C 400 (1,400 s less its 1,000 s suspended); E is in it
    assert states["review"]["timeInState"] == {"count": 4, "p50": 350.0, "p90": 540.0, "mean": 350.0, "max": 600.0}
    assert (states["review"]["entered"], states["review"]["inStateNow"]) == (5, 1)
    assert states["review"]["oldestSince"] == "2030-03-07T09:00:50+00:00"
    assert (states["approved"]["entered"], states["approved"]["inStateNow"], states["approved"]["timeInState"]) == (
        3,
        3,
        None,
    )
    cycle = answer["cycleTime"]
    assert (cycle["completed"], cycle["p50"], cycle["p90"]) == (3, 1100.0, 1580.0)
    assert cycle["mean"] == pytest.approx(3200 / 3, abs=1e-9)
    bins = [3600, 4 * 3600, DAY, 3 * DAY, 7 * DAY, 14 * DAY, 30 * DAY, 90 * DAY, None]
    assert cycle["bins"] == [{"upTo": bound, "count": 3 if bound == 3600 else 0} for bound in bins]
    assert answer["openAge"] == {"open": 2, "p50": 6.5 * DAY, "p90": 6.9 * DAY}
    assert [(b["start"][:10], b["started"], b["completed"]) for b in answer["throughput"]] == [
        ("2030-03-04", 1, 1),
        ("2030-03-05", 1, 1),
        ("2030-03-06", 1, 1),
        ("2030-03-07", 1, 0),
        ("2030-03-08", 1, 0),
        ("2030-03-09", 0, 0),
        ("2030-03-10", 0, 0),
        ("2030-03-11", 0, 0),
    ]
    assert answer["rework"] == [
        {"state": {"shortName": "draft"}, "scope": None, "returned": 1, "cases": 1},
        {"state": {"shortName": "review"}, "scope": None, "returned": 1, "cases": 1},
    ]
    assert answer["overdue"] == {"open": 1, "late": 1}  # E is past its day; B completed the day after its
    actions = {a["action"]["shortName"]: (a["executed"], a["byRole"]) for a in answer["actions"]}
    assert actions == {
        "start": (5, [{"role": "author", "count": 5}]),
        "submit": (5, [{"role": "author", "count": 5}]),
        "send_back": (1, [{"role": "reviewer", "count": 1}]),
        "approve": (3, [{"role": "reviewer", "count": 3}]),
        "note": (0, []),
    }
    weekly = (await gql(INSIGHTS, {"input": window(), "interval": "WEEK"}, token=token))["insights"]
    assert [(b["start"], b["started"], b["completed"]) for b in weekly["throughput"]] == [
        ("2030-03-04T00:00:00+00:00", 5, 3),
        ("2030-03-11T00:00:00+00:00", 0, 0),
    ]
    monthly = (await gql(INSIGHTS, {"input": window(), "interval": "MONTH"}, token=token))["insights"]
    assert [(b["start"], b["started"], b["completed"]) for b in monthly["throughput"]] == [
        ("2030-03-01T00:00:00+00:00", 5, 3)
    ]


async def test_a_viewer_who_sees_two_items_gets_the_figures_of_those_two(db, gql, make_actor, clock):
    owner, rita, vic = await make_actor("owner"), await make_actor("rita"), await make_actor("vic")
    sub, made = await six_cases(db, owner, rita)
    async with db.transaction() as s:
        for name in ("A", "E"):
            await permissions.grant(
                s, actor=owner, resource_id=made[name].item_id, intent="workflowItem.view", party_id=vic.user_id
            )
    answer = (await gql(INSIGHTS, {"input": window()}, token=await _token(db, vic.user_id)))["insights"]
    states = by_state(answer)
    assert (states["draft"]["entered"], states["draft"]["timeInState"]["p50"]) == (2, 75.0)  # A 100, E 50
    assert (states["review"]["entered"], states["review"]["inStateNow"]) == (2, 1)
    cycle = answer["cycleTime"]
    assert (cycle["completed"], cycle["p50"], cycle["p90"], cycle["mean"]) == (1, 400.0, 400.0, 400.0)
    assert answer["openAge"]["open"] == 1 and answer["rework"] == []
    assert answer["overdue"] == {"open": 1, "late": 0}
    # rita plays the reviewer in every case: a role in a case shows its item, so all five count
    seen = (await gql(INSIGHTS, {"input": window()}, token=await _token(db, rita.user_id)))["insights"]
    assert by_state(seen)["draft"]["entered"] == 6
    # nobody's: no case counts, and the subproject is as missing as one that does not exist
    nobody = await make_actor("nobody")
    token = await _token(db, nobody.user_id)
    empty = (await gql(INSIGHTS, {"input": window()}, token=token))["insights"]
    assert by_state(empty)["draft"]["entered"] == 0 and empty["cycleTime"]["completed"] == 0
    hidden = (await gql(INSIGHTS, {"input": window(subprojectId=sub.id)}, token=token))["insights"]
    assert [e["code"] for e in hidden["userErrors"]] == ["NOT_FOUND"]


async def test_a_child_workflows_states_come_under_their_scope(db, gql, make_actor, clock):
    owner = await make_actor("owner", admin=True)
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=REVIEW)
        sub = await new_subproject(s, owner, workflow="rev_op")
    await history(db, owner, sub.id, [(100, "review"), (250, "opinion")])
    await history(db, owner, sub.id, [(300, "review")], start=T0 + timedelta(hours=1))
    answer = (await gql(INSIGHTS, {"input": window(workflow="rev_op")}, token=await _token(db, owner.user_id)))[
        "insights"
    ]
    rows = [
        (s["scope"] and s["scope"]["shortName"], s["state"]["shortName"], s["entered"], s["inStateNow"])
        for s in answer["states"]
    ]
    assert rows == [
        (None, "open", 2, 1),
        (None, "done", 1, 1),
        ("review_wr", "rev_open", 2, 0),
        ("review_wr", "rev_done", 2, 0),  # a child workflow ends when it reaches its terminal state
        ("opinion_wr", "opi_open", 2, 1),
        ("opinion_wr", "opi_done", 1, 0),
    ]
    review = by_state(answer)["rev_open"]["timeInState"]
    assert (review["p50"], review["max"]) == (200.0, 300.0)


@pytest.mark.parametrize(
    ("fields", "code", "field"),
    [
        ({"workflow": "nope"}, "NOT_FOUND", "workflow"),
        ({"version": 9}, "NOT_FOUND", "version"),
        ({"to": (T0 + timedelta(days=401)).isoformat()}, "INVALID_INPUT", "from"),
        ({"to": T0.isoformat()}, "INVALID_INPUT", "from"),
        ({"projectId": "prj_x", "subprojectId": "sub_x"}, "INVALID_INPUT", "subprojectId"),
        ({"projectId": "prj_nope"}, "NOT_FOUND", "projectId"),
    ],
)
async def test_bad_input_is_a_user_error_and_no_figures(db, gql, make_actor, clock, fields, code, field):
    owner = await make_actor("owner", admin=True)
    await reviewed_subproject(db, owner)
    answer = (await gql(INSIGHTS, {"input": window(**fields)}, token=await _token(db, owner.user_id)))["insights"]
    assert [(e["code"], e["field"]) for e in answer["userErrors"]] == [(code, [field])]
    assert answer["userErrors"][0]["message"].endswith(".")
    assert (answer["states"], answer["cycleTime"], answer["throughput"]) == ([], None, [])


async def _token(db, user_id):
    return await token_of(db, user_id)


async def test_insights_cost_a_fixed_few_statements_however_many_cases(db, gql, make_actor, clock, count_statements):
    """No statement per case or state: the figures of one case and of six cost the same; on
    PostgreSQL every figure comes from one statement."""
    owner = await make_actor("owner", admin=True)
    sub = await reviewed_subproject(db, owner)
    token = await _token(db, owner.user_id)
    counts = []
    for n in range(2):
        for k in range(1 if n == 0 else 5):
            await history(db, owner, sub.id, [(10, "submit"), (20, "approve")], start=T0 + timedelta(hours=n * 10 + k))
        await gql(INSIGHTS, {"input": window(subprojectId=sub.id)}, token=token)  # the spec cached
        with count_statements() as counter:
            answer = (await gql(INSIGHTS, {"input": window(subprojectId=sub.id)}, token=token))["insights"]
        assert answer["cycleTime"]["completed"] == (1 if n == 0 else 6)
        counts.append(counter.count)
    assert counts[0] == counts[1], counts
    if db.engine.dialect.name == "postgresql":
        figures = [s for s in counter.statements if "UNION ALL" in s]
        assert len(figures) == 1 and counter.count <= 5, counter.statements
