"""The task index (engine/cases/task_index.py) follows every engine path that enables, completes,
cancels or reassigns an instance, changes a role's players or a case's status: after each step
its rows equal the task list's rule recomputed from the tables (tests/fixtures/task_index.py),
and each step's rows are spelled out, so a row given to the wrong party shows. Issue 25."""

import re
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

from sqlalchemy import delete

import engine
from engine.cases import task_index
from models import TaskAssignment
from server.timer_runs import run_due_timers
from tests.fixtures.builders import bug_case, build_tree, mutate
from tests.fixtures.child_workflows import EXECUTE_ID, REVIEW, define, new_item, run, tip_item
from tests.fixtures.documents import (
    ADD_MEMBER,
    CANCEL,
    CREATE_GROUP,
    CREATE_ITEM,
    EXECUTE,
    REASSIGN,
    RESUME,
    SUSPEND,
    UPDATE_ITEM,
)
from tests.fixtures.task_index import held, index_follows, recomputed

ASSIGN_ITEM = """mutation($input: AssignInput!) { assignWorkflowItem(input: $input) { userErrors { code } } }"""

# A clerk's task that a timer takes away after an hour, giving the boss one instead.
ESCALATE = {
    "short_name": "escalate",
    "roles": {"clerk": {}, "boss": {}},
    "states": {"new": {}, "escalated": {}, "done": {"terminal": True}},
    "actions": {
        "start": {"trigger": "init", "new_state": "new"},
        "handle": {"assigned_role": "clerk", "assigned_states": ["new"], "new_state": "done"},
        "escalate": {"trigger": "time", "enabled_states": ["new"], "timeout_seconds": 3600, "new_state": "escalated"},
        "decide": {"assigned_role": "boss", "assigned_states": ["escalated"], "new_state": "done"},
    },
}


async def bug(gql, token, sub, name, assignee):
    fields = {"subprojectId": sub["id"], "displayName": name, "assigneeId": assignee}
    made = (await gql(CREATE_ITEM, {"input": fields}, token=token))["createWorkflowItem"]
    assert made["userErrors"] == [], made["userErrors"]
    return made["workflowItem"]


async def act(gql, token, item, action, **fields):
    done = await mutate(gql, EXECUTE, token, workflowItemId=item["id"], action=action, **fields)
    assert done["userErrors"] == [], done["userErrors"]


async def test_the_index_follows_a_bug_through_every_user_path(db, gql, make_user):
    sam_id, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    ann_id, _ = await make_user("ann")
    _, root = await make_user("root", admin=True)
    group = (await gql(CREATE_GROUP, {"name": "devs"}, token=root))["createGroup"]["group"]["id"]
    await gql(ADD_MEMBER, {"g": group, "u": ann_id}, token=root)
    _, sub, _ = await build_tree(gql, sam, items=0, workflow="bug")
    a = await bug(gql, sam, sub, "A", dev_id)
    b = await bug(gql, sam, sub, "B", group)
    c = await bug(gql, sam, sub, "C", ann_id)
    assert await index_follows(db) == {dev_id: ["resolve"], group: ["resolve"], ann_id: ["resolve"]}

    await act(gql, dev, a, "resolve", resolution="fixed")  # completed; the submitter's close enabled
    assert await index_follows(db) == {sam_id: ["close"], group: ["resolve"], ann_id: ["resolve"]}

    # The assignee role's players replaced: the group's row goes, dev and ann get one each.
    replaced = await mutate(gql, REASSIGN, sam, workflowItemId=b["id"], role="assignee", partyIds=[dev_id, ann_id])
    assert replaced["userErrors"] == []
    assert await index_follows(db) == {sam_id: ["close"], dev_id: ["resolve"], ann_id: ["resolve", "resolve"]}
    removed = await mutate(
        gql, REASSIGN, sam, workflowItemId=b["id"], role="assignee", partyIds=[ann_id], mode="REMOVE"
    )
    assert removed["userErrors"] == []
    assert await index_follows(db) == {sam_id: ["close"], dev_id: ["resolve"], ann_id: ["resolve"]}

    # The item's assignee is not a role player once the role has players: nothing moves.
    assert (await mutate(gql, ASSIGN_ITEM, sam, id=c["id"], assigneeId=dev_id))["userErrors"] == []
    assert await index_follows(db) == {sam_id: ["close"], dev_id: ["resolve"], ann_id: ["resolve"]}

    assert (await mutate(gql, SUSPEND, sam, workflowItemId=c["id"]))["userErrors"] == []
    assert await index_follows(db) == {sam_id: ["close"], dev_id: ["resolve"]}
    assert (await mutate(gql, RESUME, sam, workflowItemId=c["id"]))["userErrors"] == []
    assert await index_follows(db) == {sam_id: ["close"], dev_id: ["resolve"], ann_id: ["resolve"]}

    assert (await mutate(gql, CANCEL, sam, workflowItemId=b["id"]))["userErrors"] == []
    assert await index_follows(db) == {sam_id: ["close"], ann_id: ["resolve"]}

    await act(gql, sam, a, "close")  # the case completes: its reopen is nobody's task
    assert await index_follows(db) == {ann_id: ["resolve"]}
    await act(gql, sam, a, "reopen")  # and reopens: resolve is its assignee's task again
    assert await index_follows(db) == {dev_id: ["resolve"], ann_id: ["resolve"]}


