"""engine/people/oidc_identities.py at the engine's API, with claims as server/oidc.py hands them
over: a known identity whose groups match is read in three statements and writes nothing; the
re-check of live connections reads every identity in two; a login claim that is no login Caseway
takes is refused in a sentence."""

from datetime import UTC, datetime, timedelta

from engine.people import identity, oidc_identities
from engine.people.actors import Actor
from engine.people.identity import TokenProblem
from engine.people.oidc_identities import SignInRefused, VerifiedClaims
from models import UserIdentity

ISSUER = "https://id.example/realms/acme"


def claims(subject: str, login: str | None = None, groups: tuple[str, ...] = ()) -> VerifiedClaims:
    return VerifiedClaims(
        issuer=ISSUER,
        subject=subject,
        login=login or subject,
        display_name=None,
        groups=frozenset(groups),
        expires_at=datetime.now(UTC) + timedelta(minutes=5),
    )


async def sign_in(db, found: VerifiedClaims, create: bool = True):
    async with db.transaction() as s:
        return await oidc_identities.sign_in(s, found, create_users=create, login_claim="preferred_username")


async def test_a_known_identity_is_read_without_a_write(db, count_statements, make_user):
    _, _ = await make_user("root", admin=True)
    async with db.transaction() as s:
        root = await identity.actor_by_login(s, "root")
        crew = await identity.create_group(s, actor=root, name="crew", managed="OIDC")
    first = await sign_in(db, claims("ada", groups=("crew",)))
    assert isinstance(first, Actor) and crew.id in first.party_ids
    with count_statements() as counter:
        async with db.reader.connect() as connection:
            again = await oidc_identities.look_up(connection, claims("ada", groups=("crew",)), create_users=True)
    assert isinstance(again, Actor) and again.party_ids == first.party_ids
    assert counter.count == 3 and not any(
        s.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")) for s in counter.statements
    )
    # Another group claim, or an unknown identity: the caller must write (None).
    async with db.reader.connect() as connection:
        assert await oidc_identities.look_up(connection, claims("ada"), create_users=True) is None
        assert await oidc_identities.look_up(connection, claims("bob"), create_users=True) is None


async def test_live_connections_are_read_again_in_two_statements(db, count_statements, make_user):
    ada, bob, eve = claims("ada"), claims("bob"), claims("eve")
    for each in (ada, bob):
        assert isinstance(await sign_in(db, each), Actor)
    async with db.transaction() as s:
        root = Actor(user_id="root", login="root", is_admin=True)
        bob_id = (await s.get(UserIdentity, (ISSUER, "bob"))).user_id
        await identity.set_disabled(s, actor=root, user_id=bob_id, disabled=True)
    with count_statements() as counter:
        async with db.read_session() as s:
            found = await oidc_identities.actors_for(s, [ada, bob, eve])
    assert counter.count == 2
    assert isinstance(found[(ISSUER, "ada")], Actor) and found[(ISSUER, "bob")] == TokenProblem.DISABLED
    assert (ISSUER, "eve") not in found  # linked to nobody


async def test_a_login_claim_caseway_cannot_take_is_refused_in_a_sentence(db):
    refused = await sign_in(db, claims("long", login="x" * 65))
    assert refused == SignInRefused(
        "The token's preferred_username claim is not a login Caseway accepts (1 to 64 characters)."
    )
    assert isinstance(await sign_in(db, claims("off"), create=False), SignInRefused)
