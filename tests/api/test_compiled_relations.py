"""Compiled parent pointers, workflows and a case's structure answer what the resolvers answer.

The parent pointers (resolvers/compiled/relations.py) read a row under a fresh alias: these
documents meet the same table twice on one path (an item, its subproject, that subproject's
items; a case, its item, that item's case), for every viewer of the authorization matrix,
among them the player, who sees the items but not their subproject or project.
"""

from datetime import UTC, datetime, timedelta

from sqlalchemy import update

from models import EnabledAction, Subproject
from tests.api import test_authorization_matrix as matrix
from tests.fixtures.authorization import ACTORS
from tests.fixtures.compiled_scene import ordered_scene
from tests.fixtures.documents import CREATE_ITEM, CREATE_SUBPROJECT, DEFINE, EXECUTE

actors = matrix.actors  # the matrix's users (a fixture), one per actor

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

ENTRIES_AND_THEIR_RESOURCES = """query Entries($i: ID!, $p: ID!) {
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
    scene = await ordered_scene(gql, db, actors)
    documents = [
        (BOARD, {"s": scene.subproject}),
        (ITEM_UP_AND_DOWN, {"i": scene.item}),
        (CASE_ITEM_CASE, {"i": scene.item}),
        (ENTRIES_AND_THEIR_RESOURCES, {"i": scene.item, "p": scene.project}),
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
    entries = [e["node"] for e in bodies["player", ENTRIES_AND_THEIR_RESOURCES]["data"]["item"]["case"]["log"]["edges"]]
    assert entries and all(e["project"] is None and e["subproject"] is None for e in entries)
    assert {e["workflowItem"]["id"] for e in entries} == {scene.item}
    assert all(e["workflowItem"]["subproject"] is None for e in entries)
    assert bodies["player", ENTRIES_AND_THEIR_RESOURCES]["data"]["project"] is None
    owners = [e["node"] for e in bodies["owner", ENTRIES_AND_THEIR_RESOURCES]["data"]["project"]["history"]["edges"]]
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
    scene = await ordered_scene(gql, db, actors)
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


# -- workflows and a case's scopes -------------------------------------------------------------

# Review & Opinion (tests/fixtures/child_workflows.py) made harder to walk: the top scope's
# actions before its states, a child workflow's children before its states, a grandchild
# workflow, pretty names, hidden fields, and a role nobody plays.
NESTED_SPEC = {
    "short_name": "rel_nest",
    "pretty_name": "Nested «review»",
    "roles": {"lawyer": {"callbacks": ["creation_user"], "pretty_name": "Lawyer ⚖"}, "clerk": {}},
    "actions": {
        "init": {"trigger": "init", "new_state": "open"},
        "rev_and_op": {
            "trigger": "parallel",
            "enabled_states": ["open"],
            "new_state": "done",
            "children": {
                "review_wr": {
                    "trigger": "workflow",
                    "children": {
                        "rev_init": {"trigger": "init", "new_state": "rev_open"},
                        "review": {"assigned_role": "lawyer", "assigned_states": ["rev_open"], "new_state": "rev_done"},
                        "deep_wr": {
                            "trigger": "workflow",
                            "enabled_states": ["rev_open"],
                            "new_state": "rev_done",
                            "states": {"deep_open": {"hidden_fields": ["amount"]}, "deep_done": {"terminal": True}},
                            "children": {
                                "deep_init": {"trigger": "init", "new_state": "deep_open"},
                                "deep": {"enabled_states": ["deep_open"], "new_state": "deep_done"},
                            },
                        },
                    },
                    "states": {"rev_open": {"pretty_name": "Under review"}, "rev_done": {"terminal": True}},
                },
                "opinion_wr": {
                    "trigger": "workflow",
                    "states": {"opi_open": {}, "opi_done": {"terminal": True, "pretty_name": "Opined"}},
                    "children": {
                        "opi_init": {"trigger": "init", "new_state": "opi_open"},
                        "opinion": {
                            "assigned_role": "lawyer",
                            "assigned_states": ["opi_open"],
                            "new_state": "opi_done",
                        },
                    },
                },
            },
        },
    },
    "states": {
        "open": {"pretty_name": "Open ✓", "hidden_fields": ["amount", "description"]},
        "done": {"terminal": True},
    },
}

STATE = "shortName prettyName terminal hiddenFields"
CASE_STRUCTURE = """query Structure($i: ID!) { node(id: $i) { ... on WorkflowItem { id
  subproject { workflow { id version states { shortName } } }
  case { id status suspendedUntil state { STATE } states { STATE } timers { id }
    scopes { status state { STATE } parent { id action { shortName } } }
    roles { role { shortName prettyName } }
    workflow { id shortName prettyName version roles { shortName prettyName } states { STATE }
      actions { shortName } } } } } }"""
CASE_STRUCTURE = CASE_STRUCTURE.replace("STATE", STATE)
RESUME_CASE = """mutation($i: ID!) { resumeCase(input: {workflowItemId: $i}) { userErrors { code } } }"""
SUSPEND_CASE_UNTIL = """mutation($i: ID!, $u: DateTime) { suspendCase(input: {workflowItemId: $i, until: $u}) {
  userErrors { code } } }"""


async def test_workflows_and_scopes_answer_the_same_for_every_viewer(gql, db, actors, same, count_statements):
    """A case of a workflow with child scopes (running, completed, grandchild), then suspended
    until a time: its states, scopes and their statuses, its workflow's states in the parser's
    order (depth first, whatever the keys' order), roles with their pretty names."""
    scene = await ordered_scene(gql, db, actors)
    owner, admin = scene.tokens["owner"], scene.tokens["admin"]
    defined = await gql(DEFINE, {"spec": NESTED_SPEC}, token=admin)
    assert defined["defineWorkflow"]["userErrors"] == [], defined
    sub_input = {"projectId": scene.project, "displayName": "N", "currency": "EUR", "workflow": "rel_nest"}
    made = await gql(CREATE_SUBPROJECT, {"input": sub_input}, token=owner)
    subproject = made["createSubproject"]["subproject"]["id"]
    fields = {
        "subprojectId": subproject,
        "displayName": "NI",
        "assignments": [{"role": "clerk", "partyIds": [actors["player"]]}],
    }
    created = await gql(CREATE_ITEM, {"input": fields}, token=owner)
    assert created["createWorkflowItem"]["userErrors"] == [], created
    item = created["createWorkflowItem"]["workflowItem"]["id"]
    seen = []
    # the parallel action starts at once (two child scopes, a grandchild one); then the opinion
    # scope completes
    for action in (None, "opinion"):
        if action is not None:
            ran = {"workflowItemId": item, "action": action}
            done = await gql(EXECUTE, {"input": ran}, token=owner)
            assert done["executeAction"]["userErrors"] == [], (action, done)
        for actor in ACTORS:
            body = await same(CASE_STRUCTURE, {"i": item}, scene.tokens[actor])
            assert "errors" not in body, body
            if actor == "owner":
                seen.append(body["data"]["node"]["case"])
        await _one_statement(gql, count_statements, CASE_STRUCTURE, {"i": item}, owner)
    until = (datetime.now(UTC) + timedelta(days=30)).replace(microsecond=0).isoformat()  # a whole second
    suspended = await gql(SUSPEND_CASE_UNTIL, {"i": item, "u": until}, token=owner)
    assert suspended["suspendCase"]["userErrors"] == [], suspended
    for actor in ACTORS:
        body = await same(CASE_STRUCTURE, {"i": item}, scene.tokens[actor])
        if actor in ("owner", "player"):
            seen.append(body["data"]["node"]["case"])
    assert body["data"]["node"]["subproject"] is None  # the player sees the item, not its subproject
    workflow = seen[0]["workflow"]
    assert workflow["prettyName"] == "Nested «review»"
    assert [s["shortName"] for s in workflow["states"]] == [
        "open",
        "done",
        "rev_open",
        "rev_done",
        "deep_open",
        "deep_done",
        "opi_open",
        "opi_done",
    ]
    assert [a["shortName"] for a in workflow["actions"]] == [  # a scope's actions, then its parents' scopes
        *("init", "rev_and_op", "review_wr", "opinion_wr", "rev_init", "review", "deep_wr"),
        *("deep_init", "deep", "opi_init", "opinion"),
    ]
    assert workflow["states"][0] == {
        "shortName": "open",
        "prettyName": "Open ✓",
        "terminal": False,
        "hiddenFields": ["amount", "description"],
    }
    assert workflow["roles"] == [
        {"shortName": "lawyer", "prettyName": "Lawyer ⚖"},
        {"shortName": "clerk", "prettyName": "clerk"},
    ]
    assert [r["role"]["prettyName"] for r in seen[0]["roles"]] == ["Lawyer ⚖", "clerk"]
    assert seen[0]["suspendedUntil"] is None and seen[-1]["suspendedUntil"] == until
    last = seen[-2]  # the owner's, after the opinion, before the suspension
    assert sorted(s["state"]["shortName"] for s in last["scopes"]) == ["deep_open", "open", "opi_done", "rev_open"]
    assert {s["state"]["shortName"]: s["status"] for s in last["scopes"]}["opi_done"] == "COMPLETED"
    assert "opi_done" not in [s["shortName"] for s in last["states"]] and last["states"][0]["shortName"] == "open"
    assert {s["status"] for s in seen[-1]["scopes"] if s["parent"]} >= {"SUSPENDED"}
    assert seen[-1]["scopes"][0] == {"status": "SUSPENDED", "state": last["state"], "parent": None}
    # resumed, the review done: the grandchild scope is canceled, the parallel fires, the case completes
    resumed = await gql(RESUME_CASE, {"i": item}, token=owner)
    assert resumed["resumeCase"]["userErrors"] == [], resumed
    done = await gql(EXECUTE, {"input": {"workflowItemId": item, "action": "review"}}, token=owner)
    assert done["executeAction"]["userErrors"] == [], done
    for actor in ACTORS:
        body = await same(CASE_STRUCTURE, {"i": item}, scene.tokens[actor])
        if actor == "owner":
            finished = body["data"]["node"]["case"]
    statuses = {s["state"]["shortName"]: s["status"] for s in finished["scopes"]}
    assert statuses == {"done": "COMPLETED", "rev_done": "COMPLETED", "deep_open": "CANCELED", "opi_done": "COMPLETED"}
    assert [s["shortName"] for s in finished["states"]] == ["done"]
    # an owner still ENABLED while its scope is in a terminal state (a DYNAMIC parent waiting for
    # its quorum): the scope is COMPLETED, and it is running (states lists it)
    review = next(s["parent"]["id"] for s in finished["scopes"] if s["state"]["shortName"] == "rev_done")
    async with db.transaction() as session:
        await session.execute(update(EnabledAction).where(EnabledAction.id == review).values(status="ENABLED"))
    for actor in ACTORS:
        body = await same(CASE_STRUCTURE, {"i": item}, scene.tokens[actor])
        if actor == "owner":
            waiting = body["data"]["node"]["case"]
    assert {s["state"]["shortName"]: s["status"] for s in waiting["scopes"]}["rev_done"] == "COMPLETED"
    assert [s["shortName"] for s in waiting["states"]] == ["done", "rev_done"]
