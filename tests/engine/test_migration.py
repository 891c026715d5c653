"""engine/migration/migration.py and engine/spec/versions.py through the engine API: timers KEEP vs RESTART at
a given instant, child scopes (mapped, and refused when left out), and what defining a version
would strand (STRANDS_CASES)."""

from datetime import UTC, datetime, timedelta

from sqlalchemy import select

import engine
from engine.cases.context import load_case
from engine.history.history import verify_history
from engine.migration import migration
from engine.spec import versions
from engine.spec.workflows import parse_spec
from models import Activity, EnabledAction
from server.timer_runs import run_due_timers
from tests.fixtures.versions import HOUR, PERMIT_V1, permit_v2

T0 = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)

ASKING_V1 = {
    "short_name": "asking",
    "roles": {"lawyer": {"callbacks": ["creation_user"]}},
    "states": {"open": {}, "done": {"terminal": True}},
    "actions": {
        "start": {"trigger": "init", "new_state": "open"},
        "ask_client": {
            "trigger": "workflow",
            "enabled_states": ["open"],
            "new_state": "done",
            "states": {"asked": {}, "answered": {"terminal": True}},
            "children": {
                "ask_init": {"trigger": "init", "new_state": "asked"},
                "answer": {"assigned_role": "lawyer", "assigned_states": ["asked"], "new_state": "answered"},
            },
        },
    },
}


def asking_v2() -> dict:
    """The child workflow's `asked` is called `waiting` (its `answer` follows)."""
    spec = {**ASKING_V1, "actions": dict(ASKING_V1["actions"])}
    ask = dict(spec["actions"]["ask_client"])
    ask["states"] = {"waiting": {}, "answered": {"terminal": True}}
    ask["children"] = {
        "ask_init": {"trigger": "init", "new_state": "waiting"},
        "answer": {"assigned_role": "lawyer", "assigned_states": ["waiting"], "new_state": "answered"},
    }
    spec["actions"]["ask_client"] = ask
    return spec


async def cases_on(db, owner, spec, count, *, then=None, now=T0):
    """``count`` items of a subproject on ``spec`` (defined now), each then run through ``then``."""
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=spec)
        project = await engine.create_project(s, actor=owner, display_name="P")
        sub = await engine.create_subproject(
            s, actor=owner, project_id=project.id, display_name="S", currency="EUR", workflow=spec["short_name"]
        )
    made = []
    for n in range(count):
        async with db.transaction() as s:
            _, case = await engine.create_workflow_item(s, actor=owner, subproject_id=sub.id, display_name=f"I{n}")
            for action in then or ():
                await engine.execute(s, actor=owner, action=action, case_id=case.id, now=now)
        made.append(case.id)
    return sub.id, made


async def timers_of(db, case_id):
    async with db.session() as s:
        rows = await s.scalars(
            select(EnabledAction).where(EnabledAction.case_id == case_id, EnabledAction.status == "ENABLED")
        )
        return {row.action: row.fire_at for row in rows if row.fire_at is not None}


async def test_keep_keeps_each_due_time_and_restart_starts_the_new_timeout_from_now(db, make_actor):
    owner = await make_actor("owner", admin=True)
    spec = {
        **PERMIT_V1,
        "roles": {"clerk": {"callbacks": ["creation_user"]}, "reviewer": {"callbacks": ["creation_user"]}},
    }
    _, (kept, restarted) = await cases_on(db, owner, spec, 2, then=["submit"])
    assert await timers_of(db, kept) == {"expire": T0 + timedelta(hours=2)}
    later = T0 + timedelta(minutes=30)
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=permit_v2() | {"roles": spec["roles"]})
    for case_id, policy in ((kept, "KEEP"), (restarted, "RESTART")):
        async with db.transaction() as s:
            result = await migration.migrate_cases(
                s,
                actor=owner,
                workflow="permit",
                to_version=2,
                state_map=[("review", "checking")],
                timer_policy=policy,
                case_ids=[case_id],
                now=later,
            )
        assert (result.migrated, result.results[0].to_state) == (1, "checking")
    assert await timers_of(db, kept) == {"expire": T0 + timedelta(hours=2)}
    assert await timers_of(db, restarted) == {"expire": later + timedelta(seconds=4 * HOUR)}


async def test_a_child_scope_moves_by_the_map_and_is_refused_when_its_state_is_left_out(db, make_actor):
    owner = await make_actor("owner", admin=True)
    _, (left_out, mapped) = await cases_on(db, owner, ASKING_V1, 2)
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=asking_v2())
    async with db.transaction() as s:
        refused = await migration.migrate_cases(s, actor=owner, workflow="asking", to_version=2, case_ids=[left_out])
    (error,) = refused.results[0].errors
    assert (error.code, error.message) == (
        "STATE_NOT_MAPPED",
        "The case is in 'asked' (in 'ask_client'), which version 2 lacks; map it in stateMap.",
    )
    async with db.transaction() as s:
        moved = await migration.migrate_cases(
            s, actor=owner, workflow="asking", to_version=2, case_ids=[mapped], state_map=[("asked", "waiting")]
        )
    assert moved.migrated == 1
    async with db.transaction() as s:
        answered = await engine.execute(s, actor=owner, action="answer", case_id=mapped)
    assert answered.activity.data["from"] == "waiting"
    async with db.transaction() as s:
        ctx = await load_case(s, case_id=mapped)
    assert ctx.states[""] == "done"  # the child workflow finished on version 2 and its parent fired


