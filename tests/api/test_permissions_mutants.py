"""The last-grant-holder rule counts the holders of *this* intent on *this* resource
(engine/permissions.py revoke): a party holding another intent here, or this intent on another
resource, does not let the last granter give it up. Written for mutants that survived
`make mutants` (bench/MUTANTS.md)."""

from tests.fixtures.documents import CREATE_PROJECT, GRANT, REVOKE

GRANTER = "project.intent.grantPermission"
GRANTERS = """query($id: ID!) { node(id: $id) { ... on Project {
  permissions { intent parties { ... on User { login } } } } } }"""


async def test_the_last_granter_of_a_project_keeps_the_intent_whoever_holds_others(gql, make_user):
    alice_id, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    mine = (await gql(CREATE_PROJECT, {"input": {"displayName": "Alice's"}}, token=alice))["createProject"]
    project = mine["project"]["id"]
    # bob may view alice's project, and grants on a project of his own: neither is a granter here
    assert (await gql(GRANT, {"r": project, "i": "project.view", "p": bob_id}, token=alice))["grantPermission"][
        "userErrors"
    ] == []
    await gql(CREATE_PROJECT, {"input": {"displayName": "Bob's"}}, token=bob)

    refused = (await gql(REVOKE, {"r": project, "i": GRANTER, "p": alice_id}, token=alice))["revokePermission"]
    assert [e["code"] for e in refused["userErrors"]] == ["LAST_GRANT_HOLDER"]
    permissions = (await gql(GRANTERS, {"id": project}, token=alice))["node"]["permissions"]
    holders = {p["intent"]: sorted(party["login"] for party in p["parties"]) for p in permissions}
    assert holders[GRANTER] == ["alice"]
    assert holders["project.view"] == ["alice", "bob"]
