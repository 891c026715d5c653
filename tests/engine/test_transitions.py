"""engine/cases/transitions.py through the engine API: how a case moves when an instance fires. The
output chosen (by the caller or an on_fire callback) picks the new state; resolution codes;
gating with depends_on min/max; enable conditions (REFUSED, asked again at the next change, in
the root scope and inside a child scope); recompute keeping, cancelling and enabling instances;
the case's status following its state; automatic actions and their loop bound. What a spec may
say is in test_specs.py."""

from datetime import timedelta

import pytest
from sqlalchemy import select

import engine
from engine import registry
from engine.errors import DomainError
from models import Activity, EnabledAction
from tests.fixtures.builders import bug_case, enabled, run, state_of
from tests.fixtures.specs import decision, store_as_before


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
            "states": {"draft": {}, "submitted": {}, "board": {"terminal": True}, "approved": {"terminal": True}},
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
        spec = await engine.spec.workflows.spec_by_id(s, done.case.workflow_id)
    assert spec.actions["resolve"].resolutions[1] == ("wont_fix", "Won't fix")
    assert spec.actions["resolve"].side_effects == ()  # capture_resolution is no longer needed


GATED = {
    "short_name": "gated",
    "roles": {"crew": {"callbacks": ["creation_user"]}},
    "states": {"open": {}, "approved": {"terminal": True}},
    "actions": {
        "remind": {"allowed_roles": ["crew"], "always_enabled": True, "depends_on": {"remind": {"max": 2}}},
        "review": {"allowed_roles": ["crew"], "always_enabled": True},
        "approve": {
            "allowed_roles": ["crew"],
            "enabled_states": ["open"],
            "depends_on": {"review": {"min": 2}},
            "new_state": "approved",
        },
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


class Flag:
    """A custom enable condition whose answer the test sets, counting how often it is asked."""

    def __init__(self):
        self.up, self.asked = False, 0

    async def __call__(self, check):
        self.asked += 1
        return self.up


async def refused_instances(db, case_id):
    """The case's REFUSED instances (one per action and scope)."""
    async with db.session() as s:
        return (
            await s.scalars(
                select(EnabledAction).where(EnabledAction.case_id == case_id, EnabledAction.status == "REFUSED")
            )
        ).all()


async def refused_rows(db, case_id):
    return [(row.action, row.completed_at) for row in await refused_instances(db, case_id)]


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


async def test_an_automatic_action_refused_by_its_condition_waits_and_fires_at_the_next_change(db, make_actor):
    owner = await make_actor("owner")
    flag = Flag()
    registry.register_enable_condition("flag_is_up")(flag)
    await define(
        db,
        {
            "short_name": "settling",
            "roles": {"crew": {"callbacks": ["creation_user"]}},
            "states": {"open": {}, "settled": {"terminal": True}},
            "actions": {
                "note": {"allowed_roles": ["crew"], "always_enabled": True},
                "settle": {
                    "trigger": "auto",
                    "enabled_states": ["open"],
                    "new_state": "settled",
                    "enable_conditions": ["flag_is_up"],
                },
            },
        },
    )
    case = await new_case(db, owner, "settling")
    (row,) = await refused_instances(db, case.id)
    assert (row.action, row.trigger) == ("settle", "auto")  # recorded as what it is, not as a user's task
    assert (await state_of(db, case.id))[:2] == ("open", "ACTIVE")
    flag.up = True
    await run(db, owner, case.id, "note")
    assert (await state_of(db, case.id))[:2] == ("settled", "COMPLETED")


async def test_the_built_in_condition_item_has_amount(db, make_actor):
    owner = await make_actor("owner")
    await define(
        db,
        {
            "short_name": "payable",
            "roles": {"crew": {"callbacks": ["creation_user"]}},
            "states": {"open": {}, "paid": {"terminal": True}},
            "actions": {
                "pay": {
                    "allowed_roles": ["crew"],
                    "enabled_states": ["open"],
                    "enable_conditions": ["item_has_amount"],
                    "new_state": "paid",
                },
                "note": {"allowed_roles": ["crew"], "always_enabled": True},
            },
        },
    )
    unpriced = await new_case(db, owner, "payable")
    priced = await new_case(db, owner, "payable", amount_type="DISBURSED", amount="12.50", currency="EUR")
    assert await enabled(db, unpriced.id) == ["note"] and [a for a, _ in await refused_rows(db, unpriced.id)] == ["pay"]
    assert await enabled(db, priced.id) == ["note", "pay"] and await refused_rows(db, priced.id) == []


async def instances(db, case_id):
    """The case's instances as (action, status, scope, fire_at, id), oldest first."""
    async with db.session() as s:
        rows = await s.scalars(
            select(EnabledAction).where(EnabledAction.case_id == case_id).order_by(EnabledAction.enabled_at)
        )
        return [(ea.action, ea.status, ea.scope, ea.fire_at, ea.id) for ea in rows]


def live(rows):
    """The ENABLED instances, by action: (id, fire_at)."""
    return {action: (id_, fire_at) for action, status, _, fire_at, id_ in rows if status == "ENABLED"}


MOVING = {
    "short_name": "moving",
    "roles": {"crew": {"callbacks": ["creation_user"]}},
    "states": {"open": {}, "review": {}, "closed": {"terminal": True}},
    "actions": {
        "note": {"allowed_roles": ["crew"], "always_enabled": True},
        "nudge": {"allowed_roles": ["crew"], "enabled_states": ["open", "review"], "timeout_seconds": 3600},
        "edit": {"allowed_roles": ["crew"], "enabled_states": ["open"]},
        "submit": {"allowed_roles": ["crew"], "enabled_states": ["open"], "new_state": "review"},
        "approve": {"assigned_role": "crew", "assigned_states": ["review"], "new_state": "closed"},
        "reopen": {"allowed_roles": ["crew"], "enabled_states": ["closed"], "new_state": "open"},
    },
}


async def test_recompute_keeps_what_stays_enabled_cancels_what_does_not_and_restarts_a_timer_enabled_again(
    db, make_actor
):
    owner = await make_actor("owner")
    await define(db, MOVING)
    case = await new_case(db, owner, "moving")
    start = live(await instances(db, case.id))
    assert sorted(start) == ["edit", "note", "nudge", "submit"]
    nudge_id, nudge_due = start["nudge"]
    assert nudge_due is not None

    noted = await run(db, owner, case.id, "note", now=nudge_due - timedelta(minutes=50))
    assert "canceled" not in noted.activity.data
    after_note = live(await instances(db, case.id))
    assert after_note["nudge"] == (nudge_id, nudge_due)  # kept, its timer still running
    assert after_note["note"][0] != start["note"][0]  # the one fired is done; a new one is enabled

    submitted = await run(db, owner, case.id, "submit", now=nudge_due - timedelta(minutes=40))
    assert submitted.activity.data["canceled"] == ["edit"]  # no longer enabled in "review"
    assert (submitted.activity.data["from"], submitted.activity.data["to"]) == ("open", "review")
    in_review = live(await instances(db, case.id))
    assert sorted(in_review) == ["approve", "note", "nudge"] and in_review["nudge"] == (nudge_id, nudge_due)
    statuses = {(action, status) for action, status, *_ in await instances(db, case.id)}
    assert {("edit", "CANCELED"), ("submit", "COMPLETED"), ("note", "COMPLETED")} <= statuses

    closed = await run(db, owner, case.id, "approve", now=nudge_due - timedelta(minutes=30))
    assert closed.activity.data["canceled"] == ["nudge"]  # note is enabled in every state: kept
    assert (await state_of(db, case.id))[:2] == ("closed", "COMPLETED")
    reopened_at = nudge_due - timedelta(minutes=20)
    await run(db, owner, case.id, "reopen", now=reopened_at)
    assert (await state_of(db, case.id))[:2] == ("open", "ACTIVE")
    again = live(await instances(db, case.id))
    assert again["nudge"][0] != nudge_id  # a new instance: a new clock
    assert again["nudge"][1] == reopened_at + timedelta(seconds=3600)
    kinds = [(a.kind, a.action, a.data.get("state")) for a in await log_of(db, case.id)]
    assert kinds[-4:] == [
        ("action_executed", "approve", None),
        ("case_completed", None, "closed"),
        ("action_executed", "reopen", None),
        ("case_reopened", None, "open"),
    ]


async def test_an_assigned_role_holds_only_in_the_actions_assigned_states(db, make_actor):
    """approve is assigned to crew in "review" only; note is never assigned."""
    owner = await make_actor("owner")
    spec = {**MOVING, "short_name": "moving_assigned"}
    spec["actions"] = {
        **MOVING["actions"],
        "edit": {"assigned_role": "crew", "assigned_states": ["review"], "enabled_states": ["open", "review"]},
    }
    await define(db, spec)
    case = await new_case(db, owner, "moving_assigned")

    async def roles():
        async with db.session() as s:
            rows = await s.execute(
                select(EnabledAction.action, EnabledAction.assigned_role).where(
                    EnabledAction.case_id == case.id, EnabledAction.status == "ENABLED"
                )
            )
            return dict(rows.all())

    assert (await roles())["edit"] is None  # enabled in "open", assigned only in "review"
    await run(db, owner, case.id, "submit")
    in_review = await roles()
    assert (in_review["edit"], in_review["approve"], in_review["note"]) == ("crew", "crew", None)


LOOPING = {
    "short_name": "looping",
    "roles": {"crew": {"callbacks": ["creation_user"]}},
    "states": {"idle": {}, "ping": {}, "pong": {}},
    "actions": {
        "start": {"allowed_roles": ["crew"], "enabled_states": ["idle"], "new_state": "ping"},
        "to_pong": {"trigger": "auto", "enabled_states": ["ping"], "new_state": "pong"},
        "to_ping": {"trigger": "auto", "enabled_states": ["pong"], "new_state": "ping"},
    },
}


async def test_automatic_actions_that_never_stop_are_refused_as_a_loop_and_change_nothing(db, make_actor):
    """Refused at definition now (AUTO_LOOP); a workflow stored before that check still loads,
    and its loop is stopped at run time."""
    owner = await make_actor("owner")
    with pytest.raises(DomainError) as refused_definition:
        await define(db, LOOPING)
    assert ("AUTO_LOOP", ("actions", "to_pong")) in [(d.code, d.path) for d in refused_definition.value.diagnostics]
    async with db.transaction() as s:
        await store_as_before(s, LOOPING)
    case = await new_case(db, owner, "looping")
    before, log_before = await state_of(db, case.id), len(await log_of(db, case.id))
    error = await refused(db, run, db, owner, case.id, "start")
    assert error.code == "WORKFLOW_LOOP"
    assert error.message == "Automatic actions fired 100 times in a row; the workflow loops."
    assert await state_of(db, case.id) == before and len(await log_of(db, case.id)) == log_before


async def test_automatic_actions_fire_as_the_system_oldest_first_until_none_is_left(db, make_actor):
    owner = await make_actor("owner")
    spec = {
        "short_name": "chain",
        "roles": {"crew": {"callbacks": ["creation_user"]}},
        "states": {"a": {}, "b": {}, "c": {}, "d": {"terminal": True}},
        "actions": {
            "go": {"allowed_roles": ["crew"], "enabled_states": ["a"], "new_state": "b"},
            "b_to_c": {"trigger": "auto", "enabled_states": ["b"], "new_state": "c"},
            "c_to_d": {"trigger": "auto", "enabled_states": ["c"], "new_state": "d"},
        },
    }
    await define(db, spec)
    case = await new_case(db, owner, "chain")
    await run(db, owner, case.id, "go")
    assert (await state_of(db, case.id))[:2] == ("d", "COMPLETED")
    fired = [(a.action, a.actor_id, a.data["from"], a.data["to"]) for a in await log_of(db, case.id) if a.action]
    assert fired == [("go", owner.user_id, "a", "b"), ("b_to_c", "system", "b", "c"), ("c_to_d", "system", "c", "d")]


class Recorder:
    """An enable condition that says no until told yes, and notes what it was asked about."""

    def __init__(self):
        self.up, self.asked = False, []

    async def __call__(self, check):
        self.asked.append((check.action.short_name, check.scope, check.ctx.case.id))
        return self.up


CHILD_GATED = {
    "short_name": "child_gated",
    "roles": {"crew": {"callbacks": ["creation_user"]}},
    "states": {"open": {}, "done": {"terminal": True}},
    "actions": {
        "init": {"trigger": "init", "new_state": "open"},
        "check": {
            "trigger": "workflow",
            "enabled_states": ["open"],
            "new_state": "done",
            "states": {"c_open": {}, "c_done": {"terminal": True}},
            "children": {
                "c_init": {"trigger": "init", "new_state": "c_open"},
                "c_note": {"allowed_roles": ["crew"], "enabled_states": ["c_open"]},
                "c_pay": {
                    "allowed_roles": ["crew"],
                    "enabled_states": ["c_open"],
                    "new_state": "c_done",
                    "enable_conditions": ["child_flag"],
                },
            },
        },
    },
}


async def test_an_enable_condition_inside_a_child_scope_is_asked_about_that_scope_and_refuses_there(db, make_actor):
    owner = await make_actor("owner")
    flag = Recorder()
    registry.register_enable_condition("child_flag")(flag)
    await define(db, CHILD_GATED)
    case = await new_case(db, owner, "child_gated")
    rows = await instances(db, case.id)
    (parent_id,) = [id_ for action, status, _, _, id_ in rows if action == "check" and status == "ENABLED"]
    assert flag.asked == [("c_pay", parent_id, case.id)]  # asked about the child scope, by its owner's id
    (row,) = await refused_instances(db, case.id)
    assert (row.action, row.scope, row.trigger) == ("c_pay", parent_id, "user")
    assert row.id.startswith("ea_") and row.enabled_at == row.completed_at
    first_refusal = row.enabled_at

    later = first_refusal + timedelta(minutes=5)
    await run(db, owner, case.id, "c_note", now=later)
    assert flag.asked[-1] == ("c_pay", parent_id, case.id) and len(flag.asked) == 2
    (again,) = await refused_instances(db, case.id)
    assert (again.id, again.enabled_at, again.completed_at) == (row.id, first_refusal, later)  # one row, moved on
    assert sorted(a for a, s_, scope, *_ in await instances(db, case.id) if s_ == "ENABLED" and scope == parent_id) == [
        "c_note"
    ]

    flag.up = True
    await run(db, owner, case.id, "c_note")
    enabled_children = [
        a for a, s_, scope, *_ in await instances(db, case.id) if s_ == "ENABLED" and scope == parent_id
    ]
    assert sorted(enabled_children) == ["c_note", "c_pay"]
    await run(db, owner, case.id, "c_pay")
    assert (await state_of(db, case.id))[:2] == ("done", "COMPLETED")  # the child finished, its parent fired
