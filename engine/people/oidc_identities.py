"""People who sign in through the organization's identity provider (OpenID Connect).

A provider's user is known by (issuer, subject): the login claim names a user made on first
sight, but never finds one, so a renamed or reassigned username at the provider cannot take
over a Caseway account. The groups claim sets the user's memberships in the groups marked as the
provider's (``managed == "OIDC"``), each time a token is seen; every other group is the admins'.

The engine takes claims that server/oidc.py has verified (signature, issuer, audience, times)
and fetches nothing itself.
"""

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from engine.errors import DomainError, ErrorCode, not_found
from engine.people import permissions
from engine.people.actors import Actor
from engine.people.identity import DEFAULT_USER_INTENTS, TokenProblem
from engine.validation import require_text
from models import Group, GroupMember, User, UserIdentity, new_id, unit_of_work
from models.db import insert_for

# The value of ``Group.managed`` for a group whose members the provider's groups claim sets.
MANAGED_BY_PROVIDER = "OIDC"
# A user made here has no password: ``login`` with any password fails for them.
NO_PASSWORD = ""
MAX_SUBJECT = 255  # OpenID Connect Core: a sub is at most 255 ASCII characters
MAX_ISSUER = 500


@dataclass(frozen=True, slots=True)
class VerifiedClaims:
    """What a verified token says of its holder."""

    issuer: str
    subject: str
    login: str | None  # the login claim's value, if the token has one
    display_name: str | None  # the ``name`` claim's
    groups: frozenset[str]  # the groups claim's names (empty when the claim is absent)
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class SignInRefused:
    """Why a provider's token does not sign anyone in, in one sentence for the client.
    ``unavailable``: the provider could not be asked (its keys), so the answer is 503, not a
    refusal of the token."""

    message: str
    unavailable: bool = False


Session = AsyncSession | AsyncConnection


async def _known(session: Session, claims: VerifiedClaims) -> tuple[str, str, bool, bool] | None:
    row = (
        await session.execute(
            select(User.id, User.login, User.is_admin, User.disabled)
            .join(UserIdentity, UserIdentity.user_id == User.id)
            .where(UserIdentity.issuer == claims.issuer, UserIdentity.subject == claims.subject)
        )
    ).first()
    return None if row is None else (row.id, row.login, row.is_admin, row.disabled)


async def _memberships(session: Session, user_id: str) -> dict[str, str | None]:
    """The user's groups: id -> how the group is managed (None: by admins)."""
    rows = await session.execute(
        select(Group.id, Group.managed)
        .join(GroupMember, GroupMember.group_id == Group.id)
        .where(GroupMember.user_id == user_id)
    )
    return {row.id: row.managed for row in rows}


async def _managed_named(session: Session, names: frozenset[str]) -> set[str]:
    """The ids of the provider's groups among ``names``."""
    if not names:
        return set()
    rows = await session.scalars(
        select(Group.id).where(Group.managed == MANAGED_BY_PROVIDER, Group.name.in_(sorted(names)))
    )
    return set(rows)


def _actor(user_id: str, login: str, is_admin: bool, groups: "set[str]", claims: VerifiedClaims) -> Actor:
    return Actor(
        user_id=user_id,
        login=login,
        is_admin=is_admin,
        expires_at=claims.expires_at,
        party_ids=frozenset([user_id, *groups]),
    )


def _creation_off(claims: VerifiedClaims) -> SignInRefused:
    return SignInRefused(
        f"No Caseway user is linked to this identity (subject {claims.subject!r}) and new users are not created "
        "(CASEWAY_OIDC_CREATE_USERS=false): an admin can link one with linkIdentity."
    )


DISABLED = TokenProblem.DISABLED  # a disabled user is refused in the words Caseway's own tokens get


async def look_up(
    connection: Session, claims: VerifiedClaims, *, create_users: bool
) -> Actor | SignInRefused | TokenProblem | None:
    """Reads only: the actor the claims stand for when nothing needs writing (the identity is
    known and its memberships in the provider's groups already match the claim), a refusal that
    needs no write, or None: ``sign_in`` must run in a write transaction."""
    known = await _known(connection, claims)
    if known is None:
        return None if create_users else _creation_off(claims)
    user_id, login, is_admin, disabled = known
    if disabled:
        return DISABLED
    groups = await _memberships(connection, user_id)
    managed = {g for g, how in groups.items() if how == MANAGED_BY_PROVIDER}
    if managed != await _managed_named(connection, claims.groups):
        return None
    return _actor(user_id, login, is_admin, set(groups), claims)


async def sign_in(
    session: AsyncSession, claims: VerifiedClaims, *, create_users: bool, login_claim: str
) -> Actor | SignInRefused | TokenProblem:
    """The actor the claims stand for: the user linked to (issuer, subject), made on first sight
    unless ``create_users`` is false, their memberships in the provider's groups set from the
    claim. Refused, writing nothing, for a disabled user, and when the login the claim names is
    another user's (an admin links them with ``link_identity``). The caller owns the transaction;
    a concurrent first sign-in of the same identity makes it fail to commit (IntegrityError),
    after which the caller asks again and finds the user the other made."""
    known = await _known(session, claims)
    if known is None:
        if not create_users:
            return _creation_off(claims)
        created = await _create(session, claims, login_claim)
        if isinstance(created, SignInRefused):
            # The login may be taken by this very identity's user, made by a concurrent first
            # sign-in that committed after the look-up above.
            known = await _known(session, claims)
            if known is None:
                return created
        else:
            known = (created.id, created.login, False, False)
    user_id, login, is_admin, disabled = known
    if disabled:
        return DISABLED
    groups = await _memberships(session, user_id)
    await _sync_groups(session, user_id, groups, claims.groups)
    return _actor(user_id, login, is_admin, set(groups), claims)


