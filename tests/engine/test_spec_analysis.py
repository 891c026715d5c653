"""engine/spec/spec_analysis.py (and engine/spec/spec_graph.py): the checks only the whole spec shows, one
broken spec per finding with the exact path it names, through engine.spec.workflows.check_spec (what
defineWorkflow, validateWorkflow and `caseway check-workflow` ask). The GraphQL side is in
tests/api/test_workflow_checks_api.py, the command in tests/e2e/test_check_workflow_cli.py."""

import contextlib
import copy
import time
import warnings
from collections.abc import Iterator
from typing import Any

import coverage
import pytest
from coverage.exceptions import CoverageWarning

from engine.errors import DomainError
from engine.spec import workflows
from engine.spec.diagnostics import Severity
from engine.spec.spec_analysis import analyze
from engine.spec.spec_checker import MAX_ERRORS, MAX_STATES
from tests.fixtures.specs import store_as_before

# A small valid workflow each case below breaks in one way.
BASE: dict[str, Any] = {
    "short_name": "claim",
    "roles": {"clerk": {"callbacks": ["creation_user"]}, "boss": {"callbacks": ["subproject_validator"]}},
    "states": {"open": {}, "review": {}, "paid": {"terminal": True}},
    "actions": {
        "start": {"trigger": "init", "new_state": "open"},
        "submit": {"assigned_role": "clerk", "assigned_states": ["open"], "new_state": "review"},
        "pay": {"assigned_role": "boss", "assigned_states": ["review"], "new_state": "paid"},
    },
}


def base(**actions: Any) -> dict[str, Any]:
    spec = copy.deepcopy(BASE)
    spec["actions"].update(actions)
    return spec


def with_states(spec: dict[str, Any], **states: Any) -> dict[str, Any]:
    spec["states"].update(states)
    return spec


def vote(**parent: Any) -> dict[str, Any]:
    """A dynamic vote in ``review`` deciding the claim, with ``parent`` keys changed."""
    action = {
        "trigger": "dynamic",
        "enabled_states": ["review"],
        "for_each": {"role": "boss", "mapping": "per_user"},
        "states": {"voting": {}, "yes": {"terminal": True}},
        "children": {
            "vote_start": {"trigger": "init", "new_state": "voting"},
            "agree": {"assigned_role": "boss", "assigned_states": ["voting"], "new_state": "yes"},
        },
        "new_state": "paid",
    } | parent
    spec = base(vote=action)
    del spec["actions"]["pay"]
    return spec


def _nest(level: int) -> dict[str, Any]:
    """A child workflow holding the next, down to the fifth level below the top."""
    action: dict[str, Any] = {"states": {f"n{level}": {"terminal": True}}, "children": {}}
    if level < 5:
        action["children"][f"c{level}"] = {"trigger": "workflow", "enabled_states": [f"n{level}"]} | _nest(level + 1)
    return action