async def test_the_index_follows_timers(db, gql, make_user):
    _, root = await make_user("root", admin=True)
    clerk_id, clerk = await make_user("clerk")
    boss_id, _ = await make_user("boss")
    await define(gql, root, ESCALATE)
    _, sub, _ = await build_tree(gql, root, items=0, workflow="escalate")
    items = []
    for name in ("late", "handled", "held"):
        fields = {
            "subprojectId": sub["id"],
            "displayName": name,
            "assignments": [{"role": "clerk", "partyIds": [clerk_id]}, {"role": "boss", "partyIds": [boss_id]}],
        }
        made = (await gql(CREATE_ITEM, {"input": fields}, token=root))["createWorkflowItem"]
        assert made["userErrors"] == [], made["userErrors"]
        items.append(made["workflowItem"])
    _, handled, held = items  # the first is left to its timer
    assert await index_follows(db) == {clerk_id: ["handle"] * 3}
    await act(gql, clerk, handled, "handle")
    assert (await mutate(gql, SUSPEND, root, workflowItemId=held["id"]))["userErrors"] == []
    assert await index_follows(db) == {clerk_id: ["handle"]}

    fired = await run_due_timers(db, now=datetime.now(UTC) + timedelta(hours=2), limit=10)
    assert [e.action for e in fired.fired] == ["escalate"]  # the late one; the held case waits
    assert await index_follows(db) == {boss_id: ["decide"]}

    assert (await mutate(gql, RESUME, root, workflowItemId=held["id"]))["userErrors"] == []
    rows = await index_follows(db)  # resumed past its time: its timer fired too, or it is the clerk's again
    assert rows in ({boss_id: ["decide", "decide"]}, {boss_id: ["decide"], clerk_id: ["handle"]})
    await run_due_timers(db, now=datetime.now(UTC) + timedelta(hours=2), limit=10)
    assert await index_follows(db) == {boss_id: ["decide", "decide"]}


async def test_the_index_follows_child_workflows_and_a_quorum(db, gql, make_user):
    item, _, admin, tokens = await tip_item(gql, make_user)
    # DYNAMIC children, one per voter, each assigned to its voter (the group is the role's player).
    rows = await index_follows(db)
    assert len(rows) == 3 and list(rows.values()) == [["approve", "reject"]] * 3  # withdraw is assigned nowhere
    await gql(EXECUTE_ID, run(item, "approve"), token=tokens["voter1"])
    assert list((await index_follows(db)).values()) == [["approve", "reject"]] * 2  # voter1's scope completed
    done = (await gql(EXECUTE_ID, run(item, "approve"), token=tokens["voter2"]))["executeAction"]
    assert done["case"]["state"]["shortName"] == "accepted"  # the quorum cancels voter3's vote
    assert await index_follows(db) == {}

    await define(gql, admin, REVIEW)
    lawyer_id, lawyer = await make_user("lawyer")
    review = await new_item(gql, lawyer, "rev_op")  # PARALLEL children started with the case
    assert await index_follows(db) == {lawyer_id: ["opinion", "review"]}
    await gql(EXECUTE_ID, run(review, "review"), token=lawyer)
    assert await index_follows(db) == {lawyer_id: ["opinion"]}
    await gql(EXECUTE_ID, run(review, "opinion"), token=lawyer)  # the last child ends the parent
    assert await index_follows(db) == {}


