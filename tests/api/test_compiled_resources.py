"""The resource fields of resolvers/compiled/resource_fields.py answer what their resolvers do.

Every query here runs on two servers over one database (``differential_reads``): one with the
read planner, one with ``CASEWAY_COMPILED_READS=false``; the bodies must be equal byte for
byte, for each viewer of the authorization matrix. The data differs per resource where the SQL
could go wrong: tags none and several (non-ASCII, out of order), nested additional data with
unicode and every number form, dates null and set (a year before 1000), budgets out of order,
grants to users and groups, a group deleted with its grants left behind, an item the viewer may
not view in the ordering, a removed document.
"""

import pytest
from sqlalchemy import delete, insert, text, update

from engine.people.permissions import PROJECT_INTENTS
from models import Group, GroupMember, Permission, Subproject
from tests.api import test_authorization_matrix as matrix
from tests.fixtures.authorization import ACTORS
from tests.fixtures.database import BACKEND
from tests.fixtures.documents import (
    ADD_DOCUMENT,
    ADD_MEMBER,
    CREATE_GROUP,
    CREATE_ITEM,
    GRANT,
    REMOVE_DOCUMENT,
    REORDER,
    REVOKE,
    UPDATE_ITEM,
    UPDATE_PROJECT,
)
from tests.fixtures.uploads import multipart

pytestmark = pytest.mark.usefixtures("differential_reads")
actors = matrix.actors  # the matrix's users (a fixture), one per actor

UPDATE_SUBPROJECT = """mutation($input: UpdateResourceInput!) {
  updateSubproject(input: $input) { userErrors { code message field } } }"""

DATA = {"z": {"b": [1, 2.5, -0.0, 1e16, 1.0, "x", None, True], "a": {}}, "a": 'ünï ☃ "q" \\', "n": -12345678901234567}
PARTY = "__typename ... on User { login } ... on Group { name }"
PLAYER = {"__typename": "User", "login": "player"}
RESOURCE = f"""tags additionalData allowedIntents permissions {{ intent parties {{ {PARTY} }}
  holders {{ inherited reachesDown inheritedFrom party {{ {PARTY} }} }} }}"""

PROJECTS = f"""query Projects {{ projects(first: 100) {{ totalCount edges {{ node {{
  id displayName description status {RESOURCE} projectedBudgets {{ organization currency value }}
  subprojects(first: 50) {{ totalCount edges {{ node {{ id displayName currency status {RESOURCE}
    workflowItemOrdering validator {{ {PARTY} }} projectedBudgets {{ organization currency value }} }} }} }} }} }} }}
}}"""
CARD = f"""id displayName amount amountType currency dueDate billingDate status {RESOURCE}
  assignee {{ {PARTY} }} documents {{ id fileName sha256 size contentType addedAt removed removedAt
    addedBy {{ login }} }}"""
BOARD = f"""query Board($id: ID!, $first: Int!) {{ node(id: $id) {{ ... on Subproject {{
  id displayName description currency status allowedIntents workflowMode tags workflowItemOrdering
  assignee {{ {PARTY} }} validator {{ {PARTY} }}
  workflowItems(first: $first) {{ totalCount pageInfo {{ hasNextPage endCursor }}
    edges {{ node {{ {CARD} }} }} }} }} }} }}"""
ITEM = f"""query Item($id: ID!) {{ node(id: $id) {{ ... on WorkflowItem {{ {CARD}
  subproject {{ workflowItemOrdering {RESOURCE} project {{ {RESOURCE} projectedBudgets {{ value }} }} }} }} }} }}"""


async def _ok(gql, document, variables, token):
    body = await gql(document, variables, token=token)
    payload = next(iter(body.values()))
    assert payload["userErrors"] == [], payload
    return payload


