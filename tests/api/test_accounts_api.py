"""What an admin changes on an existing account, and a subproject's validator (issue 50 point 5),
through GraphQL: ``updateUser`` (names), ``resetPassword`` (sessions end, API tokens stay),
``User.globalIntents`` (who may read it; one statement for a page of users) and
``setSubprojectValidator`` (whom new cases' validator roles go to). Each refusal changes
nothing."""

from tests.fixtures.documents import (
    CASE,
    CREATE_API_TOKEN,
    CREATE_ITEM,
    CREATE_PROJECT,
    CREATE_SUBPROJECT,
    CREATE_USER,
    GRANT,
    LOGIN,
    VIEWER,
)

UPDATE_USER = """mutation($input: UpdateUserInput!) {
  updateUser(input: $input) { user { id login displayName organization } userErrors { code message field } } }"""
RESET_PASSWORD = """mutation($u: ID!, $p: String!) {
  resetPassword(input: {userId: $u, password: $p}) { user { login } userErrors { code message field } } }"""
USER_NAMES = """query($id: ID!) { node(id: $id) { ... on User { login displayName organization globalIntents } } }"""
USERS_INTENTS = """{ users(first: 50) { edges { node { login globalIntents } } } }"""
SET_VALIDATOR = """mutation($id: ID!, $v: ID) {
  setSubprojectValidator(input: {id: $id, validatorId: $v}) {
    subproject { validator { ... on User { login } ... on Group { name } } } userErrors { code message field } } }"""
SUBPROJECT_VALIDATOR = """query($id: ID!) { node(id: $id) { ... on Subproject {
  validator { ... on User { login } ... on Group { name } } history(first: 50) { edges { node { kind data } } } } } }"""

ONLY_ADMINS = "Only an admin may edit users."


def errors(payload: dict) -> list[tuple[str, str, list[str] | None]]:
    return [(e["code"], e["message"], e["field"]) for e in payload["userErrors"]]


async def test_an_admin_edits_a_users_names_and_nobody_else_may(gql, make_user):
    _, admin = await make_user("root", admin=True)
    alice_id, alice = await make_user("alice")
    _, bob = await make_user("bob")
    done = (
        await gql(
            UPDATE_USER,
            {"input": {"userId": alice_id, "displayName": "  Alice Adams ", "organization": "Acme"}},
            token=admin,
        )
    )["updateUser"]
    assert errors(done) == []
    assert done["user"] == {"id": alice_id, "login": "alice", "displayName": "Alice Adams", "organization": "Acme"}
    # others read the new name; a field left out keeps its value
    assert (await gql(USER_NAMES, {"id": alice_id}, token=bob))["node"]["displayName"] == "Alice Adams"
    kept = (await gql(UPDATE_USER, {"input": {"userId": alice_id, "organization": None}}, token=admin))["updateUser"]
    assert (kept["user"]["displayName"], kept["user"]["organization"]) == ("Alice Adams", "")

    refused = [
        ({"userId": alice_id, "displayName": "Mallory"}, bob, ("NOT_ALLOWED", "Only an admin may edit users.", None)),
        (
            {"userId": alice_id, "displayName": "Alice Again"},
            alice,
            ("NOT_ALLOWED", "Only an admin may edit users.", None),
        ),
        (
            {"userId": alice_id, "displayName": "   "},
            admin,
            ("INVALID_INPUT", "displayName must not be empty.", ["displayName"]),
        ),
        (
            {"userId": alice_id, "displayName": "Ok", "organization": "o" * 201},
            admin,
            ("INVALID_INPUT", "organization is longer than 200 characters.", ["organization"]),
        ),
        (
            {"userId": "usr_nobody", "displayName": "X"},
            admin,
            ("NOT_FOUND", "No user with id 'usr_nobody' exists.", ["userId"]),
        ),
        (
            {"userId": "prj_1", "displayName": "X"},
            admin,
            ("NOT_FOUND", "No user with id 'prj_1' exists.", ["userId"]),
        ),
    ]
    for given, token, error in refused:
        answer = (await gql(UPDATE_USER, {"input": given}, token=token))["updateUser"]
        assert (answer["user"], errors(answer)) == (None, [error]), given
    # nothing changed by any refusal (the organization refusal came with a valid display name)
    assert (await gql(USER_NAMES, {"id": alice_id}, token=admin))["node"] == {
        "login": "alice",
        "displayName": "Alice Adams",
        "organization": "",
        "globalIntents": ["global.createProject"],
    }


