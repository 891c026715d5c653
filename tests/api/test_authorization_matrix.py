"""Every mutation and every kind of `node` by {owner, viewer, stranger, admin, role player}
(issue 27), from the one table in tests/fixtures/authorization.py.

For each mutation: the actors it is refused to run first, on one scene, each answered the
table's code with the database unchanged (every table compared row by row); then each actor it
is done for, on a fresh scene of its own (a done change would alter what the next one meets).
"""

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from graphql import build_schema
from sqlalchemy import select
from sqlmodel import SQLModel

from engine.people import identity
from tests.fixtures.authorization import ACTORS, DONE, MUTATIONS, NODES, Row, Scene, bug_spec
from tests.fixtures.documents import (
    ADD_DOCUMENT,
    ADD_MEMBER,
    CREATE_GROUP,
    CREATE_ITEM,
    CREATE_PROJECT,
    CREATE_SUBPROJECT,
    DEFINE,
    EXECUTE,
    GRANT,
    GRANT_REACHING,
    NODE_ID,
    SET_DEPUTY,
)
from tests.fixtures.jobs import left_job
from tests.fixtures.uploads import multipart

SCHEMA = build_schema((Path(__file__).parents[2] / "schema" / "schema.graphql").read_text())
# Rows that change on any authenticated request, whatever it asks: not part of "nothing changed".
VOLATILE_TABLES = {"api_token", "login_attempt"}

SUSPEND_ITEM = """mutation($id: ID!) { suspendCase(input: {workflowItemId: $id}) { userErrors { code message } } }"""
CASE_AND_LOG = """query($id: ID!) { node(id: $id) { ... on WorkflowItem { case { id workflow { id shortName version }
  log(first: 50) { edges { node { id comment } } } } } } }"""


def _document(name: str) -> str:
    """The mutation with its one `input` argument, asking only for its userErrors."""
    argument = SCHEMA.mutation_type.fields[name].args["input"]
    return f"mutation($input: {argument.type}) {{ {name}(input: $input) {{ userErrors {{ code message }} }} }}"


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


async def _token(db, user_id: str) -> str:
    async with db.transaction() as s:
        return await identity.create_token(s, user_id=user_id, ttl_seconds=3600)


async def _ok(gql, document: str, variables: dict[str, Any], token: str) -> dict[str, Any]:
    (payload,) = (await gql(document, variables, token=token)).values()
    assert payload.get("userErrors", []) == [], payload
    return payload


