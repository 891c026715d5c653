"""The GraphQL documents of the read scenarios, for Caseway and for the PostGraphile peer."""

R1 = """query R1($id: ID!) { node(id: $id) { ... on Project { displayName
  subprojects(first: 10) { edges { node { displayName
    workflowItems(first: 20) { edges { node { id displayName
      case { state { shortName } enabledActions { action { shortName } }
        roles { role { shortName } assignees { ... on User { login } } } } } } } } } } } } }"""

# PostGraphile over the same tables: the same tree. Role assignees stay party ids there
# (case_role_party.party_id may name a user or a group, so it has no foreign key to follow).
R1_POSTGRAPHILE = """query R1($id: String!) { projectById(id: $id) { displayName
  subprojectsByProjectId(first: 10) { nodes { displayName
    workflowItemsBySubprojectId(first: 20) { nodes { id displayName
      workflowCaseByObjectId { caseStatesByCaseId { nodes { state } }
        enabledActionsByCaseId(condition: {status: "ENABLED"}) { nodes { action } }
        caseRolePartiesByCaseId { nodes { role partyId } } } } } } } } }"""

R2 = """query R2($id: ID!, $after: String) { node(id: $id) { ... on Project {
  subprojects(first: 5, after: $after) { pageInfo { endCursor hasNextPage } edges { node { displayName
    workflowItems(first: 20) { edges { cursor node { id displayName status amount
      case { state { shortName } } } } } } } } } } }"""

R3 = "{ __typename }"

# A page of the largest subproject, from its start and from its middle: what a page costs
# when a subproject holds 20,000 items (the `wide` data), not 20.
R4 = """query R4($s: ID!, $after: String) { node(id: $s) { ... on Subproject {
  workflowItems(first: 20, after: $after) { totalCount pageInfo { endCursor hasNextPage }
    edges { node { id displayName status case { state { shortName } } } } } } } }"""

W1 = """mutation W1($item: ID!) { executeAction(input: {workflowItemId: $item, action: "comment",
  comment: "bench"}) { case { version } userErrors { code } } }"""


def bodies(data: dict) -> dict[str, list[dict]]:
    """The request bodies of each scenario over ``bench.seed.driver_data``; a driver cycles
    through a scenario's list. ``PEER`` is R1 for PostGraphile."""
    projects, first = data["projects"], data["projects"][0]
    return {
        "R1": [{"query": R1, "variables": {"id": first}}],
        "R2": [
            {"query": R2, "variables": {"id": p, "after": after}}
            for p in projects
            for after in (None, data["fifth"][p])
        ],
        "R3": [{"query": R3}],
        "R4": [
            {"query": R4, "variables": {"s": data["widest"]["subproject"], "after": after}}
            for after in (None, data["widest"]["middle"])
        ],
        "W1": [{"query": W1, "variables": {"item": i}} for i in data["items"]],
        "PEER": [{"query": R1_POSTGRAPHILE, "variables": {"id": first}}],
    }
