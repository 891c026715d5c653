"""engine/history/activity.py: appending to the log. An entry is queued by ``record`` and written just
before its transaction commits, so ``seq`` is commit order (a transaction that started first
and commits last gets the later seq) and a rolled-back change leaves no entry; each entry
carries the columns of the resource it is about (so each resource's history finds it) and
extends that resource's hash chain. engine/history/history.py's tests verify chains; these pin how
entries are made."""

import asyncio

import pytest
from sqlalchemy import select

import engine
from engine.history.activity import record
from engine.history.history import verify_history
from models import Activity, Case, Project, Subproject, WorkflowItem
from tests.fixtures.builders import bug_case, run
from tests.fixtures.database import BACKEND


async def entries(db, **where):
    async with db.session() as s:
        query = select(Activity).order_by(Activity.seq)
        for column, value in where.items():
            query = query.where(getattr(Activity, column) == value)
        return (await s.scalars(query)).all()


async def tree(db, owner):
    """A project, its subproject and an item of it (with its case)."""
    sub, (case,) = await bug_case(db, owner, owner)
    return sub.project_id, sub.id, case.object_id, case.id


@pytest.mark.parametrize(
    ("about", "expected"),
    [
        ("project", ("project", None, None, None)),
        ("subproject", ("project", "subproject", None, None)),
        ("item", ("project", "subproject", "item", None)),
        ("item with case", ("project", "subproject", "item", "case")),
    ],
)
async def test_an_entry_carries_the_columns_of_what_it_is_about_and_extends_its_chain(db, make_actor, about, expected):
    owner = await make_actor("owner")
    ids = dict(zip(("project", "subproject", "item", "case"), await tree(db, owner), strict=True))
    model = {"project": Project, "subproject": Subproject}.get(about, WorkflowItem)
    resource_id = ids[about.split()[0]]
    async with db.transaction() as s:
        resource = await s.get(model, resource_id)
        await record(
            s,
            kind="commented",
            actor_id=owner.user_id,
            about=resource,
            case_id=ids["case"] if about == "item with case" else None,
            comment=about,
        )
    (entry,) = await entries(db, comment=about)
    columns = (entry.project_id, entry.subproject_id, entry.workflow_item_id, entry.case_id)
    assert columns == tuple(ids[name] if name else None for name in expected)
    assert entry.chain == resource_id and entry.actor_id == owner.user_id and entry.kind == "commented"
    before = [e for e in await entries(db, chain=resource_id) if e.seq < entry.seq]
    assert entry.prev_hash == before[-1].hash  # the chain's head before it
    async with db.session() as s:
        assert (await verify_history(s, resource_id=resource_id, secret_key="")).intact


async def test_entries_are_written_at_commit_in_recording_order_and_not_at_all_on_rollback(db, make_actor):
    owner = await make_actor("owner")
    project_id, sub_id, _, _ = await tree(db, owner)
    async with db.transaction() as s:
        project, sub = await s.get(Project, project_id), await s.get(Subproject, sub_id)
        for n, about in enumerate((sub, project, sub)):
            await record(s, kind="commented", actor_id=owner.user_id, about=about, comment=f"c{n}")
        assert await entries(db, kind="commented") == []  # queued: nothing written before the commit
    written = await entries(db, kind="commented")
    assert [e.comment for e in written] == ["c0", "c1", "c2"]
    assert [e.seq for e in written] == list(range(written[0].seq, written[0].seq + 3))  # together, in order
    assert [e.chain for e in written] == [sub_id, project_id, sub_id]
    assert written[2].prev_hash == written[0].hash  # each chain extended by its own entries only

    with pytest.raises(RuntimeError):
        async with db.transaction() as s:
            await record(
                s, kind="commented", actor_id=owner.user_id, about=await s.get(Project, project_id), comment="x"
            )
            raise RuntimeError("the change fails")
    assert [e.comment for e in await entries(db, kind="commented")] == ["c0", "c1", "c2"]


@pytest.mark.postgres
@pytest.mark.skipif(
    BACKEND != "postgres", reason="SQLite runs one transaction at a time: none commits while another is open"
)
async def test_seq_is_commit_order_a_transaction_that_started_first_and_commits_last_comes_last(db, make_actor):
    """The log a live reader follows (seq > the last it saw) must never get an entry behind it:
    the entry of the transaction that commits later has the greater seq, whichever recorded
    first."""
    owner = await make_actor("owner")
    project_id, sub_id, _, _ = await tree(db, owner)
    recorded, other_committed = asyncio.Event(), asyncio.Event()

    async def early():
        async with db.transaction() as s:
            await record(
                s, kind="commented", actor_id=owner.user_id, about=await s.get(Project, project_id), comment="early"
            )
            recorded.set()
            await other_committed.wait()

    async def late():
        await recorded.wait()
        async with db.transaction() as s:
            await record(
                s, kind="commented", actor_id=owner.user_id, about=await s.get(Subproject, sub_id), comment="late"
            )
        other_committed.set()

    await asyncio.wait_for(asyncio.gather(early(), late()), 30)
    assert [e.comment for e in await entries(db, kind="commented")] == ["late", "early"]


async def test_concurrent_writers_keep_every_chain_intact_and_seq_in_commit_order(db, make_actor):
    """Writers of one resource's chain read its head in turn (each chain has its own lock),
    writers of several chains take them in one order (no deadlock), and seq never repeats."""
    from engine.history.activity import record
    from engine.history.history import verify_history
    from models import Project

    owner = await make_actor("owner")
    async with db.transaction() as s:
        first = await engine.create_project(s, actor=owner, display_name="A")
        second = await engine.create_project(s, actor=owner, display_name="B")

    async def write(n: int) -> None:
        async with db.transaction() as s:
            both = [await s.get(Project, first.id), await s.get(Project, second.id)]
            for about in both if n % 2 else reversed(both):  # the two orders a deadlock needs
                await record(s, kind="commented", actor_id=owner.user_id, about=about, comment=str(n))

    await asyncio.gather(*[write(n) for n in range(24)])
    async with db.session() as s:
        for project in (first, second):
            assert (await verify_history(s, resource_id=project.id, secret_key="")).intact
        comments = (await s.scalars(select(Activity.comment).where(Activity.chain == first.id))).all()
        assert sorted(c for c in comments if c is not None) == sorted(str(n) for n in range(24))
        seqs = (await s.scalars(select(Activity.seq))).all()
        assert len(seqs) == len(set(seqs))
        # Each writer holds both chains' heads until it commits: the writers follow one another
        # in the same order through both chains, and seq numbers them in that order.
        in_seq_order = [
            [
                c
                for c in (
                    await s.scalars(select(Activity.comment).where(Activity.chain == p.id).order_by(Activity.seq))
                )
            ]
            for p in (first, second)
        ]
        assert in_seq_order[0] == in_seq_order[1]


async def test_log_is_hash_chained(db, make_actor):
    from engine.history.history import verify_history

    owner, dev = await make_actor("owner"), await make_actor("dev")
    _, (case,) = await bug_case(db, owner, dev)
    await run(db, dev, case.id, "resolve", resolution="fixed")
    await run(db, owner, case.id, "close")
    async with db.session() as s:
        item_id = (await s.get(Case, case.id)).object_id
        assert (await verify_history(s, resource_id=item_id, secret_key="")).intact
        last = await s.scalar(select(Activity).where(Activity.chain == item_id).order_by(Activity.seq.desc()).limit(1))
        last.comment = "rewritten history"
        await s.flush()
        assert not (await verify_history(s, resource_id=item_id, secret_key="")).intact
        await s.rollback()
