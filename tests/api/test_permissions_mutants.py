"""The last-grant-holder rule counts the holders of *this* intent on *this* resource
(engine/people/permissions.py revoke): a party holding another intent here, or this intent on another
resource, does not let the last granter give it up. Written for mutants that survived
`make mutants` (bench/MUTANTS.md)."""

from tests.fixtures.documents import CREATE_PROJECT, GRANT, REVOKE

GRANTER = "project.intent.grantPermission"
GRANTER_LOGINS = """query($id: ID!) { node(id: $id) { ... on Project {
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
    permissions = (await gql(GRANTER_LOGINS, {"id": project}, token=alice))["node"]["permissions"]
    holders = {p["intent"]: sorted(party["login"] for party in p["parties"]) for p in permissions}
    assert holders[GRANTER] == ["alice"]
    assert holders["project.view"] == ["alice", "bob"]


REVOKE_WITH_FIELD = """mutation($r: ID!, $i: String!, $p: ID!) {
  revokePermission(input: {resourceId: $r, intent: $i, partyId: $p}) { userErrors { code message field } } }"""
HISTORY_KINDS = """query($id: ID!) { node(id: $id) { ... on Project {
  history(first: 100) { edges { node { kind data } } } } } }"""
VIEWABLE = "{ projects { edges { node { displayName } } } }"


async def test_the_last_granter_is_told_why_and_which_field(gql, make_user):
    alice_id, alice = await make_user("alice")
    project = (await gql(CREATE_PROJECT, {"input": {"displayName": "P"}}, token=alice))["createProject"]["project"]
    refused = await gql(REVOKE_WITH_FIELD, {"r": project["id"], "i": GRANTER, "p": alice_id}, token=alice)
    assert refused["revokePermission"]["userErrors"] == [
        {
            "code": "LAST_GRANT_HOLDER",
            "message": "This is the last party that may grant permissions here; grant another one first.",
            "field": ["partyId"],
        }
    ]


async def test_a_revocation_takes_the_grant_on_that_resource_only_and_is_logged_once(gql, make_user):
    _, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    ids = {}
    for name in ("North", "South"):
        created = await gql(CREATE_PROJECT, {"input": {"displayName": name}}, token=alice)
        ids[name] = created["createProject"]["project"]["id"]
        await gql(GRANT, {"r": ids[name], "i": "project.view", "p": bob_id}, token=alice)

    revoked = await gql(REVOKE, {"r": ids["North"], "i": "project.view", "p": bob_id}, token=alice)
    assert revoked["revokePermission"]["userErrors"] == []
    seen = [e["node"]["displayName"] for e in (await gql(VIEWABLE, token=bob))["projects"]["edges"]]
    assert seen == ["South"]

    async def logged(name):
        edges = (await gql(HISTORY_KINDS, {"id": ids[name]}, token=alice))["node"]["history"]["edges"]
        return [e["node"]["kind"] for e in edges if e["node"]["kind"].startswith("permission_")]

    assert await logged("North") == ["permission_granted", "permission_revoked"]
    assert await logged("South") == ["permission_granted"]
    again = await gql(REVOKE, {"r": ids["North"], "i": "project.view", "p": bob_id}, token=alice)
    assert again["revokePermission"]["userErrors"] == []  # not held: changes nothing, logs nothing
    assert await logged("North") == ["permission_granted", "permission_revoked"]


async def test_a_resource_s_grants_are_listed_by_intent_then_party(gql, make_user):
    """The same order whatever order the grants were made in (PostgreSQL returns rows in the
    order they were written unless told otherwise)."""
    _, alice = await make_user("alice")
    bob_id, _ = await make_user("bob")
    carol_id, _ = await make_user("carol")
    project = (await gql(CREATE_PROJECT, {"input": {"displayName": "P"}}, token=alice))["createProject"]["project"]
    for intent, party in (("project.view", carol_id), ("project.view", bob_id), ("project.close", carol_id)):
        assert (await gql(GRANT, {"r": project["id"], "i": intent, "p": party}, token=alice))["grantPermission"][
            "userErrors"
        ] == []
    permissions = (await gql(GRANTER_LOGINS, {"id": project["id"]}, token=alice))["node"]["permissions"]
    intents = [p["intent"] for p in permissions]
    assert intents == sorted(intents) and len(intents) > 2
    parties = {p["intent"]: [party["login"] for party in p["parties"]] for p in permissions}
    assert parties["project.view"] == ["alice", "bob", "carol"]
    assert parties["project.close"] == ["alice", "carol"]
