"""engine/people/identity.py: users, groups, passwords and bearer tokens at the engine's API. A token
stands for its user and the user's groups until it expires, is revoked or its user is disabled,
and each of those is told apart (``check_token``, ``token_problems``) so the client hears why; a
password is stored only as a salted scrypt hash and checked off the event loop; creating users
and groups is checked at the edge."""

from datetime import timedelta

import pytest
from sqlalchemy import select, update

from engine.errors import DomainError
from engine.people import api_tokens, identity, passwords, permissions
from engine.people.identity import TokenProblem
from models import ApiToken, User, utcnow
from tests.fixtures.database import PASSWORD


async def refusal(db, verb, **kwargs):
    with pytest.raises(DomainError) as error:
        async with db.transaction() as s:
            await verb(s, **kwargs)
    return error.value.code, error.value.field, error.value.message


def test_a_password_is_stored_salted_and_only_its_own_text_matches():
    first, second = passwords.hash_password("correct horse"), passwords.hash_password("correct horse")
    assert first != second and "correct horse" not in first  # a salt each, no plain text
    assert first.startswith("scrypt$16384$8$1$")
    assert passwords.verify_password("correct horse", first) and passwords.verify_password("correct horse", second)
    assert not passwords.verify_password("correct horse ", first)
    assert not passwords.verify_password("Correct horse", first)


@pytest.mark.parametrize(
    ("login", "password", "code", "field", "message"),
    [
        ("", PASSWORD, "INVALID_INPUT", ["login"], identity.LOGIN_RULE),
        ("x" * 65, PASSWORD, "INVALID_INPUT", ["login"], identity.LOGIN_RULE),
        ("bad name!", PASSWORD, "INVALID_INPUT", ["login"], identity.LOGIN_RULE),
        (" ada", PASSWORD, "INVALID_INPUT", ["login"], identity.LOGIN_RULE),
        ("newbie", "short77", "INVALID_INPUT", ["password"], "A password has at least 8 characters."),
        ("taken", PASSWORD, "ALREADY_EXISTS", ["login"], "The login 'taken' is taken."),
    ],
)
async def test_creating_a_user_is_checked_at_the_edge(db, make_actor, login, password, code, field, message):
    await make_actor("taken")
    assert await refusal(db, identity.create_user, actor=None, login=login, password=password) == (
        code,
        field,
        message,
    )


async def test_creating_users_needs_the_global_intent_and_an_admin_only_by_an_admin(db, make_actor):
    admin, plain, hr = await make_actor("admin", admin=True), await make_actor("plain"), await make_actor("hr")
    async with db.transaction() as s:
        await permissions.grant_raw(s, resource_id=permissions.GLOBAL, intent="global.createUser", party_id=hr.user_id)
    assert (await refusal(db, identity.create_user, actor=plain, login="newbie", password=PASSWORD))[0] == (
        "NOT_ALLOWED"
    )
    assert await refusal(db, identity.create_user, actor=hr, login="boss", password=PASSWORD, admin=True) == (
        "NOT_ALLOWED",
        ["admin"],
        "Only an admin may create an admin.",
    )
    async with db.transaction() as s:
        newbie = await identity.create_user(s, actor=hr, login="newbie", password=PASSWORD)
        boss = await identity.create_user(s, actor=admin, login="boss", password=PASSWORD, admin=True)
    assert (newbie.is_admin, boss.is_admin) == (False, True)
    async with db.session() as s:  # every new user may create projects
        assert await permissions.held_intents(
            s, actor=await identity.actor_by_login(s, "newbie"), resource_id=permissions.GLOBAL
        ) == {"global.createProject"}


async def test_a_token_stands_for_its_user_and_groups_until_it_expires(db, make_actor):
    admin, alice = await make_actor("admin", admin=True), await make_actor("alice")
    async with db.transaction() as s:
        token = await identity.create_token(s, user_id=alice.user_id, ttl_seconds=3600)
        crew = await identity.create_group(s, actor=admin, name="crew")
        await identity.add_group_member(s, actor=admin, group_id=crew.id, user_id=alice.user_id)
    assert token.startswith("cw_")
    async with db.session() as s:
        actor = await identity.check_token(s, token)
        stored = await s.scalar(select(ApiToken.token_hash).where(ApiToken.user_id == alice.user_id))
        expires = await s.scalar(select(ApiToken.expires_at).where(ApiToken.user_id == alice.user_id))
        assert token not in stored  # only a hash of it is kept
        assert (actor.user_id, actor.login, actor.party_ids) == (alice.user_id, "alice", {alice.user_id, crew.id})
        assert await identity.check_token(s, token, now=expires - timedelta(seconds=1)) == actor
        assert await identity.check_token(s, token, now=expires) == TokenProblem.EXPIRED
        assert await identity.authenticate(s, token, now=expires) is None


