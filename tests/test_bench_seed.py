"""Bulk-seeded benchmark data must read exactly like data the engine wrote."""

import pytest
from sqlalchemy import text

from bench import seed
from tests.fixtures.database import BACKEND

SEEDED_TREE = """{ projects(first: 2) { edges { node { displayName subprojects(first: 1) { edges { node { displayName
  workflowItems(first: 2) { edges { node { displayName status amount amountType currency
    assignee { ... on User { login } }
    case { status version state { shortName }
      enabledActions { action { shortName } assignees { ... on User { login } } }
      roles { role { shortName } assignees { ... on User { login } } } log { edges { node { kind action data } } } }
  } } } } } } } } } }"""


@pytest.mark.skipif(BACKEND != "postgres", reason="bulk seeding uses PostgreSQL COPY")
async def test_bulk_rows_read_like_engine_rows(db, gql):
    from engine.history.history import verify_history
    from engine.people import identity

    await seed.seed(db.url, 1, 1, 2)
    await seed.seed(db.url, 1, 1, 2, bulk=True)
    async with db.transaction() as s:
        owner = await identity.actor_by_login(s, "bench")
        token = await identity.create_token(s, user_id=owner.user_id, ttl_seconds=600)
    projects = (await gql(SEEDED_TREE, token=token))["projects"]["edges"]
    engine_made, bulk_made = (p["node"]["subprojects"]["edges"][0]["node"] for p in projects)
    assert bulk_made == engine_made
    # Columns the seed leaves out take the database's default, as the engine's rows do: a case's
    # fields written as JSON null made every compiled read of a case fall back (json_each of a
    # scalar), which the answers above cannot show, as the fallback answers alike.
    async with db.session() as s:
        kinds = (await s.execute(text("SELECT DISTINCT json_typeof(fields) FROM workflow_case"))).scalars().all()
    assert kinds == ["object"]
    from tests.fixtures.task_index import held, recomputed

    tasks = await held(db)  # the bulk rows are in the task index too: bench-dev resolves all four
    assert tasks == await recomputed(db) and len(tasks) == 4
    async with db.session() as s:
        from sqlalchemy import select

        from models import WorkflowItem

        for item_id in (await s.scalars(select(WorkflowItem.id))).all():
            assert (await verify_history(s, resource_id=item_id, secret_key="")).intact
        # Each case's first state visit (engine/history/visits.py), alike in both seeds.
        from models import StateVisit, Subproject

        visits = (
            await s.execute(
                select(Subproject.display_name, StateVisit.state, StateVisit.entered_action, StateVisit.left_at)
                .join(Subproject, Subproject.id == StateVisit.subproject_id)
                .order_by(Subproject.created_at, StateVisit.entered_at)
            )
        ).all()
        engine_visits, bulk_visits = visits[: len(visits) // 2], visits[len(visits) // 2 :]
        assert [v[1:] for v in engine_visits] == [v[1:] for v in bulk_visits] == [("open", "open", None)] * 2
