VIEWER = "{ viewer { login } projects { totalCount } }"


async def test_viewer(gql, make_user):
    _, token = await make_user("alice")
    data = await gql(VIEWER, token=token)
    assert data == {"viewer": {"login": "alice"}, "projects": {"totalCount": 0}}
