"""Compiled parent pointers, workflows and a case's structure answer what the resolvers answer.

The parent pointers (resolvers/compiled/relations.py) read a row under a fresh alias: these
documents meet the same table twice on one path (an item, its subproject, that subproject's
items; a case, its item, that item's case), for every viewer of the authorization matrix,
among them the player, who sees the items but not their subproject or project.
"""

from sqlalchemy import update

from models import Subproject
from tests.api import test_compiled_reads as reads
from tests.fixtures.authorization import ACTORS

actors, same, resolvers_only = reads.actors, reads.same, reads.resolvers_only

PARTY = "__typename ... on User { id login } ... on Group { id name }"

BOARD = """query Board($s: ID!) { node(id: $s) { ... on Subproject { id project { id displayName }
  workflowItems(first: 10) { edges { node { id displayName subproject { id displayName status
    project { id displayName } }
    case { id workflowItem { id subproject { id } case { id status } } } } } } } } }"""

ITEM_UP_AND_DOWN = """query UpAndDown($i: ID!) { node(id: $i) { ... on WorkflowItem { id
  subproject { id project { id status } workflowItems(first: 5) { totalCount edges { node { id
    case { id roles { role { shortName } assignees { PARTY } } } } } } } } } }""".replace("PARTY", PARTY)

CASE_ITEM_CASE = """query CaseItemCase($i: ID!) { node(id: $i) { ... on WorkflowItem {
  case { id workflowItem { id displayName case { id state { shortName } roles { role { shortName }
    assignees { PARTY } } workflowItem { id } } } } } } }""".replace("PARTY", PARTY)

ENTRIES = """query Entries($i: ID!, $p: ID!) {
  item: node(id: $i) { ... on WorkflowItem { case { log(first: 50) { edges { node { seq kind
    project { id displayName } subproject { id currency } workflowItem { id case { id } subproject { id } } } } } }
    history(first: 50) { edges { node { seq workflowItem { displayName } } } } } }
  project: node(id: $p) { ... on Project { history(first: 50) { edges { node { seq kind project { id }
    subproject { id project { id } } workflowItem { id subproject { id } } } } } } } }"""

VALIDATOR = """query Validator($s: ID!) { node(id: $s) { ... on Subproject { id validator { PARTY }
  workflowItems { edges { node { subproject { validator { PARTY } } } } } } } }""".replace("PARTY", PARTY)


async def _one_statement(gql, count_statements, document, variables, token):
    """The document costs one statement per root field (``node``)."""
    with count_statements() as compiled:
        body = await gql.raw(document, variables, token=token)
    assert compiled.count == document.count("node(id:"), compiled.statements
    return body


async def test_parent_pointers_answer_the_same_for_every_viewer(gql, db, actors, same, count_statements):
    """The board (a page of items, each with its subproject), an item's subproject's items, a
    case's item's case, and a log's entries with their resources: the player sees the items and
    their log but not the subproject or project (null), the stranger nothing."""
    scene = await reads._ordered_scene(gql, db, actors)
    documents = [
        (BOARD, {"s": scene.subproject}),
        (ITEM_UP_AND_DOWN, {"i": scene.item}),
        (CASE_ITEM_CASE, {"i": scene.item}),
        (ENTRIES, {"i": scene.item, "p": scene.project}),
    ]
    bodies = {}
    for actor in ACTORS:
        for document, variables in documents:
            bodies[actor, document] = await same(document, variables, scene.tokens[actor])
            assert "errors" not in bodies[actor, document], bodies[actor, document]
    owner = bodies["owner", ITEM_UP_AND_DOWN]["data"]["node"]["subproject"]
    assert owner["project"] == {"id": scene.project, "status": "OPEN"} and owner["workflowItems"]["totalCount"] == 3
    played = [e["node"]["case"]["roles"] for e in owner["workflowItems"]["edges"]]
    assert any(a.get("login") == "player" for roles in played for role in roles for a in role["assignees"])
    # the player: the item, never its subproject; its case's item is the item again
    assert bodies["player", ITEM_UP_AND_DOWN]["data"]["node"] == {"id": scene.item, "subproject": None}
    round_trip = bodies["player", CASE_ITEM_CASE]["data"]["node"]["case"]
    assert round_trip["workflowItem"]["id"] == scene.item
    assert round_trip["workflowItem"]["case"]["id"] == round_trip["id"]
    assert round_trip["workflowItem"]["case"]["workflowItem"] == {"id": scene.item}
    entries = [e["node"] for e in bodies["player", ENTRIES]["data"]["item"]["case"]["log"]["edges"]]
    assert entries and all(e["project"] is None and e["subproject"] is None for e in entries)
    assert {e["workflowItem"]["id"] for e in entries} == {scene.item}
    assert all(e["workflowItem"]["subproject"] is None for e in entries)
    assert bodies["player", ENTRIES]["data"]["project"] is None
    owners = [e["node"] for e in bodies["owner", ENTRIES]["data"]["project"]["history"]["edges"]]
    assert any(e["workflowItem"] is None and e["subproject"] is None for e in owners)  # the project's own
    assert all(e["project"] == {"id": scene.project} for e in owners)
    assert bodies["stranger", BOARD]["data"]["node"] is None
    viewer = bodies["viewer", BOARD]["data"]["node"]["workflowItems"]["edges"]
    assert {e["node"]["subproject"]["id"] for e in viewer} == {scene.subproject}
    for actor in ("owner", "player"):
        for document, variables in documents:
            await _one_statement(gql, count_statements, document, variables, scene.tokens[actor])


async def test_a_validator_is_its_party_or_null(gql, db, actors, same, count_statements):
    """A subproject's validator: a user, a group, none, or an id no party has (gone)."""
    scene = await reads._ordered_scene(gql, db, actors)
    expected = {
        actors["owner"]: {"__typename": "User", "id": actors["owner"], "login": "owner"},
        scene.group: {"__typename": "Group", "id": scene.group},
        None: None,
        "": None,
        "usr_01ZZZZZZZZZZZZZZZZZZZZZZZZ": None,
        "grp_gone": None,
    }
    for validator, shown in expected.items():
        async with db.transaction() as s:
            await s.execute(update(Subproject).where(Subproject.id == scene.subproject).values(validator_id=validator))
        for actor in ACTORS:
            body = await same(VALIDATOR, {"s": scene.subproject}, scene.tokens[actor])
            if actor == "owner":
                found = body["data"]["node"]["validator"]
                assert (found if found is None else {k: v for k, v in found.items() if k != "name"}) == shown
                cards = body["data"]["node"]["workflowItems"]["edges"]
                assert {str(e["node"]["subproject"]["validator"]) for e in cards} == {str(found)}
        await _one_statement(gql, count_statements, VALIDATOR, {"s": scene.subproject}, scene.tokens["owner"])