async def test_a_reset_password_signs_in_and_ends_the_old_sessions_but_not_api_tokens(gql, make_user):
    _, admin = await make_user("root", admin=True)
    alice_id, alice_session = await make_user("alice")
    _, bob = await make_user("bob")
    made = (
        await gql(CREATE_API_TOKEN, {"input": {"userId": alice_id, "name": "sync", "scopes": ["READ"]}}, token=admin)
    )["createApiToken"]
    api_token = made["token"]

    for token, password, error in [
        (bob, "a-long-new-one", ("NOT_ALLOWED", "Only an admin may reset passwords.", None)),
        (admin, "short", ("INVALID_INPUT", "A password has at least 8 and at most 200 characters.", ["password"])),
        (admin, "p" * 201, ("INVALID_INPUT", "A password has at least 8 and at most 200 characters.", ["password"])),
    ]:
        answer = (await gql(RESET_PASSWORD, {"u": alice_id, "p": password}, token=token))["resetPassword"]
        assert errors(answer) == [error]
    # refused: her session still works, her old password still signs in
    assert (await gql(VIEWER, token=alice_session))["viewer"]["login"] == "alice"

    done = (await gql(RESET_PASSWORD, {"u": alice_id, "p": "brand-new-secret"}, token=admin))["resetPassword"]
    assert errors(done) == [] and done["user"]["login"] == "alice"
    ended = await gql.raw(VIEWER, token=alice_session)
    assert ended["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert (await gql(VIEWER, token=api_token))["viewer"]["login"] == "alice"  # an integration goes on
    old = (await gql(LOGIN, {"login": "alice", "password": "password123"}))["login"]
    assert old["token"] is None and old["userErrors"][0]["code"] == "INVALID_CREDENTIALS"
    new = (await gql(LOGIN, {"login": "alice", "password": "brand-new-secret"}))["login"]
    assert new["token"] and new["user"]["login"] == "alice"


async def test_a_service_user_has_no_password_to_reset(gql, make_user):
    _, admin = await make_user("root", admin=True)
    bot = (await gql(CREATE_USER, {"input": {"login": "ci-bot", "kind": "SERVICE"}}, token=admin))["createUser"]
    answer = (await gql(RESET_PASSWORD, {"u": bot["user"]["id"], "p": "whatever-long"}, token=admin))["resetPassword"]
    assert errors(answer) == [("INVALID_INPUT", "A service user has no password: it uses API tokens.", ["userId"])]


async def test_a_login_is_letters_digits_and_the_signs_of_an_address(gql, make_user):
    _, admin = await make_user("root", admin=True)
    for login in ("bad name!", "two  spaces", "a/b", ""):
        answer = (await gql(CREATE_USER, {"input": {"login": login, "password": "long-enough"}}, token=admin))[
            "createUser"
        ]
        assert answer["user"] is None
        assert errors(answer) == [
            (
                "INVALID_INPUT",
                "A login is 1 to 64 letters, digits and the signs . _ - @ + (no spaces or other signs).",
                ["login"],
            )
        ]
    ok = await gql(CREATE_USER, {"input": {"login": "zoë.o-b_c+1@x.org", "password": "long-enough"}}, token=admin)
    assert errors(ok["createUser"]) == []


async def test_global_intents_are_read_by_the_user_and_admins_in_one_statement(gql, make_user, count_statements):
    _, admin = await make_user("root", admin=True)
    alice_id, alice = await make_user("alice")
    _, bob = await make_user("bob")
    granted = (await gql(GRANT, {"r": "global", "i": "global.defineWorkflow", "p": alice_id}, token=admin))[
        "grantPermission"
    ]
    assert granted["userErrors"] == []
    wanted = ["global.createProject", "global.defineWorkflow"]
    assert (await gql(USER_NAMES, {"id": alice_id}, token=alice))["node"]["globalIntents"] == wanted
    assert (await gql(USER_NAMES, {"id": alice_id}, token=admin))["node"]["globalIntents"] == wanted
    assert (await gql(USER_NAMES, {"id": alice_id}, token=bob))["node"]["globalIntents"] is None
    # a page of users reads every user's global intents in one statement, however many users
    with count_statements() as few:
        listed = (await gql(USERS_INTENTS, token=admin))["users"]["edges"]
    assert {e["node"]["login"]: e["node"]["globalIntents"] for e in listed}["alice"] == wanted
    for n in range(4):
        await make_user(f"extra{n}")
    with count_statements() as more:
        assert len((await gql(USERS_INTENTS, token=admin))["users"]["edges"]) == len(listed) + 4
    assert more.count == few.count


async def _approval_subproject(gql, token: str) -> str:
    project = (await gql(CREATE_PROJECT, {"input": {"displayName": "Office"}}, token=token))["createProject"]
    sub = (
        await gql(
            CREATE_SUBPROJECT,
            {
                "input": {
                    "projectId": project["project"]["id"],
                    "displayName": "Purchases",
                    "currency": "EUR",
                    "workflow": "approval",
                }
            },
            token=token,
        )
    )["createSubproject"]
    assert sub["userErrors"] == []
    return sub["subproject"]["id"]


async def _reviewers(gql, token: str, sub_id: str, name: str) -> list[str]:
    made = await gql(CREATE_ITEM, {"input": {"subprojectId": sub_id, "displayName": name}}, token=token)
    item = made["createWorkflowItem"]["workflowItem"]
    roles = (await gql(CASE, {"id": item["id"]}, token=token))["node"]["case"]["roles"]
    return next(sorted(a["login"] for a in r["assignees"]) for r in roles if r["role"]["shortName"] == "reviewer")


async def test_a_subprojects_validator_is_changed_by_who_may_assign_it_and_new_cases_follow(gql, make_user):
    _, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    carol_id, carol = await make_user("carol")
    sub_id = await _approval_subproject(gql, alice)
    assert await _reviewers(gql, alice, sub_id, "Before") == ["alice"]  # no validator: the assignee

    set_bob = (await gql(SET_VALIDATOR, {"id": sub_id, "v": bob_id}, token=alice))["setSubprojectValidator"]
    assert errors(set_bob) == [] and set_bob["subproject"]["validator"] == {"login": "bob"}
    assert await _reviewers(gql, alice, sub_id, "Chairs") == ["bob"]

    # refusals change nothing: someone without subproject.assign, a party that does not exist
    granted = (await gql(GRANT, {"r": sub_id, "i": "subproject.view", "p": carol_id}, token=alice))["grantPermission"]
    assert granted["userErrors"] == []
    for token, validator, code, field in [
        (bob, carol_id, "NOT_FOUND", None),  # bob may not even see it: hidden reads as missing
        (carol, carol_id, "NOT_ALLOWED", None),  # carol sees it, but may not assign
        (alice, "usr_nobody", "NOT_FOUND", ["validatorId"]),
        (alice, "prj_x", "NOT_FOUND", ["validatorId"]),
    ]:
        answer = (await gql(SET_VALIDATOR, {"id": sub_id, "v": validator}, token=token))["setSubprojectValidator"]
        assert answer["subproject"] is None and [e["code"] for e in answer["userErrors"]] == [code]
        if field:
            assert answer["userErrors"][0]["field"] == field
    read = (await gql(SUBPROJECT_VALIDATOR, {"id": sub_id}, token=alice))["node"]
    assert read["validator"] == {"login": "bob"}
    edits = [e["node"]["data"] for e in read["history"]["edges"] if e["node"]["kind"] == "subproject_updated"]
    assert edits == [{"validatorId": bob_id}]  # the change is in the history, the refusals are not

    cleared = (await gql(SET_VALIDATOR, {"id": sub_id, "v": None}, token=alice))["setSubprojectValidator"]
    assert errors(cleared) == [] and cleared["subproject"]["validator"] is None
    assert await _reviewers(gql, alice, sub_id, "After") == ["alice"]
