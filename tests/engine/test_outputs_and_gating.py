"""Through the engine API: outputs choose the new state (by the caller or an on_fire callback),
resolution codes, gating with depends_on min/max, and enable conditions (REFUSED)."""

from datetime import timedelta

import pytest
from sqlalchemy import select

import engine
from engine import registry
from engine.errors import DomainError, DomainErrors
from models import Activity, EnabledAction
from tests.engine.test_cases import bug_case, enabled, run, state_of
from tests.fixtures.specs import decision


async def define(db, spec):
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=spec)


async def new_case(db, owner, workflow, *, name="Item", **item):
    async with db.transaction() as s:
        project = await engine.create_project(s, actor=owner, display_name="P")
        sub = await engine.create_subproject(
            s, actor=owner, project_id=project.id, display_name="S", currency="EUR", workflow=workflow
        )
        _, case = await engine.create_workflow_item(s, actor=owner, subproject_id=sub.id, display_name=name, **item)
    return case


async def log_of(db, case_id):
    async with db.session() as s:
        return (await s.scalars(select(Activity).where(Activity.case_id == case_id).order_by(Activity.seq))).all()


async def refused(db, run_func, *args, **kwargs):
    with pytest.raises(DomainError) as error:
        await run_func(*args, **kwargs)
    return error.value


def spec_errors(spec):
    """The INVALID_SPEC problems of a spec, as (path below spec, message)."""
    from engine.workflows import parse_spec

    with pytest.raises(DomainErrors) as errors:
        parse_spec(spec)
    return [(e.field[1:], e.message) for e in errors.value.errors]


DECISION = decision("decision", note={"allowed_roles": ["author"], "always_enabled": True})


async def test_the_output_chosen_decides_the_new_state_and_is_logged(db, make_actor):
    owner = await make_actor("owner")
    await define(db, DECISION)
    first, second = await new_case(db, owner, "decision"), await new_case(db, owner, "decision")
    back = await run(db, owner, first.id, "decide", output="send_back")
    assert (await state_of(db, first.id))[:2] == ("returned", "ACTIVE")
    assert back.activity.data == {"from": "open", "to": "returned", "output": "send_back"}
    await run(db, owner, second.id, "decide", output="accept")
    assert (await state_of(db, second.id))[:2] == ("accepted", "COMPLETED")
    assert [(a.action, a.data.get("output")) for a in await log_of(db, second.id) if a.action == "decide"] == [
        ("decide", "accept")
    ]
    assert await enabled(db, first.id) == ["decide", "note"]  # still enabled in "returned"


async def test_a_missing_or_undeclared_output_is_refused_and_changes_nothing(db, make_actor):
    owner = await make_actor("owner")
    await define(db, DECISION)
    case = await new_case(db, owner, "decision")
    before, log_before = await state_of(db, case.id), len(await log_of(db, case.id))
    missing = await refused(db, run, db, owner, case.id, "decide")
    assert (missing.code, missing.field) == ("INVALID_INPUT", ["output"])
    assert missing.message == "Decide needs an output, one of: accept, send_back."
    wrong = await refused(db, run, db, owner, case.id, "decide", output="maybe")
    assert (wrong.code, wrong.field) == ("INVALID_INPUT", ["output"]) and "accept, send_back" in wrong.message
    stray = await refused(db, run, db, owner, case.id, "note", output="accept")
    assert (stray.code, stray.field) == ("INVALID_INPUT", ["output"]) and "has no outputs" in stray.message
    assert await state_of(db, case.id) == before and len(await log_of(db, case.id)) == log_before


async def test_an_on_fire_callback_picks_the_output_even_of_an_automatic_action(db, make_actor):
    owner = await make_actor("owner")
    seen = []

    @registry.register_on_fire("by_amount")
    async def by_amount(execution):  # what a plugin's caseway.on_fire entry point would provide
        seen.append((execution.action.short_name, execution.output))
        return "large" if int(execution.ctx.item.amount or 0) >= 1000 else "small"

    await define(
        db,
        {
            "short_name": "triage",
            "roles": {"author": {"callbacks": ["creation_user"]}},
            "states": {"draft": {}, "submitted": {}, "board": {}, "approved": {"terminal": True}},
            "actions": {
                "submit": {"allowed_roles": ["author"], "enabled_states": ["draft"], "new_state": "submitted"},
                "route": {
                    "trigger": "auto",
                    "enabled_states": ["submitted"],
                    "on_fire": "by_amount",
                    "outputs": {"large": "board", "small": "approved"},
                },
            },
        },
    )
    big = await new_case(db, owner, "triage", amount_type="ALLOCATED", amount="5000", currency="EUR")
    small = await new_case(db, owner, "triage", amount_type="ALLOCATED", amount="20", currency="EUR")
    for case in (big, small):
        await run(db, owner, case.id, "submit")
    assert (await state_of(db, big.id))[0] == "board" and (await state_of(db, small.id))[:2] == (
        "approved",
        "COMPLETED",
    )
    assert seen == [("route", None), ("route", None)]  # nobody chose: the callback did
    route = [a for a in await log_of(db, big.id) if a.action == "route"]
    assert [(a.actor_id, a.data["output"], a.data["to"]) for a in route] == [("system", "large", "board")]


