"""Who a provider's token signs in as (issue 45 point 2): the user found by (issuer, sub), made
on first sight with the login claim as its login (or refused when creation is off), never a
password user whose login it names (an admin links them with linkIdentity); the groups claim
sets the memberships of the groups marked as the provider's, at each new token, and no other;
a disabled user stays refused."""

import asyncio

import pytest

from tests.fixtures.documents import (
    ADD_MEMBER,
    CREATE_MANAGED_GROUP,
    CREATE_PROJECT,
    GRANT,
    LOGIN,
    SET_DISABLED,
    VIEWER,
    VIEWER_ID,
)

GROUPS = """{ groups(first: 20) { edges { node { name managed members { login } } } } }"""
LINK = """mutation($u: ID!, $issuer: String!, $subject: String!) {
  linkIdentity(input: {userId: $u, issuer: $issuer, subject: $subject}) {
    user { login } userErrors { code message field } } }"""
PROJECTS = "{ projects { totalCount edges { node { displayName } } } }"


async def _members(app, admin: str) -> dict[str, list[str]]:
    data = await app.gql(GROUPS, token=admin)
    return {e["node"]["name"]: sorted(m["login"] for m in e["node"]["members"]) for e in data["groups"]["edges"]}


async def test_first_sight_makes_a_user_and_the_subject_finds_them_again(oidc_app, provider):
    app = await oidc_app()
    first = await app.gql(VIEWER_ID, token=provider.token("sub-ada", name="Ada Lovelace"))
    assert first["viewer"]["login"] == "ada" and first["viewer"]["displayName"] == "Ada Lovelace"
    # The provider renames her: the subject still finds the same user, whose login stays.
    again = await app.gql(VIEWER_ID, token=provider.token("sub-ada", preferred_username="ada.l"))
    assert again["viewer"] == first["viewer"]
    # She has no password here: login with any password fails as for a wrong one.
    login = await app.gql(LOGIN, {"login": "ada", "password": ""}, token="")
    assert login["login"]["token"] is None and login["login"]["userErrors"][0]["code"] == "INVALID_CREDENTIALS"


async def test_a_new_user_may_start_a_project_as_any_new_user(oidc_app, provider):
    app = await oidc_app()
    created = await app.gql(CREATE_PROJECT, {"input": {"displayName": "Roof"}}, token=provider.token("sub-ada"))
    assert created["createProject"]["userErrors"] == []


async def test_no_login_claim_no_new_user(oidc_app, provider):
    app = await oidc_app(login_claim="email")
    assert await app.refusal(provider.token("sub-ada")) == (
        "The token has no email claim to name a new Caseway user by."
    )
    assert (await app.gql(VIEWER, token=provider.token("sub-ada", email="ada@example.com")))["viewer"] == {
        "login": "ada@example.com"
    }


async def test_with_creation_off_only_a_linked_identity_signs_in(oidc_app, provider, make_user):
    app = await oidc_app(create_users=False)
    token = provider.token("sub-ada")
    assert await app.refusal(token) == (
        "No Caseway user is linked to this identity (subject 'sub-ada') and new users are not created "
        "(CASEWAY_OIDC_CREATE_USERS=false): an admin can link one with linkIdentity."
    )
    _, admin = await make_user("root", admin=True)
    user_id, _ = await make_user("ada.lovelace")
    linked = await app.gql(LINK, {"u": user_id, "issuer": provider.url, "subject": "sub-ada"}, token=admin)
    assert linked["linkIdentity"] == {"user": {"login": "ada.lovelace"}, "userErrors": []}
    assert (await app.gql(VIEWER, token=token))["viewer"] == {"login": "ada.lovelace"}


async def test_a_password_users_login_is_never_taken_over(oidc_app, provider, make_user):
    app = await oidc_app()
    ada_id, password_token = await make_user("ada")
    token = provider.token("sub-ada")
    assert await app.refusal(token) == (
        "The login 'ada' belongs to a Caseway user who signs in otherwise; it is never taken over: an admin can link "
        f"them with linkIdentity(input: {{userId, issuer: '{provider.url}', subject: 'sub-ada'}})."
    )
    _, admin = await make_user("root", admin=True)
    linked = await app.gql(LINK, {"u": ada_id, "issuer": provider.url, "subject": "sub-ada"}, token=admin)
    assert linked["linkIdentity"]["userErrors"] == []
    assert (await app.gql(VIEWER_ID, token=token))["viewer"]["id"] == ada_id
    assert (await app.gql(VIEWER_ID, token=password_token))["viewer"]["id"] == ada_id  # her own tokens still work