CASES: list[tuple[str, dict[str, Any], str, tuple[str, ...]]] = [
    (
        "a state no action leads to",
        with_states(base(), archived={"terminal": True}),
        "UNREACHABLE_STATE",
        ("states", "archived"),
    ),
    (
        "a child state no child action leads to",
        base(
            pay={
                "trigger": "workflow",
                "enabled_states": ["review"],
                "new_state": "paid",
                "states": {"checking": {}, "checked": {"terminal": True}, "lost": {}},
                "children": {"check": {"enabled_states": ["checking"], "new_state": "checked"}},
            }
        ),
        "UNREACHABLE_STATE",
        ("actions", "pay", "states", "lost"),
    ),
    (
        "a state with no way on",
        base(park={"enabled_states": ["open"], "new_state": "parked"}) | {"states": {**BASE["states"], "parked": {}}},
        "NO_PATH_TO_TERMINAL",
        ("states", "parked"),
    ),
    (
        "no terminal state at all",
        with_states(base(pay={"assigned_role": "boss", "assigned_states": ["review"]}), paid={}),
        "NO_PATH_TO_TERMINAL",
        ("states",),
    ),
    (
        "a state left only through a parent whose child workflow cannot finish",
        base(
            pay={
                "trigger": "workflow",
                "enabled_states": ["review"],
                "new_state": "paid",
                "states": {"checking": {}, "stuck": {}, "checked": {"terminal": True}},
                "children": {"check": {"enabled_states": ["checking"], "new_state": "stuck"}},
            }
        ),
        "NO_PATH_TO_TERMINAL",
        ("actions", "pay", "states", "stuck"),
    ),
    (
        "an action enabled in no state",
        base(remind={"allowed_roles": ["clerk"]}),
        "DEAD_ACTION",
        ("actions", "remind"),
    ),
    (
        "an action enabled only in a state no case reaches",
        with_states(base(revive={"enabled_states": ["limbo"], "new_state": "open"}), limbo={}),
        "DEAD_ACTION",
        ("actions", "revive"),
    ),
    (
        "an action gated on the init action, which is never counted",
        base(audit={"enabled_states": ["review"], "depends_on": {"start": {"min": 1}}}),
        "DEAD_ACTION",
        ("actions", "audit"),
    ),
    (
        "a gate on itself with a min",
        base(remind={"enabled_states": ["open"], "depends_on": {"remind": {"min": 1}}}),
        "GUARD_UNSATISFIABLE",
        ("actions", "remind", "depends_on", "remind", "min"),
    ),
    (
        "min above max",
        base(remind={"enabled_states": ["open"], "depends_on": {"submit": {"min": 3, "max": 2}}}),
        "GUARD_UNSATISFIABLE",
        ("actions", "remind", "depends_on", "submit", "max"),
    ),
    (
        "two actions gated on each other (issue 47, finding 4)",
        base(
            approve={"enabled_states": ["review"], "depends_on": {"check": {"min": 1}}},
            check={"enabled_states": ["review"], "depends_on": {"approve": {"min": 1}}},
        ),
        "GUARD_UNSATISFIABLE",
        ("actions", "approve", "depends_on", "check"),
    ),
    (
        "a ring of three gates",
        base(
            a={"enabled_states": ["review"], "depends_on": {"c": {}}},
            b={"enabled_states": ["review"], "depends_on": {"a": {}}},
            c={"enabled_states": ["review"], "depends_on": {"b": {}}},
        ),
        "GUARD_UNSATISFIABLE",
        ("actions", "b", "depends_on", "a"),
    ),
    (
        "a gate on an action after which the case never comes back (issue 47, finding 4)",
        base(amend={"enabled_states": ["open"], "depends_on": {"pay": {"min": 1}}}),
        "GUARD_UNSATISFIABLE",
        ("actions", "amend", "depends_on", "pay"),
    ),
    (
        "a quorum larger than the one child workflow a workflow parent has",
        base(
            pay={
                "trigger": "workflow",
                "enabled_states": ["review"],
                "states": {"checking": {}, "checked": {"terminal": True}},
                "children": {"check": {"enabled_states": ["checking"], "new_state": "checked"}},
                "complete_when": {
                    "done": {"state": "checked", "at_least": 2},
                    "any": {"state": "checked", "all": True},
                },
                "outputs": {"done": "paid", "any": "paid"},
            }
        ),
        "GUARD_UNSATISFIABLE",
        ("actions", "pay", "complete_when", "done"),
    ),
    (
        "more than all of them",
        vote(complete_when={"yes": {"state": "yes", "more_than": "1/1"}}, outputs={"yes": "paid"}, new_state=None)
        | {"short_name": "more"},
        "GUARD_UNSATISFIABLE",
        ("actions", "vote", "complete_when", "yes"),
    ),
    (
        "a fan-out over a role that may be empty, with no other way out",
        vote(),
        "GUARD_UNSATISFIABLE",
        ("actions", "vote", "for_each"),
    ),
    (
        "AUTO actions that lead to each other",
        with_states(
            base(
                bounce={"trigger": "auto", "enabled_states": ["review"], "new_state": "recheck"},
                back={"timeout_seconds": 0, "enabled_states": ["recheck"], "new_state": "review"},
            ),
            recheck={},
        ),
        "AUTO_LOOP",
        ("actions", "bounce"),
    ),
    (
        "an AUTO action that stays where it is enabled",
        base(tick={"trigger": "auto", "enabled_states": ["open"]}),
        "AUTO_LOOP",
        ("actions", "tick"),
    ),
    (
        "a parent without children",
        base(pay={"trigger": "parallel", "enabled_states": ["review"], "new_state": "paid", "children": {}}),
        "CHILD_WORKFLOW_MISSING",
        ("actions", "pay", "children"),
    ),
    (
        "a workflow parent without states",
        base(
            pay={
                "trigger": "workflow",
                "enabled_states": ["review"],
                "new_state": "paid",
                "children": {"check": {}},
            }
        ),
        "CHILD_WORKFLOW_MISSING",
        ("actions", "pay", "states"),
    ),
    (
        "child workflows nested five deep",
        base(pay={"trigger": "workflow", "enabled_states": ["review"], "new_state": "paid"} | _nest(1)),
        "CHILD_RECURSION",
        ("actions", "pay", "children", "c1", "children", "c2", "children", "c3", "children", "c4"),
    ),
    (
        "a TIME action that stays where it is enabled",
        base(remind={"trigger": "time", "timeout_seconds": 3600, "enabled_states": ["review"]}),
        "TIMER_REPEATS",
        ("actions", "remind"),
    ),
    (
        "a role nothing fills",
        base(pay={"assigned_role": "auditor", "assigned_states": ["review"], "new_state": "paid"})
        | {"roles": {**BASE["roles"], "auditor": {}}},
        "ROLE_NEVER_FILLED",
        ("actions", "pay", "assigned_role"),
    ),
]