async def _scene(gql, db, actors):
    """The matrix's scene, with data that differs per resource (see the module docstring)."""
    scene = await matrix.build_scene(gql, db, actors)
    owner, admin = scene.tokens["owner"], scene.tokens["admin"]
    budgets = [
        {"organization": "Org b", "currency": "EUR", "value": "10"},
        {"organization": "Org B", "currency": "USD", "value": "2.50"},
        {"organization": "Org B", "currency": "EUR", "value": "1"},
    ]
    project = {
        "id": scene.project,
        "tags": ["zeta", "Alpha", "été"],
        "additionalData": DATA,
        "projectedBudgets": budgets,
    }
    await _ok(gql, UPDATE_PROJECT, {"input": project}, owner)
    await _ok(gql, UPDATE_SUBPROJECT, {"input": {"id": scene.empty_subproject, "tags": ["t"]}}, owner)
    item = {"id": scene.item, "tags": ["t", "b"], "additionalData": {"k": [{"é": 1}]}, "dueDate": "2026-02-03"}
    item |= {"amountType": "ALLOCATED", "amount": "12.50", "billingDate": "0999-12-31"}
    await _ok(gql, UPDATE_ITEM, {"input": item}, owner)
    # I3, which the viewer may not view, first in the ordering
    created = await gql(CREATE_ITEM, {"input": {"subprojectId": scene.subproject, "displayName": "I3"}}, token=owner)
    i3 = created["createWorkflowItem"]["workflowItem"]["id"]
    await _ok(gql, REVOKE, {"r": i3, "i": "workflowItem.view", "p": actors["viewer"]}, owner)
    await _ok(gql, REORDER, {"s": scene.subproject, "ordering": [i3, scene.suspended_item, scene.item]}, owner)
    # grants to a group, and to a group deleted since (its grants left behind): on I2 it alone
    # held workflowItem.update
    await _ok(gql, GRANT, {"r": scene.project, "i": "project.viewHistory", "p": scene.group}, owner)
    # the viewer holds workflowItem.view on I twice: its own, and its group's
    viewers = (await _ok(gql, CREATE_GROUP, {"name": "viewers"}, admin))["group"]["id"]
    await _ok(gql, ADD_MEMBER, {"g": viewers, "u": actors["viewer"]}, admin)
    await _ok(gql, GRANT, {"r": scene.item, "i": "workflowItem.view", "p": viewers}, owner)
    gone = (await _ok(gql, CREATE_GROUP, {"name": "gone"}, admin))["group"]["id"]
    await _ok(gql, GRANT, {"r": scene.project, "i": "project.view", "p": gone}, owner)
    await _ok(gql, GRANT, {"r": scene.suspended_item, "i": "workflowItem.update", "p": gone}, owner)
    await _ok(gql, REVOKE, {"r": scene.suspended_item, "i": "workflowItem.update", "p": actors["owner"]}, owner)
    async with db.transaction() as s:
        await s.execute(delete(GroupMember).where(GroupMember.group_id == gone))
        await s.execute(delete(Group).where(Group.id == gone))
        # validators (set only when a subproject is made): a group, and one gone since
        await s.execute(update(Subproject).where(Subproject.id == scene.empty_subproject).values(validator_id=viewers))
        await s.execute(update(Subproject).where(Subproject.id == scene.subproject).values(validator_id=gone))
    # a second document on I, removed
    added = await multipart(
        gql.http,
        ADD_DOCUMENT,
        {"input": {"workflowItemId": scene.item, "file": None}},
        {"input.file": ("b.txt", b"bb")},
        token=owner,
    )
    await _ok(gql, REMOVE_DOCUMENT, {"id": added.json()["data"]["addDocument"]["document"]["id"]}, owner)
    scene.extra.update(i3=i3, gone=gone)
    return scene