async def test_an_api_token_carries_its_scope_and_name_on_every_road(db, make_actor):
    """A request's first read (``check_token``) and a live connection's re-check
    (``authenticate_many``) make the same actor of an API token: its user, and the token's id,
    name (``via``) and highest scope; a re-check that dropped them would lift the scope."""
    alice = await make_actor("alice")
    async with db.transaction() as s:
        secret, made = await api_tokens.create_api_token(
            s, actor=alice, user_id=alice.user_id, name="ci", scopes=["READ", "EXECUTE"], expires_at=None, now=utcnow()
        )
        session_token = await identity.create_token(s, user_id=alice.user_id, ttl_seconds=3600)
    async with db.session() as s:
        first = await identity.check_token(s, secret)
        again = await identity.authenticate_many(s, [secret, session_token])
        plain = await identity.check_token(s, session_token)
    assert (first.token_id, first.via, first.scope) == (made.id, "ci", "EXECUTE")
    assert again[secret] == first
    assert (plain.token_id, plain.via, plain.scope) == (None, None, None) and again[session_token] == plain


async def test_each_reason_a_token_does_not_work_is_told_apart(db, make_actor):
    admin = await make_actor("admin", admin=True)
    users = {name: await make_actor(name) for name in ("ok", "gone", "revoked", "disabled", "expired")}
    tokens = {}
    async with db.transaction() as s:
        for name, user in users.items():
            tokens[name] = await identity.create_token(s, user_id=user.user_id, ttl_seconds=3600)
        await s.execute(update(ApiToken).values(revoked=True).where(ApiToken.user_id == users["revoked"].user_id))
        await s.execute(
            update(ApiToken)
            .values(expires_at=utcnow() - timedelta(seconds=1))
            .where(ApiToken.user_id == users["expired"].user_id)
        )
        await identity.set_disabled(s, actor=admin, user_id=users["disabled"].user_id, disabled=True)
    asked = [tokens["revoked"], tokens["disabled"], tokens["expired"], "cw_unknownvalue", "not a token", ""]
    async with db.session() as s:
        problems = await identity.token_problems(s, asked)
        one_by_one = [await identity.check_token(s, token) for token in asked]
        many = await identity.authenticate_many(s, [*asked, tokens["ok"]])
    expected = [
        TokenProblem.REVOKED,
        TokenProblem.DISABLED,
        TokenProblem.EXPIRED,
        TokenProblem.UNKNOWN,
        TokenProblem.MALFORMED,
        TokenProblem.MISSING,
    ]
    assert [problems[t] for t in asked] == expected and one_by_one == expected
    assert list(many) == [tokens["ok"]] and many[tokens["ok"]].user_id == users["ok"].user_id


async def test_logout_revokes_this_token_or_every_one_of_the_actors_own(db, make_actor):
    alice, bob = await make_actor("alice"), await make_actor("bob")
    async with db.transaction() as s:
        a1, a2, a3 = [await identity.create_token(s, user_id=alice.user_id, ttl_seconds=3600) for _ in range(3)]
        b1 = await identity.create_token(s, user_id=bob.user_id, ttl_seconds=3600)
    async with db.transaction() as s:
        assert await identity.logout(s, actor=alice, token=a1) == 1
        assert await identity.logout(s, actor=alice, token=b1) == 0  # another user's token: untouched
        assert await identity.logout(s, actor=alice, token=None) == 0
    async with db.session() as s:
        assert await identity.check_token(s, a1) == TokenProblem.REVOKED
        assert isinstance(await identity.check_token(s, b1), identity.Actor)
        assert isinstance(await identity.check_token(s, a2), identity.Actor)
    async with db.transaction() as s:
        assert await identity.logout(s, actor=alice, token=a2, everywhere=True) == 2  # a2 and a3; a1 already
    async with db.session() as s:
        assert await identity.token_problems(s, [a2, a3]) == {a2: TokenProblem.REVOKED, a3: TokenProblem.REVOKED}
        assert isinstance(await identity.check_token(s, b1), identity.Actor)


async def test_an_admin_revokes_a_token_by_value_or_all_of_a_users(db, make_actor):
    admin, alice, bob = await make_actor("admin", admin=True), await make_actor("alice"), await make_actor("bob")
    async with db.transaction() as s:
        a1, a2 = [await identity.create_token(s, user_id=alice.user_id, ttl_seconds=3600) for _ in range(2)]
        b1 = await identity.create_token(s, user_id=bob.user_id, ttl_seconds=3600)
    assert await refusal(db, identity.revoke_tokens, actor=alice, user_id=bob.user_id) == (
        "NOT_ALLOWED",
        None,
        "Only an admin may revoke tokens.",
    )
    assert await refusal(db, identity.revoke_tokens, actor=admin, token=a1, user_id=alice.user_id) == (
        "INVALID_INPUT",
        ["token"],
        "Give either a token or a userId, not both.",
    )
    assert (await refusal(db, identity.revoke_tokens, actor=admin))[:2] == ("INVALID_INPUT", ["token"])
    assert await refusal(db, identity.revoke_tokens, actor=admin, token="cw_nosuchtoken") == (
        "NOT_FOUND",
        ["token"],
        "No such token exists.",
    )
    assert (await refusal(db, identity.revoke_tokens, actor=admin, user_id="usr_01J0000000000000000000000"))[:2] == (
        "NOT_FOUND",
        ["userId"],
    )
    async with db.transaction() as s:
        assert await identity.revoke_tokens(s, actor=admin, token=b1) == 1
        assert await identity.revoke_tokens(s, actor=admin, user_id=alice.user_id) == 2
        assert await identity.revoke_tokens(s, actor=admin, user_id=alice.user_id) == 0  # none left to revoke
    async with db.session() as s:
        assert set((await identity.token_problems(s, [a1, a2, b1])).values()) == {TokenProblem.REVOKED}