async def _create(session: AsyncSession, claims: VerifiedClaims, login_claim: str) -> User | SignInRefused:
    if not claims.login:
        return SignInRefused(f"The token has no {login_claim} claim to name a new Caseway user by.")
    try:
        login = require_text(claims.login, "login", max_len=64)
    except DomainError:
        return SignInRefused(f"The token's {login_claim} claim is not a login Caseway accepts (1 to 64 characters).")
    if await session.scalar(select(User.id).where(User.login == login)) is not None:
        return SignInRefused(
            f"The login {login!r} belongs to a Caseway user who signs in otherwise; it is never taken over: an "
            "admin can link them with linkIdentity(input: "
            f"{{userId, issuer: {claims.issuer!r}, subject: {claims.subject!r}}})."
        )
    display_name = (claims.display_name or "").strip()[:200] or login
    user = User(id=new_id("usr"), login=login, display_name=display_name, password_hash=NO_PASSWORD)
    session.add(user)
    await session.flush()
    session.add(UserIdentity(issuer=claims.issuer, subject=claims.subject, user_id=user.id))
    for intent in DEFAULT_USER_INTENTS:
        await permissions.grant_raw(session, resource_id=permissions.GLOBAL, intent=intent, party_id=user.id)
    await session.flush()
    return user


async def _sync_groups(
    session: AsyncSession, user_id: str, groups: dict[str, str | None], named: frozenset[str]
) -> None:
    """Membership in exactly the provider's groups the claim names; ``groups`` (the user's, by
    id) is brought up to date. Other groups are left as they are. The provider is the authority
    on its groups: the last-holder rule of removeGroupMember does not hold a membership here
    (admins pass every check, so nothing is left without someone who may grant)."""
    wanted = await _managed_named(session, named)
    current = {g for g, how in groups.items() if how == MANAGED_BY_PROVIDER}
    if wanted == current:
        return
    if current - wanted:
        await session.execute(
            delete(GroupMember).where(GroupMember.user_id == user_id, GroupMember.group_id.in_(current - wanted))
        )
    insert = insert_for(session)
    for group_id in sorted(wanted - current):
        await session.execute(insert(GroupMember).values(group_id=group_id, user_id=user_id).on_conflict_do_nothing())
    for group_id in current - wanted:
        del groups[group_id]
    groups.update(dict.fromkeys(wanted - current, MANAGED_BY_PROVIDER))
    unit_of_work(session).identities_changed = True  # remembered actors of this user are stale


async def actors_for(session: Session, claims: list[VerifiedClaims]) -> dict[tuple[str, str], Actor | TokenProblem]:
    """For re-checking live connections: the actor each identity stands for now (its user's
    groups as they are, nothing written), DISABLED for a disabled user; an identity linked to
    nobody is left out. Two queries for all of them."""
    wanted = {(c.issuer, c.subject): c for c in claims}
    if not wanted:
        return {}
    rows = (
        await session.execute(
            select(UserIdentity.issuer, UserIdentity.subject, User.id, User.login, User.is_admin, User.disabled)
            .join(User, User.id == UserIdentity.user_id)
            .where(UserIdentity.subject.in_({s for _, s in wanted}), UserIdentity.issuer.in_({i for i, _ in wanted}))
        )
    ).all()
    rows = [r for r in rows if (r.issuer, r.subject) in wanted]
    groups: dict[str, set[str]] = {}
    for group_id, user_id in await session.execute(
        select(GroupMember.group_id, GroupMember.user_id).where(GroupMember.user_id.in_({r.id for r in rows}))
    ):
        groups.setdefault(user_id, set()).add(group_id)
    return {
        (r.issuer, r.subject): DISABLED
        if r.disabled
        else _actor(r.id, r.login, r.is_admin, groups.get(r.id, set()), wanted[(r.issuer, r.subject)])
        for r in rows
    }


async def link_identity(session: AsyncSession, *, actor: Actor, user_id: str, issuer: str, subject: str) -> User:
    """Admin: from now on the provider's (issuer, subject) signs in as this user, whatever
    their login and however they signed in before (a password user keeps their password).
    Linking the identity to the user it already signs in as changes nothing; to another user,
    ALREADY_EXISTS."""
    if not actor.is_admin:
        raise DomainError(ErrorCode.NOT_ALLOWED, "Only an admin may link identities.")
    issuer = require_text(issuer, "issuer", max_len=MAX_ISSUER)
    subject = require_text(subject, "subject", max_len=MAX_SUBJECT)
    user = await session.get(User, user_id)
    if user is None:
        raise not_found("user", user_id, "userId")
    linked = await session.get(UserIdentity, (issuer, subject))
    if linked is not None:
        if linked.user_id == user_id:
            return user
        other = await session.scalar(select(User.login).where(User.id == linked.user_id))
        raise DomainError(ErrorCode.ALREADY_EXISTS, f"This identity signs in as {other!r} already.", ["subject"])
    session.add(UserIdentity(issuer=issuer, subject=subject, user_id=user_id))
    await session.flush()
    return user