async def test_defining_a_version_counts_the_running_cases_it_would_strand(db, make_actor):
    owner = await make_actor("owner", admin=True)
    await cases_on(db, owner, PERMIT_V1, 3, then=["submit"])
    await cases_on(db, owner, {**PERMIT_V1, "short_name": "other"}, 1, then=["submit"])
    async with db.transaction() as s:
        stranded = await versions.stranded_by(s, parse_spec(permit_v2()))
        same = await versions.stranded_by(s, parse_spec(PERMIT_V1))
    assert (stranded.cases, stranded.states) == (3, ("review",))  # not the other workflow's case
    assert (same.cases, same.states) == (0, ())
    warning = versions.strands_cases_warning(stranded, 2)
    assert warning is not None and (warning.code, warning.severity, warning.path) == (
        "STRANDS_CASES",
        "WARNING",
        ("states",),
    )
    assert warning.message.startswith("3 running case(s) of earlier versions are in 'review'")
    assert versions.strands_cases_warning(same, 2) is None


async def test_a_batch_extends_every_items_hash_chain_intact(db, make_actor):
    """A batch logs one entry on each of many chains in one transaction (their heads read
    together on PostgreSQL): every chain verifies afterwards, the subproject's too."""
    owner = await make_actor("owner", admin=True)
    sub, _ = await cases_on(db, owner, PERMIT_V1, 4)
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=permit_v2())
    async with db.transaction() as s:
        result = await migration.migrate_cases(s, actor=owner, workflow="permit", to_version=2, subproject_id=sub)
    assert result.migrated == 4
    async with db.session() as s:
        items = list(await s.scalars(select(Activity.chain).where(Activity.kind == "case_migrated")))
        reports = [await verify_history(s, resource_id=chain, secret_key="k") for chain in [*items, sub]]
    assert len(items) == 4 and [r.intact for r in reports] == [True] * 5, [r.message for r in reports]


async def test_a_suspended_case_moves_but_fires_nothing_until_it_is_resumed(db, make_actor):
    owner = await make_actor("owner", admin=True)
    spec = {**PERMIT_V1, "roles": {"clerk": {"callbacks": ["creation_user"]}, "reviewer": {}}}
    _, (case_id,) = await cases_on(db, owner, spec, 1, then=["submit"])
    async with db.transaction() as s:
        await engine.suspend_case(s, actor=owner, case_id=case_id)
        v2 = permit_v2()
        v2["actions"]["auto_approve"] = {"trigger": "auto", "enabled_states": ["checking"], "new_state": "approved"}
        await engine.define_workflow(s, actor=None, spec=v2)
    moved_at = T0 + timedelta(hours=1)
    async with db.transaction() as s:
        result = await migration.migrate_cases(
            s,
            actor=owner,
            workflow="permit",
            to_version=2,
            case_ids=[case_id],
            state_map=[("review", "checking")],
            now=moved_at,
        )
    assert result.migrated == 1
    async with db.session() as s:
        ctx = await load_case(s, case_id=case_id)
    assert (ctx.states[""], ctx.case.status) == ("checking", "SUSPENDED")
    assert (await timers_of(db, case_id))["auto_approve"] == moved_at  # due: it fires once resumed
    async with db.transaction() as s:
        await engine.resume_case(s, actor=owner, case_id=case_id, now=moved_at)
    fired = await run_due_timers(db, now=moved_at + timedelta(seconds=1), limit=10)
    assert [entry.action for entry in fired.fired] == ["auto_approve"]
    async with db.session() as s:
        ctx = await load_case(s, case_id=case_id)
    assert (ctx.states[""], ctx.case.status) == ("approved", "COMPLETED")


REVIEW_V1 = {
    "short_name": "review_flow",
    "roles": {"clerk": {"callbacks": ["creation_user"]}},
    "states": {"open": {}, "done": {"terminal": True}},
    "actions": {
        "start": {"trigger": "init", "new_state": "open"},
        "close": {"assigned_role": "clerk", "assigned_states": ["open"], "new_state": "done"},
    },
}
REVIEW_V2 = {  # close now fires by itself
    **REVIEW_V1,
    "actions": {**REVIEW_V1["actions"], "close": {"trigger": "auto", "enabled_states": ["open"], "new_state": "done"}},
}


async def test_a_suspended_case_whose_user_action_became_auto_moves_as_an_active_one_would(db, make_actor):
    """Migrating an ACTIVE case fires its enabled action that became AUTO at once; a SUSPENDED
    one must fire it once resumed (it was left ENABLED with nothing to fire it, for good)."""
    owner = await make_actor("owner", admin=True)
    _, (active, suspended) = await cases_on(db, owner, REVIEW_V1, 2)
    async with db.transaction() as s:
        await engine.suspend_case(s, actor=owner, case_id=suspended, now=T0)
        await engine.define_workflow(s, actor=None, spec=REVIEW_V2)
    async with db.transaction() as s:
        moved = await migration.migrate_cases(
            s, actor=owner, workflow="review_flow", to_version=2, case_ids=[active, suspended], now=T0
        )
    assert moved.migrated == 2
    async with db.transaction() as s:
        await engine.resume_case(s, actor=owner, case_id=suspended, now=T0 + timedelta(minutes=1))
    await run_due_timers(db, now=T0 + timedelta(minutes=2), limit=100)
    for case_id in (active, suspended):
        async with db.transaction() as s:
            ctx = await load_case(s, case_id=case_id)
            assert (ctx.case.status, ctx.states[""]) == ("COMPLETED", "done"), case_id