async def test_disabling_a_user_stops_their_tokens_and_enabling_brings_them_back(db, make_actor):
    admin, alice = await make_actor("admin", admin=True), await make_actor("alice")
    async with db.transaction() as s:
        token = await identity.create_token(s, user_id=alice.user_id, ttl_seconds=3600)
    assert await refusal(db, identity.set_disabled, actor=admin, user_id=admin.user_id, disabled=True) == (
        "NOT_ALLOWED",
        ["userId"],
        "You may not disable yourself.",
    )
    assert (await refusal(db, identity.set_disabled, actor=alice, user_id=admin.user_id, disabled=True))[0] == (
        "NOT_ALLOWED"
    )
    async with db.transaction() as s:
        await identity.set_disabled(s, actor=admin, user_id=alice.user_id, disabled=True)
    async with db.session() as s:
        assert await identity.check_token(s, token) == TokenProblem.DISABLED
        user = await identity.find_user(s, login="alice")
    assert not await passwords.password_matches(user, PASSWORD, max_pending=4)  # the right one, but disabled
    async with db.transaction() as s:
        await identity.set_disabled(s, actor=admin, user_id=alice.user_id, disabled=False)
    async with db.session() as s:
        assert (await identity.check_token(s, token)).user_id == alice.user_id
        user = await identity.find_user(s, login="alice")
    assert await passwords.password_matches(user, PASSWORD, max_pending=4)
    assert not await passwords.password_matches(user, PASSWORD + "!", max_pending=4)
    assert not await passwords.password_matches(None, PASSWORD, max_pending=4)  # unknown login: a dummy hash


async def test_password_checks_beyond_the_limit_are_refused_at_once(db, make_actor, monkeypatch):
    """At most ``max_pending`` checks wait or run; the next is refused without queueing."""
    await make_actor("alice")
    async with db.session() as s:
        user = await identity.find_user(s, login="alice")
    monkeypatch.setattr(passwords._PENDING, "count", 2)  # two checks are in flight
    with pytest.raises(DomainError) as error:
        await passwords.password_matches(user, PASSWORD, max_pending=2)
    assert (error.value.code, error.value.field) == ("TOO_MANY_ATTEMPTS", ["login"])
    assert passwords.pending_password_checks() == 2  # the refused one took no slot
    assert await passwords.password_matches(user, PASSWORD, max_pending=3)
    assert passwords.pending_password_checks() == 2  # the one that ran gave its slot back


async def test_group_membership_is_what_an_actor_is_made_of(db, make_actor):
    admin, alice, plain = await make_actor("admin", admin=True), await make_actor("alice"), await make_actor("plain")
    async with db.transaction() as s:
        crew = await identity.create_group(s, actor=admin, name="crew", display_name="The crew")
        night = await identity.create_group(s, actor=admin, name="night")
        for group in (crew, night):
            await identity.add_group_member(s, actor=admin, group_id=group.id, user_id=alice.user_id)
        await identity.add_group_member(s, actor=admin, group_id=crew.id, user_id=alice.user_id)  # again: no change
    async with db.session() as s:
        assert (await identity.actor_by_login(s, "alice")).party_ids == {alice.user_id, crew.id, night.id}
    async with db.transaction() as s:
        await identity.remove_group_member(s, actor=admin, group_id=night.id, user_id=alice.user_id)
    async with db.session() as s:
        assert (await identity.actor_by_login(s, "alice")).party_ids == {alice.user_id, crew.id}
        assert (await s.get(User, alice.user_id)).login == "alice"
    assert await refusal(db, identity.create_group, actor=admin, name="crew") == (
        "ALREADY_EXISTS",
        ["name"],
        "The group name 'crew' is taken.",
    )
    assert (await refusal(db, identity.create_group, actor=admin, name=" "))[:2] == ("INVALID_INPUT", ["name"])
    assert (await refusal(db, identity.create_group, actor=plain, name="mine"))[0] == "NOT_ALLOWED"
    assert (
        await refusal(
            db, identity.add_group_member, actor=admin, group_id=crew.id, user_id="usr_01J0000000000000000000000"
        )
    )[:2] == ("NOT_FOUND", ["userId"])
    assert (
        await refusal(
            db, identity.add_group_member, actor=admin, group_id="grp_01J0000000000000000000000", user_id=alice.user_id
        )
    )[:2] == ("NOT_FOUND", ["groupId"])
    async with db.session() as s:
        with pytest.raises(DomainError) as error:
            await identity.actor_by_login(s, "nobody")
    assert (error.value.code, error.value.field) == ("NOT_FOUND", ["login"])
