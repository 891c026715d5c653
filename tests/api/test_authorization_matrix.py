"""Every mutation and every kind of `node` by {owner, viewer, stranger, admin, role player}
(issue 27), from the one table in tests/fixtures/authorization.py.

For each mutation: the actors it is refused to run first, on one scene, each answered the
table's code with the database unchanged (every table compared row by row); then each actor it
is done for, on a fresh scene of its own (a done change would alter what the next one meets).
"""

import pytest

from tests.fixtures.authorization import ACTORS, DONE, MUTATIONS, NODES
from tests.fixtures.authorization_scene import SCHEMA, build_scene, outcome, snapshot
from tests.fixtures.documents import NODE_ID


def test_the_table_names_every_mutation_of_the_schema():
    in_schema = set(SCHEMA.mutation_type.fields)
    assert sorted(in_schema - set(MUTATIONS)) == [], "add a row to tests/fixtures/authorization.py"
    assert sorted(set(MUTATIONS) - in_schema) == [], "the schema no longer has these mutations"


def test_the_table_names_every_node_kind_that_has_a_scene_object():
    implementing = {t.name for t in SCHEMA.get_implementations(SCHEMA.get_type("Node")).objects}
    # Notifications are their owner's alone.
    assert implementing - set(NODES) <= {"Notification"}


@pytest.fixture
async def actors(make_user) -> dict[str, str]:
    """actor name -> user id; the users are made once per test, tokens per scene."""
    ids = {}
    for name in ACTORS:
        ids[name], _ = await make_user(name, admin=name == "admin")
    ids["victim"], _ = await make_user("victim")
    return ids


@pytest.mark.parametrize("name", sorted(MUTATIONS))
async def test_mutation(name, gql, db, actors):
    row = MUTATIONS[name]
    seen, wanted = {}, {actor: row.expected(actor) for actor in ACTORS}
    scene = await build_scene(gql, db, actors)
    before = await snapshot(db)
    for actor in (a for a in ACTORS if wanted[a] != DONE):
        seen[actor] = await outcome(gql, name, row, scene, scene.tokens[actor])
        assert await snapshot(db) == before, f"{name} refused to {actor} changed the database"
    for actor in (a for a in ACTORS if wanted[a] == DONE):
        seen[actor] = await _done_by(gql, db, name, row, actors, actor)
    assert seen == wanted


@pytest.mark.parametrize("kind", sorted(NODES))
async def test_node(kind, gql, db, actors):
    scene = await build_scene(gql, db, actors)
    node_id = NODES[kind].id(scene)
    seen = {actor: (await gql(NODE_ID, {"id": node_id}, token=scene.tokens[actor]))["node"] for actor in ACTORS}
    assert {a for a, found in seen.items() if found} == NODES[kind].seen_by
    assert all(found == {"id": node_id} for found in seen.values() if found)


async def _done_by(gql, db, name, row, actors, actor):
    scene = await build_scene(gql, db, actors)
    return await outcome(gql, name, row, scene, scene.tokens[actor])
