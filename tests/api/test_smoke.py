import pytest

VIEWER_AND_PROJECTS = "{ viewer { login } projects { totalCount } }"

# Every query here is also answered without compiled reads, the same (tests/fixtures/api.py).
pytestmark = pytest.mark.usefixtures("differential_reads")


async def test_viewer(gql, make_user):
    _, token = await make_user("alice")
    data = await gql(VIEWER_AND_PROJECTS, token=token)
    assert data == {"viewer": {"login": "alice"}, "projects": {"totalCount": 0}}


async def test_users_and_workflows_page_by_cursor(gql, make_user):
    _, token = await make_user("alice")
    for login in ("bob", "carol"):
        await make_user(login)
    first = (
        await gql(
            "{ users(first: 2) { totalCount edges { node { login } } pageInfo { hasNextPage endCursor } } }",
            token=token,
        )
    )["users"]
    assert first["totalCount"] == 3 and first["pageInfo"]["hasNextPage"]
    rest = (
        await gql(
            "query($a: String) { users(first: 2, after: $a) { edges { node { login } } } }",
            {"a": first["pageInfo"]["endCursor"]},
            token=token,
        )
    )["users"]
    logins = [e["node"]["login"] for e in first["edges"] + rest["edges"]]
    assert sorted(logins) == ["alice", "bob", "carol"]
    workflows = (await gql("{ workflows { totalCount } }", token=token))["workflows"]
    assert workflows["totalCount"] == 6  # simple, bug, approval, and joint_review, tip, inquiry (child workflows)