async def test_resource_fields_answer_the_same_for_every_viewer(gql, db, actors, count_statements):
    scene = await _scene(gql, db, actors)
    reads = {}
    for actor in ACTORS:
        token = scene.tokens[actor]
        reads[actor] = {
            "projects": (await gql(PROJECTS, token=token))["projects"],
            "board": (await gql(BOARD, {"id": scene.subproject, "first": 10}, token=token))["node"],
            "items": [(await gql(ITEM, {"id": i}, token=token))["node"] for i in (scene.item, scene.suspended_item)],
        }
    owner = reads["owner"]
    project = next(e["node"] for e in owner["projects"]["edges"] if e["node"]["id"] == scene.project)
    assert project["tags"] == ["zeta", "Alpha", "été"] and project["additionalData"] == DATA
    assert list(project["additionalData"]) == ["z", "a", "n"]
    budgets = [(b["organization"], b["currency"]) for b in project["projectedBudgets"]]
    assert sorted(budgets) == [("Org B", "EUR"), ("Org B", "USD"), ("Org b", "EUR")]
    assert budgets.index(("Org B", "EUR")) < budgets.index(("Org B", "USD"))  # by currency within one
    assert project["allowedIntents"] == sorted(PROJECT_INTENTS)
    grants = {g["intent"]: g["parties"] for g in project["permissions"]}
    assert list(grants) == sorted(grants)
    assert grants["project.view"] == sorted(grants["project.view"], key=lambda p: p.get("login", ""))
    assert [p["__typename"] for p in grants["project.viewHistory"]] == ["Group", "User"]  # by id: grp_ < usr_
    assert [p["__typename"] for p in grants["project.view"]] == ["User", "User"]  # the gone group left out
    subprojects = {e["node"]["id"]: e["node"] for e in project["subprojects"]["edges"]}
    assert subprojects[scene.subproject]["tags"] == [] and subprojects[scene.subproject]["additionalData"] == {}
    assert subprojects[scene.empty_subproject]["tags"] == ["t"]
    assert subprojects[scene.empty_subproject]["validator"] == {"__typename": "Group", "name": "viewers"}
    assert subprojects[scene.subproject]["validator"] is None  # the group is gone
    ordering = [scene.extra["i3"], scene.suspended_item, scene.item]
    assert owner["board"]["workflowItemOrdering"] == ordering
    assert reads["viewer"]["board"]["workflowItemOrdering"] == ordering[1:]
    assert reads["admin"]["board"]["workflowItemOrdering"] == ordering
    item, suspended = owner["items"]
    assert (item["dueDate"], item["billingDate"], item["tags"]) == ("2026-02-03", "0999-12-31", ["t", "b"])
    assert (suspended["dueDate"], suspended["billingDate"], suspended["tags"]) == (None, None, [])
    assert [(d["fileName"], d["removed"], d["removedAt"] is None) for d in item["documents"]] == [
        ("a.txt", False, True),
        ("b.txt", True, False),
    ]
    assert item["documents"][0]["addedBy"] == {"login": "owner"}
    assert item["subproject"]["workflowItemOrdering"] == ordering  # below a parent pointer: the same
    assert reads["viewer"]["items"][0]["subproject"]["workflowItemOrdering"] == ordering[1:]
    assert reads["player"]["items"][0]["subproject"] is None  # the player may not view S
    assert {g["intent"]: g["parties"] for g in suspended["permissions"]}["workflowItem.update"] == []
    viewer_item = reads["viewer"]["items"][0]
    assert viewer_item["permissions"] is None and viewer_item["allowedIntents"] == ["workflowItem.view"]
    assert reads["stranger"]["items"] == [None, None] and reads["player"]["board"] is None
    # the player's listPermissions on P reaches the items it sees (the matrix's scene)
    player_item = reads["player"]["items"][0]
    assert player_item["allowedIntents"] == ["workflowItem.intent.listPermissions"]
    listed = {g["intent"]: g["parties"] for g in player_item["permissions"]}
    assert {"__typename": "User", "login": "owner"} in listed["workflowItem.intent.grantPermission"]
    held = {g["intent"]: g["holders"] for g in player_item["permissions"]}["workflowItem.intent.listPermissions"]
    # its own hold, inherited from P, which it may not see: the source is not named
    assert {"inherited": True, "reachesDown": False, "inheritedFrom": None, "party": PLAYER} in held
    owner_read = {g["intent"]: g["holders"] for g in reads["owner"]["items"][0]["permissions"]}
    assert {"inherited": True, "reachesDown": False, "inheritedFrom": scene.project, "party": PLAYER} in owner_read[
        "workflowItem.intent.listPermissions"
    ]
    for document, variables in (
        (PROJECTS, None),
        (BOARD, {"id": scene.subproject, "first": 10}),
        (ITEM, {"id": scene.item}),
    ):
        for actor in ("owner", "viewer"):
            with count_statements() as compiled:
                await gql.raw(document, variables, token=scene.tokens[actor])
            assert compiled.count == 1, compiled.statements


PERMISSIONS = """query Permissions($id: ID!) { node(id: $id) { ... on Project { allowedIntents
  permissions { intent parties { __typename ... on User { login } } } } } }"""


@pytest.mark.skipif(BACKEND != "postgres", reason="a collation other than byte order: PostgreSQL's")
async def test_allowed_intents_sort_by_code_point_whatever_the_collation(gql, db, actors):
    """``allowedIntents`` and ``permissions`` are in code points (Python's ``sorted``: the grants
    loader merges a resource's own grants with those reaching it in Python): with the intent
    column under an ICU collation, where "project.apple" sorts before "project.Zed" (in code
    points it is after), each read answers as its resolver on the other road does."""
    async with db.engine.begin() as connection:
        found = await connection.scalar(text("SELECT count(*) FROM pg_collation WHERE collname = 'en-x-icu'"))
    if not found:
        pytest.skip("PostgreSQL built without ICU")
    await _collate_intents(db, "en-x-icu")  # first: the other server has not connected yet
    try:
        scene = await matrix.build_scene(gql, db, actors)
        async with db.transaction() as s:  # intents of an older version, still granted
            for intent in ("project.apple", "project.Zed"):
                values = {"resource_id": scene.project, "intent": intent, "party_id": actors["viewer"]}
                await s.execute(insert(Permission).values(**values))
        reads = {actor: await gql(PERMISSIONS, {"id": scene.project}, token=scene.tokens[actor]) for actor in ACTORS}
    finally:
        await _collate_intents(db, "default")
    assert reads["viewer"]["node"]["allowedIntents"] == ["project.Zed", "project.apple", "project.view"]
    intents = [g["intent"] for g in reads["owner"]["node"]["permissions"]]
    assert intents.index("project.Zed") < intents.index("project.apple")  # code points, not the collation


async def _collate_intents(db, collation):
    """The permission table's intents under ``collation``; the pooled connections, whose
    prepared statements knew the column as it was, are closed."""
    async with db.engine.begin() as connection:
        await connection.execute(text(f'ALTER TABLE permission ALTER COLUMN intent TYPE VARCHAR COLLATE "{collation}"'))
    await db.engine.dispose()