async def test_link_identity_is_an_admins_and_links_an_identity_once(oidc_app, provider, make_user):
    app = await oidc_app()
    ada_id, ada = await make_user("ada")
    bob_id, _ = await make_user("bob")
    _, admin = await make_user("root", admin=True)
    link = {"u": ada_id, "issuer": provider.url, "subject": "sub-x"}
    assert (await app.gql(LINK, link, token=ada))["linkIdentity"]["userErrors"] == [
        {"code": "NOT_ALLOWED", "message": "Only an admin may link identities.", "field": None}
    ]
    missing = (await app.gql(LINK, {**link, "u": "usr_missing"}, token=admin))["linkIdentity"]["userErrors"]
    assert [e["code"] for e in missing] == ["NOT_FOUND"]
    assert (await app.gql(LINK, link, token=admin))["linkIdentity"]["userErrors"] == []
    assert (await app.gql(LINK, link, token=admin))["linkIdentity"]["userErrors"] == []  # again: nothing changes
    taken = (await app.gql(LINK, {**link, "u": bob_id}, token=admin))["linkIdentity"]["userErrors"]
    assert taken == [
        {"code": "ALREADY_EXISTS", "message": "This identity signs in as 'ada' already.", "field": ["subject"]}
    ]
    blank = (await app.gql(LINK, {**link, "subject": " "}, token=admin))["linkIdentity"]["userErrors"]
    assert [(e["code"], e["field"]) for e in blank] == [("INVALID_INPUT", ["subject"])]


async def test_the_groups_claim_sets_memberships_of_the_providers_groups_only(oidc_app, provider, make_user):
    app = await oidc_app()
    _, admin = await make_user("root", admin=True)
    ids = {}
    for name, managed in (("engineering", "OIDC"), ("finance", "OIDC"), ("auditors", None)):
        created = await app.gql(CREATE_MANAGED_GROUP, {"name": name, "managed": managed}, token=admin)
        assert created["createGroup"]["group"]["managed"] == managed
        ids[name] = created["createGroup"]["group"]["id"]
    project = await app.gql(CREATE_PROJECT, {"input": {"displayName": "Payroll"}}, token=admin)
    project_id = project["createProject"]["project"]["id"]
    granted = await app.gql(GRANT, {"r": project_id, "i": "project.view", "p": ids["finance"]}, token=admin)
    assert granted["grantPermission"]["userErrors"] == []

    # The claim names two of the provider's groups and a group of the admins' (not joined).
    ada = provider.token("sub-ada", groups=["engineering", "finance", "auditors", "nobody-knows"])
    assert await app.gql(PROJECTS, token=ada) == {
        "projects": {"totalCount": 1, "edges": [{"node": {"displayName": "Payroll"}}]}
    }
    assert await _members(app, admin) == {"engineering": ["ada"], "finance": ["ada"], "auditors": []}

    # An admin adds her to the admins' group; her next token leaves finance: the grant no longer reaches her.
    ada_id = (await app.gql(VIEWER_ID, token=ada))["viewer"]["id"]
    added = await app.gql(ADD_MEMBER, {"g": ids["auditors"], "u": ada_id}, token=admin)
    assert added["addGroupMember"]["userErrors"] == []
    later = provider.token("sub-ada", groups=["engineering"], jti="later")
    assert await app.gql(PROJECTS, token=later) == {"projects": {"totalCount": 0, "edges": []}}
    assert await _members(app, admin) == {"engineering": ["ada"], "finance": [], "auditors": ["ada"]}

    # A token without the claim: in none of the provider's groups.
    assert await app.gql(VIEWER, token=provider.token("sub-ada", jti="none"))
    assert await _members(app, admin) == {"engineering": [], "finance": [], "auditors": ["ada"]}


async def test_a_disabled_user_stays_refused_whatever_the_provider_says(oidc_app, provider, make_user):
    app = await oidc_app()
    ada_id = (await app.gql(VIEWER_ID, token=provider.token("sub-ada")))["viewer"]["id"]
    _, admin = await make_user("root", admin=True)
    assert (await app.gql(SET_DISABLED, {"u": ada_id, "disabled": True}, token=admin))["disableUser"][
        "userErrors"
    ] == []
    assert await app.refusal(provider.token("sub-ada", jti="fresh")) == "The token's user is disabled."


async def test_a_managed_group_is_named_in_the_schema(oidc_app, make_user):
    app = await oidc_app()
    _, admin = await make_user("root", admin=True)
    response = await app.post(CREATE_MANAGED_GROUP, {"name": "x", "managed": "LDAP"}, token=admin)
    assert "LDAP" in response.json()["errors"][0]["message"]  # only OIDC is a manager


@pytest.mark.postgres
async def test_two_first_requests_at_once_make_one_user(oidc_app, provider, make_user):
    """Both see no user and both try to make one; the second's insert fails on the first's and it
    asks again, finding her (on SQLite the writes take turns and the second finds her at once)."""
    app = await oidc_app()
    token = provider.token("sub-ada", groups=["engineering"])
    answers = await asyncio.gather(*(app.gql(VIEWER_ID, token=token) for _ in range(4)))
    assert len({a["viewer"]["id"] for a in answers}) == 1
    _, admin = await make_user("root", admin=True)
    users = await app.gql("{ users(first: 10) { totalCount } }", token=admin)
    assert users["users"]["totalCount"] == 2