async def test_a_callback_returning_none_keeps_the_callers_output(db, make_actor):
    owner = await make_actor("owner")

    @registry.register_on_fire("defer_to_caller")
    async def defer_to_caller(execution):
        return None

    await define(
        db,
        {
            **DECISION,
            "short_name": "deferring",
            "actions": {
                **DECISION["actions"],
                "decide": {**DECISION["actions"]["decide"], "on_fire": "defer_to_caller"},
            },
        },
    )
    case = await new_case(db, owner, "deferring")
    await run(db, owner, case.id, "decide", output="send_back")
    assert (await state_of(db, case.id))[0] == "returned"
    assert (await refused(db, run, db, owner, case.id, "decide")).field == ["output"]


def test_the_spec_keys_of_outputs_are_checked():
    registry.register_on_fire("pick_first")(lambda execution: None)
    base = {"short_name": "s", "states": {"a": {}, "b": {}}}
    assert spec_errors(
        {**base, "actions": {"x": {"always_enabled": True, "on_fire": "nope", "outputs": {"go": "b"}}}}
    ) == [(["actions", "x", "on_fire"], "Action 'x' names unknown on_fire callback 'nope'.")]
    assert spec_errors(
        {**base, "actions": {"x": {"trigger": "auto", "enabled_states": ["a"], "outputs": {"go": "b"}}}}
    )[0][0] == ["actions", "x", "on_fire"]  # nobody would choose the output of an automatic action
    assert spec_errors(
        {**base, "actions": {"x": {"timeout_seconds": 60, "enabled_states": ["a"], "outputs": {"go": "b"}}}}
    )[0][0] == ["actions", "x", "on_fire"]  # nor of a timer's
    assert spec_errors(
        {**base, "actions": {"x": {"always_enabled": True, "new_state": "a", "outputs": {"go": "b"}}}}
    ) == [(["actions", "x", "new_state"], "Action 'x' has outputs, which decide its new state; drop new_state.")]
    assert spec_errors({**base, "actions": {"x": {"always_enabled": True, "on_fire": "pick_first"}}}) == [
        (["actions", "x", "on_fire"], "on_fire picks one of an action's outputs; 'x' declares none.")
    ]


async def test_resolutions_are_required_checked_logged_and_listed(db, make_actor):
    submitter, dev = await make_actor("sam"), await make_actor("dev")
    _, (case,) = await bug_case(db, submitter, dev)
    before = await state_of(db, case.id)
    missing = await refused(db, run, db, dev, case.id, "resolve")
    assert (missing.code, missing.field) == ("INVALID_INPUT", ["resolution"])
    assert (
        missing.message
        == "Resolve needs a resolution, one of: fixed, wont_fix, duplicate, cannot_reproduce, by_design."
    )
    wrong = await refused(db, run, db, dev, case.id, "resolve", resolution="Fixed")
    assert (wrong.code, wrong.field) == ("INVALID_INPUT", ["resolution"]) and "fixed, wont_fix" in wrong.message
    stray = await refused(db, run, db, dev, case.id, "comment", resolution="fixed")
    assert (stray.code, stray.field) == ("INVALID_INPUT", ["resolution"]) and "has no resolutions" in stray.message
    assert await state_of(db, case.id) == before
    done = await run(db, dev, case.id, "resolve", resolution="wont_fix", data={"resolution": "fixed"})
    assert done.activity.data["resolution"] == "wont_fix"  # the checked code, not free text in data
    async with db.session() as s:
        spec = await engine.workflows.spec_by_id(s, done.case.workflow_id)
    assert spec.actions["resolve"].resolutions[1] == ("wont_fix", "Won't fix")
    assert spec.actions["resolve"].side_effects == ()  # capture_resolution is no longer needed


def test_only_actions_a_person_executes_have_resolutions():
    spec = {
        "short_name": "s",
        "states": {"a": {}},
        "actions": {"x": {"trigger": "auto", "enabled_states": ["a"], "resolutions": {"ok": "OK"}}},
    }
    assert spec_errors(spec) == [
        (["actions", "x", "resolutions"], "Resolutions are picked by the person executing an action; 'x' is AUTO.")
    ]


GATED = {
    "short_name": "gated",
    "roles": {"crew": {"callbacks": ["creation_user"]}},
    "states": {"open": {}},
    "actions": {
        "remind": {"allowed_roles": ["crew"], "always_enabled": True, "depends_on": {"remind": {"max": 2}}},
        "review": {"allowed_roles": ["crew"], "always_enabled": True},
        "approve": {"allowed_roles": ["crew"], "always_enabled": True, "depends_on": {"review": {"min": 2}}},
        "amend": {"allowed_roles": ["crew"], "always_enabled": True, "depends_on": {"review": {"min": 0, "max": 1}}},
    },
}


