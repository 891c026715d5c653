"""``Workflow.retiredAt`` (issue 37): when a version was retired, never a stale value. The
loaders keep workflow rows for the life of the process, so a retirement committed elsewhere (by
another process, here a transaction outside the API) must show at the next request all the same,
on the versions listed, on a case's and a subproject's version, and in retireWorkflow's payload."""

from datetime import UTC, datetime

from engine.spec import versions
from tests.fixtures.builders import build_tree
from tests.fixtures.documents import CREATE_ITEM, DEFINE
from tests.fixtures.versions import PERMIT_V1, permit_v2

VERSIONS = """query($item: ID!) {
  workflows(first: 100) { edges { node { shortName version retiredAt } } }
  node(id: $item) { ... on WorkflowItem { case { workflow { version retiredAt } } } } }"""

SUBPROJECT_VERSION_RETIRED_AT = (
    """query($id: ID!) { node(id: $id) { ... on Subproject { workflow { version retiredAt } } } }"""
)

RETIRE = """mutation($input: RetireWorkflowInput!) { retireWorkflow(input: $input) {
  workflow { version retiredAt } userErrors { code } } }"""

AT = datetime(2026, 11, 26, 9, 30, tzinfo=UTC)


async def shown(gql, token, item):
    data = await gql(VERSIONS, {"item": item}, token=token)
    listed = {
        e["node"]["version"]: e["node"]["retiredAt"]
        for e in data["workflows"]["edges"]
        if e["node"]["shortName"] == "permit"
    }
    return listed, data["node"]["case"]["workflow"]


async def test_retired_at_shows_a_retirement_committed_elsewhere_at_the_next_request(gql, db, make_user, make_actor):
    _, admin = await make_user("root", admin=True)
    assert (await gql(DEFINE, {"spec": PERMIT_V1}, token=admin))["defineWorkflow"]["userErrors"] == []
    _, sub, _ = await build_tree(gql, admin, items=0, workflow="permit")
    assert (await gql(DEFINE, {"spec": permit_v2()}, token=admin))["defineWorkflow"]["userErrors"] == []
    made = await gql(CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": "P"}}, token=admin)
    item = made["createWorkflowItem"]["workflowItem"]["id"]
    # Read once: the process now keeps the version rows.
    assert await shown(gql, admin, item) == ({1: None, 2: None}, {"version": 1, "retiredAt": None})
    other_process = await make_actor("elsewhere", admin=True)
    async with db.transaction() as s:
        await versions.retire_workflow(s, actor=other_process, workflow="permit", version=1, now=AT)
    retired = "2026-11-26T09:30:00+00:00"
    assert await shown(gql, admin, item) == ({1: retired, 2: None}, {"version": 1, "retiredAt": retired})
    on_subproject = await gql(SUBPROJECT_VERSION_RETIRED_AT, {"id": sub["id"]}, token=admin)
    assert on_subproject["node"]["workflow"] == {"version": 1, "retiredAt": retired}
    payload = (await gql(RETIRE, {"input": {"workflow": "permit", "version": 2}}, token=admin))["retireWorkflow"]
    assert payload["userErrors"] == [] and payload["workflow"]["retiredAt"] is not None
    listed, _ = await shown(gql, admin, item)
    assert listed == {1: retired, 2: payload["workflow"]["retiredAt"]}  # the first retirement stays


async def test_retired_at_of_every_version_shown_costs_one_statement(gql, db, make_user, count_statements):
    _, admin = await make_user("root", admin=True)
    for spec in (PERMIT_V1, permit_v2(), permit_v2()):
        assert (await gql(DEFINE, {"spec": spec}, token=admin))["defineWorkflow"]["userErrors"] == []
    without = """{ workflows(first: 100) { edges { node { version } } } }"""
    with_it = """{ workflows(first: 100) { edges { node { version retiredAt } } } }"""
    await gql(with_it, token=admin)
    counts = []
    for document in (without, with_it):
        with count_statements() as counter:
            await gql(document, token=admin)
        counts.append(counter.count)
    assert counts[1] == counts[0] + 1
