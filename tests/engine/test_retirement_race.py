"""Retiring a version while an item or a subproject is being created on it (PostgreSQL; SQLite's
one writer serializes them): the creation reads the version under a share lock, so it waits for a
retirement in flight and is then refused, never committed on a version retired before it."""

import asyncio

import pytest
from sqlalchemy import text

import engine
from engine.errors import DomainError, ErrorCode
from engine.spec import versions
from tests.fixtures.database import BACKEND

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(BACKEND != "postgres", reason="SQLite's single writer serializes the two"),
]

WAITING_ON_A_LOCK = (
    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
)


async def until_waiting(db) -> None:
    """Until another connection of this database waits on a row lock (a condition, not a sleep)."""
    for _ in range(500):
        async with db.session() as s:
            if await s.scalar(text(WAITING_ON_A_LOCK)):
                return
        await asyncio.sleep(0.01)
    raise AssertionError("the creation never waited on the retirement's lock")


@pytest.mark.parametrize("creating", ["item", "subproject"])
async def test_a_creation_racing_a_retirement_waits_for_it_and_is_refused(db, make_actor, creating):
    owner = await make_actor("owner", admin=True)
    async with db.transaction() as s:
        project = await engine.create_project(s, actor=owner, display_name="P")
        sub = await engine.create_subproject(s, actor=owner, project_id=project.id, display_name="S", currency="EUR")
        version = (await engine.latest_workflow(s, short_name="simple")).version

    async def create() -> None:
        async with db.transaction() as s:
            if creating == "item":
                await engine.create_workflow_item(s, actor=owner, subproject_id=sub.id, display_name="late")
            else:
                await engine.create_subproject(
                    s,
                    actor=owner,
                    project_id=project.id,
                    display_name="late",
                    currency="EUR",
                    workflow="simple",
                    workflow_version=version,
                )

    async with db.transaction() as retiring:
        await versions.retire_workflow(retiring, actor=owner, workflow="simple", version=version)
        creation = asyncio.create_task(create())
        await until_waiting(db)
        assert not creation.done()
    with pytest.raises(DomainError) as refused:
        await creation
    assert refused.value.code == ErrorCode.WORKFLOW_RETIRED
    async with db.session() as s:
        late = await s.scalar(
            text("SELECT count(*) FROM workflow_item WHERE display_name = 'late'")
            if creating == "item"
            else text("SELECT count(*) FROM subproject WHERE display_name = 'late'")
        )
    assert late == 0