async def build_scene(gql, db, ids: dict[str, str]) -> Scene:
    """The tree of tests/fixtures/authorization.py's docstring, made over GraphQL by the owner (the group
    by the admin; the jobs written as a runner leaves them, since the bug workflow has none)."""
    tokens = {name: await _token(db, ids[name]) for name in ACTORS}
    owner = tokens["owner"]

    async def project(name: str) -> str:
        made = await _ok(gql, CREATE_PROJECT, {"input": {"displayName": name}}, owner)
        await _ok(gql, GRANT, {"r": made["project"]["id"], "i": "project.view", "p": ids["viewer"]}, owner)
        return made["project"]["id"]

    async def subproject(project_id: str, name: str) -> str:
        sub_input = {"projectId": project_id, "displayName": name, "currency": "EUR", "workflow": "bug"}
        return (await _ok(gql, CREATE_SUBPROJECT, {"input": sub_input}, owner))["subproject"]["id"]

    async def item(subproject_id: str, name: str) -> str:
        item_input = {"subprojectId": subproject_id, "displayName": name, "assigneeId": ids["player"]}
        return (await _ok(gql, CREATE_ITEM, {"input": item_input}, owner))["workflowItem"]["id"]

    p, e = await project("P"), await project("E")
    s, s2 = await subproject(p, "S"), await subproject(p, "S2")
    i, i2 = await item(s, "I"), await item(s, "I2")
    # Grants that must not show what they are not for: the stranger views a project of its
    # own (not P), the player may list P's grants (not view it).
    await _ok(gql, CREATE_PROJECT, {"input": {"displayName": "Stranger's"}}, tokens["stranger"])
    # The player's reaches down (engine/people/inheritance.py): it lists the grants of S and of
    # the items it sees too, so every read test built on the scene (the compiled reads'
    # differential tests among them) reads a grant inherited from above.
    await _ok(gql, GRANT_REACHING, {"r": p, "i": "project.intent.listPermissions", "p": ids["player"]}, owner)
    await _ok(gql, SUSPEND_ITEM, {"id": i2}, owner)
    comment = {"workflowItemId": i, "action": "comment", "comment": "owner's note"}
    await _ok(gql, EXECUTE, {"input": comment}, owner)
    case = (await gql(CASE_AND_LOG, {"id": i}, token=owner))["node"]["case"]
    activity = next(e["node"]["id"] for e in case["log"]["edges"] if e["node"]["comment"] == "owner's note")
    on_i = {"case_id": case["id"], "item_id": i, "activity_id": activity}
    failed, stalled = await left_job(db, state="FAILED", **on_i), await left_job(db, state="STALLED", **on_i)
    attached = await multipart(
        gql.http,
        ADD_DOCUMENT,
        {"input": {"workflowItemId": i, "file": None}},
        {"input.file": ("a.txt", b"a")},
        token=owner,
    )
    document = attached.json()["data"]["addDocument"]["document"]["id"]
    group = (await _ok(gql, CREATE_GROUP, {"name": Scene.unique("team")}, tokens["admin"]))["group"]["id"]
    await _ok(gql, ADD_MEMBER, {"g": group, "u": ids["victim"]}, tokens["admin"])
    # The stranger stands in for the victim (who plays no role in the scene) for a day to come,
    # a day of its own per scene (a test makes several for the same users).
    starts = datetime.now(UTC) + timedelta(days=int(Scene.unique("")))
    period = {"from": starts.isoformat(), "until": (starts + timedelta(days=1)).isoformat()}
    deputy = {"userId": ids["victim"], "deputyId": ids["stranger"], **period}
    deputyship = await _ok(gql, SET_DEPUTY, {"input": deputy}, tokens["admin"])
    # A version of the scene's own to retire (retiring the bug workflow would reach other scenes).
    retirable = (await _ok(gql, DEFINE, {"spec": bug_spec(Scene.unique("old"))}, tokens["admin"]))["workflow"]
    return Scene(
        ids=ids,
        tokens=tokens,
        project=p,
        empty_project=e,
        subproject=s,
        empty_subproject=s2,
        item=i,
        suspended_item=i2,
        case=case["id"],
        activity=activity,
        failed_job=failed,
        stalled_job=stalled,
        group=group,
        victim=ids["victim"],
        document=document,
        extra={
            "workflow": case["workflow"]["id"],
            "deputyship": deputyship["deputyship"]["id"],
            "version": case["workflow"],
            "retirable": retirable,
        },
    )


async def _snapshot(db) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table but the volatile ones, sorted: equal snapshots, nothing changed."""
    rows = {}
    async with db.session() as s:
        for table in SQLModel.metadata.sorted_tables:
            if table.name not in VOLATILE_TABLES:
                rows[table.name] = sorted((tuple(r) for r in (await s.execute(select(table))).all()), key=repr)
    return rows


async def _outcome(gql, name: str, row: Row, scene: Scene, actor: str) -> str:
    if row.files:
        response = await multipart(
            gql.http, _document(name), {"input": row.input(scene)}, row.files, token=scene.tokens[actor]
        )
        assert response.status_code == 200, response.text
        body = response.json()
    else:
        body = await gql.raw(_document(name), {"input": row.input(scene)}, token=scene.tokens[actor])
    assert not body.get("errors"), (actor, body["errors"])
    errors = body["data"][name]["userErrors"]
    return errors[0]["code"] if errors else DONE


@pytest.mark.parametrize("name", sorted(MUTATIONS))
async def test_mutation(name, gql, db, actors):
    row = MUTATIONS[name]
    seen, wanted = {}, {actor: row.expected(actor) for actor in ACTORS}
    scene = await build_scene(gql, db, actors)
    before = await _snapshot(db)
    for actor in (a for a in ACTORS if wanted[a] != DONE):
        seen[actor] = await _outcome(gql, name, row, scene, actor)
        assert await _snapshot(db) == before, f"{name} refused to {actor} changed the database"
    for actor in (a for a in ACTORS if wanted[a] == DONE):
        seen[actor] = await _outcome(gql, name, row, await build_scene(gql, db, actors), actor)
    assert seen == wanted


@pytest.mark.parametrize("kind", sorted(NODES))
async def test_node(kind, gql, db, actors):
    scene = await build_scene(gql, db, actors)
    node_id = NODES[kind].id(scene)
    seen = {actor: (await gql(NODE_ID, {"id": node_id}, token=scene.tokens[actor]))["node"] for actor in ACTORS}
    assert {a for a, found in seen.items() if found} == NODES[kind].seen_by
    assert all(found == {"id": node_id} for found in seen.values() if found)