async def test_an_action_gated_on_itself_runs_at_most_max_times(db, make_actor):
    owner = await make_actor("owner")
    await define(db, GATED)
    case = await new_case(db, owner, "gated")
    for _ in range(2):
        assert "remind" in await enabled(db, case.id)
        await run(db, owner, case.id, "remind")
    assert "remind" not in await enabled(db, case.id)
    assert (await refused(db, run, db, owner, case.id, "remind")).code == "ACTION_NOT_ENABLED"
    assert [a.action for a in await log_of(db, case.id)].count("remind") == 2


async def test_gates_on_another_action_count_its_completions_min_and_max(db, make_actor):
    owner = await make_actor("owner")
    await define(db, GATED)
    case = await new_case(db, owner, "gated")
    assert await enabled(db, case.id) == ["amend", "remind", "review"]  # approve needs 2 reviews
    await run(db, owner, case.id, "review")
    assert await enabled(db, case.id) == ["amend", "remind", "review"]  # 1 review: amend still open (max 1)
    await run(db, owner, case.id, "review")
    assert await enabled(db, case.id) == ["approve", "remind", "review"]  # 2 reviews: approve opens, amend closes
    async with db.session() as s:
        amend = (await s.scalars(select(EnabledAction.status).where(EnabledAction.action == "amend"))).all()
    assert amend == ["CANCELED"]


def test_a_self_dependency_takes_no_min():
    spec = {**GATED, "actions": {"remind": {"always_enabled": True, "depends_on": {"remind": {"min": 1, "max": 3}}}}}
    assert spec_errors(spec)[0][0] == ["actions", "remind", "depends_on", "remind", "min"]


class Flag:
    """A custom enable condition whose answer the test sets, counting how often it is asked."""

    def __init__(self):
        self.up, self.asked = False, 0

    async def __call__(self, check):
        self.asked += 1
        return self.up


async def refused_rows(db, case_id):
    async with db.session() as s:
        return (
            await s.execute(
                select(EnabledAction.action, EnabledAction.completed_at).where(
                    EnabledAction.case_id == case_id, EnabledAction.status == "REFUSED"
                )
            )
        ).all()


async def test_a_refused_action_is_recorded_and_asked_again_at_the_next_change(db, make_actor):
    owner = await make_actor("owner")
    flag = Flag()
    registry.register_enable_condition("flag_is_up")(flag)
    await define(
        db,
        {
            "short_name": "conditional",
            "roles": {"crew": {"callbacks": ["creation_user"]}},
            "states": {"open": {}, "paid": {"terminal": True}},
            "actions": {
                "note": {"allowed_roles": ["crew"], "always_enabled": True},
                "pay": {
                    "allowed_roles": ["crew"],
                    "enabled_states": ["open"],
                    "new_state": "paid",
                    "enable_conditions": ["flag_is_up"],
                },
            },
        },
    )
    case = await new_case(db, owner, "conditional")
    assert await enabled(db, case.id) == ["note"] and flag.asked == 1
    [(action, first_refusal)] = await refused_rows(db, case.id)
    assert action == "pay"
    assert (await refused(db, run, db, owner, case.id, "pay")).code == "ACTION_NOT_ENABLED"
    await run(db, owner, case.id, "note", now=first_refusal + timedelta(minutes=5))
    assert flag.asked == 2 and await enabled(db, case.id) == ["note"]
    [(_, latest_refusal)] = await refused_rows(db, case.id)  # one row, its latest refusal
    assert latest_refusal > first_refusal
    flag.up = True
    assert await enabled(db, case.id) == ["note"] and flag.asked == 2  # not asked before the next change
    await run(db, owner, case.id, "note")
    assert flag.asked == 3 and await enabled(db, case.id) == ["note", "pay"]
    await run(db, owner, case.id, "note")
    assert flag.asked == 3  # an enabled instance stays enabled: nobody asks again
    await run(db, owner, case.id, "pay")
    assert (await state_of(db, case.id))[:2] == ("paid", "COMPLETED")


async def test_the_built_in_condition_item_has_amount(db, make_actor):
    owner = await make_actor("owner")
    await define(
        db,
        {
            "short_name": "payable",
            "roles": {"crew": {"callbacks": ["creation_user"]}},
            "states": {"open": {}},
            "actions": {
                "pay": {"allowed_roles": ["crew"], "always_enabled": True, "enable_conditions": ["item_has_amount"]},
                "note": {"allowed_roles": ["crew"], "always_enabled": True},
            },
        },
    )
    unpriced = await new_case(db, owner, "payable")
    priced = await new_case(db, owner, "payable", amount_type="DISBURSED", amount="12.50", currency="EUR")
    assert await enabled(db, unpriced.id) == ["note"] and [a for a, _ in await refused_rows(db, unpriced.id)] == ["pay"]
    assert await enabled(db, priced.id) == ["note", "pay"] and await refused_rows(db, priced.id) == []


def test_unknown_enable_conditions_are_refused():
    spec = {
        "short_name": "s",
        "states": {"a": {}},
        "actions": {"x": {"always_enabled": True, "enable_conditions": ["nope"]}},
    }
    assert spec_errors(spec) == [
        (["actions", "x", "enable_conditions"], "Action 'x' names unknown enable condition 'nope'.")
    ]