WARNINGS = {"TIMER_REPEATS", "ROLE_NEVER_FILLED"}


@pytest.mark.parametrize(("spec", "code", "path"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_broken_spec_is_found_at_its_key(spec, code, path):
    _, found = workflows.check_spec(spec)
    assert (code, path) in [(d.code, d.path) for d in found], [(d.code, d.path, d.message) for d in found]
    [mine] = [d for d in found if (d.code, d.path) == (code, path)]
    assert mine.severity == (Severity.WARNING if code in WARNINGS else Severity.ERROR)
    assert mine.message.endswith(".") and mine.hint


def test_the_base_spec_and_the_fixes_find_nothing():
    assert workflows.check_spec(BASE)[1] == []
    fixed = vote(timeout_seconds=7 * 24 * 3600)  # the empty fan-out: its timer fires it
    assert workflows.check_spec(fixed)[1] == []
    capped = base(remind={"trigger": "time", "timeout_seconds": 3600, "enabled_states": ["review"]})
    capped["actions"]["remind"]["depends_on"] = {"remind": {"max": 3}}
    assert workflows.check_spec(capped)[1] == []


def test_a_ring_of_gates_is_said_once_per_member_and_what_waits_on_it_is_dead():
    spec = base(
        approve={"enabled_states": ["review"], "depends_on": {"check": {"min": 1}}},
        check={"enabled_states": ["review"], "depends_on": {"approve": {"min": 1}}},
        archive={"enabled_states": ["review"], "depends_on": {"approve": {"min": 1}}},
    )
    found = [(d.code, d.path) for d in workflows.check_spec(spec)[1]]
    assert found == [
        ("DEAD_ACTION", ("actions", "archive")),  # gated on one that never runs
        ("GUARD_UNSATISFIABLE", ("actions", "approve", "depends_on", "check")),
        ("GUARD_UNSATISFIABLE", ("actions", "check", "depends_on", "approve")),
    ]
    [approve] = [d for d in workflows.check_spec(spec)[1] if d.path[1] == "approve"]
    assert approve.message == (
        "Action 'approve' can never run: it is gated on 'check' having completed, and 'check' can complete only "
        "after 'approve' has (through its own depends_on), so neither is first."
    )


def test_gates_that_can_open_are_not_findings():
    """A gate on an action that leaves the case where the gated one is enabled again, or on one
    that stays: no finding (the graph assumes what could happen does)."""
    back = base(
        reopen={"enabled_states": ["review"], "new_state": "open"},
        amend={"enabled_states": ["open"], "depends_on": {"submit": {"min": 1}}},
    )
    assert workflows.check_spec(back)[1] == []
    stays = base(
        note={"enabled_states": ["review"]},
        approve={"enabled_states": ["review"], "depends_on": {"note": {"min": 1}}},
    )
    assert workflows.check_spec(stays)[1] == []
    one_way = base(  # b waits on a, a does not wait on b: no ring
        a={"enabled_states": ["review"]},
        b={"enabled_states": ["review"], "depends_on": {"a": {}}},
    )
    assert workflows.check_spec(one_way)[1] == []


def test_every_finding_comes_at_once_in_order():
    spec = with_states(
        base(
            remind={"allowed_roles": ["clerk"]},
            tick={"trigger": "auto", "enabled_states": ["review"]},
            nag={"trigger": "time", "timeout_seconds": 60, "enabled_states": ["open"]},
        ),
        archived={"terminal": True},
    )
    found = [(d.code, d.path) for d in workflows.check_spec(spec)[1]]
    assert found == [
        ("UNREACHABLE_STATE", ("states", "archived")),
        ("DEAD_ACTION", ("actions", "remind")),
        ("AUTO_LOOP", ("actions", "tick")),
        ("TIMER_REPEATS", ("actions", "nag")),
    ]


def test_the_shipped_workflows_give_no_error():
    for path in sorted(workflows.BUILTIN_DIR.glob("*.yaml")):
        parsed, found = workflows.check_spec(workflows.load_spec_file(path))
        assert parsed is not None and found == [], path.name


def test_a_spec_with_too_many_states_is_told_so_once():
    """Issue 40, 4b: 201 states were also told "A workflow needs at least one state"."""
    spec = {"short_name": "big", "states": {f"s{i}": {} for i in range(MAX_STATES + 1)}}
    _, found = workflows.check_spec(spec)
    assert [(d.code, d.message) for d in found] == [("INVALID_SPEC", "states has 201 states; at most 200.")]


def _chain(count: int) -> dict[str, Any]:
    """``count`` states in a row, each with a step on, a step back and a comment."""
    states = {f"s{i}": {"terminal": i == count - 1} for i in range(count)}
    actions: dict[str, Any] = {"comment": {"always_enabled": True}}
    for i in range(count - 1):
        actions[f"on{i}"] = {"enabled_states": [f"s{i}"], "new_state": f"s{i + 1}"}
        actions[f"back{i}"] = {"enabled_states": [f"s{i + 1}"], "new_state": f"s{i}"}
    return {"short_name": "chain", "states": states, "actions": actions}


def test_a_200_state_spec_is_analysed_within_10_ms():
    """1.7 ms here. Timed with coverage.py's tracer paused (CI runs the suite under it, and traced
    Python runs several times slower: the budget is the analysis's, not the tracer's)."""
    parsed, found = workflows.check_spec(_chain(MAX_STATES))
    assert parsed is not None and found == []
    runs = []
    with _tracer_paused():
        for _ in range(20):
            started = time.perf_counter()
            analyze(parsed)
            runs.append(time.perf_counter() - started)
    assert min(runs) < 0.010, f"{min(runs) * 1000:.1f} ms"


@contextlib.contextmanager
def _tracer_paused() -> Iterator[None]:
    measuring = coverage.Coverage.current()
    if measuring is not None:
        measuring.stop()
    try:
        yield
    finally:
        if measuring is not None:
            with warnings.catch_warnings():  # "already imported": true, and nothing is lost by it
                warnings.simplefilter("ignore", CoverageWarning)
                measuring.start()


async def test_a_workflow_stored_before_the_checks_still_loads_and_runs(db, make_actor):
    """The checks judge new definitions: a stored spec they would refuse is read (and its cases
    run) as before."""
    import engine
    from tests.fixtures.builders import bug_case, enabled, run

    owner = await make_actor("owner")
    spec = with_states(base(), archived={"terminal": True})
    with pytest.raises(DomainError) as refused:
        async with db.transaction() as s:
            await engine.define_workflow(s, actor=None, spec=spec)
    assert [(e.code, e.field) for e in refused.value.errors] == [("INVALID_SPEC", ["spec", "states", "archived"])]
    async with db.transaction() as s:
        stored = await store_as_before(s, spec)
    assert workflows.spec_of(stored).states["archived"].terminal
    _, (case,) = await bug_case(db, owner, owner, workflow="claim")
    assert await enabled(db, case.id) == ["submit"]
    await run(db, owner, case.id, "submit")
    assert await enabled(db, case.id) == ["pay"]


def test_findings_are_bounded_like_the_key_by_key_ones():
    """A spec of 200 states, 199 of them unreachable, gets the first 50 findings, not 199."""
    spec = {"short_name": "islands", "states": {f"s{i}": {"terminal": i == 0} for i in range(MAX_STATES)}}
    _, found = workflows.check_spec(spec)
    assert len(found) == MAX_ERRORS
    assert found[0].path == ("states", "s1") and found[-1].path == ("states", f"s{MAX_ERRORS}")
