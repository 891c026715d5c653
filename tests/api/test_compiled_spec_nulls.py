"""A stored workflow spec may hold null where its parser reads "not given" (engine/spec/specs.py:
``pretty_name: null`` is the short name, ``allowed_roles: null`` none, ``states: {a: null}`` a
state with every default, an output whose state is null is left out, a resolution's null pretty
name is its code). The compiled reads (resolvers/compiled/workflows.py, actions.py, forms.py's
roles) read those specs from the database: they must answer what the resolvers answer, which
read the parsed model, on both databases (PostgreSQL's ``json_each`` refuses a null; SQLite's
gives it a row)."""

from tests.api import test_authorization_matrix as matrix
from tests.fixtures.authorization import Scene
from tests.fixtures.documents import CREATE_ITEM, CREATE_SUBPROJECT, DEFINE

actors = matrix.actors  # the matrix's users (a fixture), one per actor

READ = """query($id: ID!) { node(id: $id) { ... on WorkflowItem { case {
  state { shortName prettyName terminal hiddenFields }
  roles { role { shortName prettyName } assignees { __typename } }
  enabledActions { id action { shortName prettyName prettyPastTense trigger assignedRole allowedRoles privileges
    enabledStates assignedStates attachDocuments alwaysEnabled timeoutSeconds newState
    outputs { name newState } resolutions { code prettyName } } }
  workflow { prettyName states { shortName prettyName terminal hiddenFields } roles { shortName prettyName }
    actions { shortName prettyName allowedRoles outputs { name newState } resolutions { code prettyName } } } } } } }"""


def spec(name: str) -> dict:
    """Null wherever the parser takes it for "not given"."""
    return {
        "short_name": name,
        "pretty_name": None,
        "description": None,
        "roles": {"r": None, "s": {"pretty_name": None, "callbacks": None, "allowed_parties": None}},
        "states": {
            "a": None,
            "b": {"pretty_name": None, "hidden_fields": None, "terminal": None},
            "c": {"terminal": True},
        },
        "actions": {
            "go": {
                "enabled_states": ["a"],
                "allowed_roles": None,
                "privileges": None,
                "pretty_name": None,
                "pretty_past_tense": None,
                "assigned_states": None,
                "side_effects": None,
                "depends_on": None,
                "outputs": {"left": None, "right": "b", "done": "c"},
                "resolutions": {"fixed": None, "wontfix": "Won't fix"},
            },
            "note": {"enabled_states": ["a"], "outputs": None, "resolutions": None, "allowed_roles": ["s"]},
            "finish": {"enabled_states": ["b"], "new_state": "c"},
        },
    }


async def test_a_spec_that_holds_nulls_reads_the_same_on_both_roads(gql, db, actors, same, count_statements):
    scene = await matrix.build_scene(gql, db, actors)
    admin, owner = scene.tokens["admin"], scene.tokens["owner"]
    name = Scene.unique("nulls")
    defined = await gql(DEFINE, {"spec": spec(name)}, token=admin)
    assert defined["defineWorkflow"]["userErrors"] == [], defined
    assert defined["defineWorkflow"]["workflow"]["spec"]["roles"]["r"] is None  # stored as given
    made = await gql(
        CREATE_SUBPROJECT,
        {"input": {"projectId": scene.project, "displayName": "N", "currency": "EUR", "workflow": name}},
        token=owner,
    )
    subproject = made["createSubproject"]["subproject"]["id"]
    item = await gql(CREATE_ITEM, {"input": {"subprojectId": subproject, "displayName": "n"}}, token=owner)
    item_id = item["createWorkflowItem"]["workflowItem"]["id"]
    body = await same(READ, {"id": item_id}, owner)
    case = body["data"]["node"]["case"]
    assert case["state"] == {"shortName": "a", "prettyName": "a", "terminal": False, "hiddenFields": []}
    assert [r["role"] for r in case["roles"]] == [
        {"shortName": "r", "prettyName": "r"},
        {"shortName": "s", "prettyName": "s"},
    ]
    go = next(ea["action"] for ea in case["enabledActions"] if ea["action"]["shortName"] == "go")
    assert go["outputs"] == [{"name": "right", "newState": "b"}, {"name": "done", "newState": "c"}]
    assert go["resolutions"] == [
        {"code": "fixed", "prettyName": "fixed"},
        {"code": "wontfix", "prettyName": "Won't fix"},
    ]
    assert (go["prettyName"], go["prettyPastTense"], go["allowedRoles"], go["privileges"]) == ("go", "go", [], [])
    assert [s["shortName"] for s in case["workflow"]["states"]] == ["a", "b", "c"]
    with count_statements() as counted:
        await gql.raw(READ, {"id": item_id}, token=owner)
    assert counted.count == 1, counted.statements  # compiled: the spec's nulls are read in SQL