async def test_the_migration_and_a_bulk_load_build_the_same_rows(db, gql, make_user):
    """Migration 0024 backfills with the statements ``rebuild`` runs after a bulk load."""
    from importlib import import_module

    migration = import_module("migrations.versions.0024_dashboard_reads")
    assert re.sub(r"\s+", " ", migration.REBUILD).strip() == re.sub(r"\s+", " ", task_index.rebuild_sql()).strip()
    assert migration.COUNT == task_index.count_sql()
    sam_id, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    _, sub, _ = await build_tree(gql, sam, items=0, workflow="bug")
    first = await bug(gql, sam, sub, "A", dev_id)
    await bug(gql, sam, sub, "B", dev_id)
    await act(gql, dev, first, "resolve", resolution="fixed")
    rows = await recomputed(db)
    assert {party for party, *_ in rows} == {sam_id, dev_id}
    async with db.transaction() as s:
        await s.execute(delete(TaskAssignment))  # as after COPY: nothing in the index
    async with db.transaction() as s:
        await task_index.rebuild(s)
    assert await index_follows(db) == {sam_id: ["close"], dev_id: ["resolve"]}


async def test_a_transaction_that_touches_many_cases_settles_them_in_chunks(db, make_user, make_actor, monkeypatch):
    """A bulk import's transaction (bench's wide seed: 20,000 items) touches more cases than one
    statement should name: they are settled a chunk at a time, every chunk."""
    monkeypatch.setattr(task_index, "_CHUNK", 2)
    owner = await make_actor("sam")
    dev_id, _ = await make_user("dev")
    ann_id, _ = await make_user("ann")
    await bug_case(db, owner, SimpleNamespace(user_id=dev_id), items=5)  # one transaction, 5 cases
    await bug_case(db, owner, SimpleNamespace(user_id=ann_id), items=1)
    assert await index_follows(db) == {dev_id: ["resolve"] * 5, ann_id: ["resolve"]}


async def test_only_a_change_to_somebodys_task_costs_the_index_a_statement(db, make_actor, count_statements):
    """Settling costs one statement on PostgreSQL, two on SQLite, and only in a transaction that
    changed an assigned instance, a role's players or whether a case can run: running an action
    anyone may run (``comment``, bench W1) or a timer of an unassigned workflow costs nothing."""
    owner = await make_actor("sam")
    dev = await make_actor("dev")
    _, (case,) = await bug_case(db, owner, dev)

    async def index_statements(action, actor, **fields):
        with count_statements() as counter:
            async with db.transaction() as s:
                await engine.execute(s, actor=actor, case_id=case.id, action=action, **fields)
        return [s for s in counter.statements if "task_assignment" in s]

    assert await index_statements("comment", owner, comment="later") == []
    settle = task_index.statements_per_commit(db.engine.dialect.name)
    assert await index_follows(db) == {dev.user_id: ["resolve"]}
    assert len(await index_statements("resolve", dev, resolution="fixed")) == settle  # dev's task done
    assert await index_follows(db) == {owner.user_id: ["close"]}


async def test_a_new_due_date_moves_the_rows_of_the_items_tasks(db, gql, make_user):
    """The rows carry their item's due date (the order by due date reads it from the index):
    setting, changing and clearing it reaches every row of the item's tasks."""
    _, sam = await make_user("sam")
    dev_id, _ = await make_user("dev")
    _, sub, _ = await build_tree(gql, sam, items=0, workflow="bug")
    item = await bug(gql, sam, sub, "A", dev_id)
    for due in ("2031-07-01", "2031-06-15", None):
        done = await gql(UPDATE_ITEM, {"input": {"id": item["id"], "dueDate": due}}, token=sam)
        assert done["updateWorkflowItem"]["userErrors"] == []
        assert await index_follows(db) == {dev_id: ["resolve"]}  # and its due date is the item's
        assert {str(d) if d else None for *_, d in await held(db)} == {due}
