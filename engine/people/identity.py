"""Users, groups and bearer tokens; passwords (their hashes and the bounded checks a sign-in
runs) are engine/people/passwords.py's."""

import enum
import re
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, delete, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from engine.errors import DomainError, ErrorCode, not_found
from engine.people import permissions
from engine.people.actors import Actor
from engine.people.passwords import hash_password, invalid_credentials
from engine.people.scopes import highest
from engine.people.token_values import TokenProblem, issue_token_value, token_shape_problem
from engine.people.token_values import token_hash as _token_hash
from engine.validation import require_text
from models import ApiToken, Group, GroupMember, User, as_utc, new_id, unit_of_work, utcnow
from models.db import insert_for

# Granted to every new user so a fresh account can start a project of its own.
DEFAULT_USER_INTENTS = ("global.createProject",)

# What a login may be: typed at sign-in, shown in lists and named on the command line, so no
# spaces and no signs but those of an email address.
LOGIN_RULE = "A login is 1 to 64 letters, digits and the signs . _ - @ + (no spaces or other signs)."
_LOGIN = re.compile(r"[\w.@+-]{1,64}")


def require_login(login: str) -> str:
    """``login`` if it keeps ``LOGIN_RULE``; else INVALID_INPUT saying the rule."""
    if not isinstance(login, str) or not _LOGIN.fullmatch(login):
        raise DomainError(ErrorCode.INVALID_INPUT, LOGIN_RULE, ["login"])
    return login


def _identities_changed(session: AsyncSession) -> None:
    """Who a token stands for changed (its user's groups, its revocation, a disabled user): once
    the transaction commits, the server forgets the actors it remembers (server/actor_cache.py)."""
    unit_of_work(session).identities_changed = True


class UserKind(enum.StrEnum):
    PERSON = "PERSON"  # signs in with a password
    SERVICE = "SERVICE"  # an integration: no password, API tokens alone (engine/people/api_tokens.py)


async def create_user(
    session: AsyncSession,
    *,
    actor: Actor | None,
    login: str,
    password: str | None,
    display_name: str | None = None,
    organization: str = "",
    admin: bool = False,
    kind: str = UserKind.PERSON,
) -> User:
    """Create a user. ``actor=None`` is the operator (CLI); otherwise global.createUser is needed,
    and only an admin may create another admin. A person needs a password; a service user has
    none (it cannot log in: an admin gives it API tokens)."""
    if actor is not None:
        await permissions.require_global(session, actor=actor, intent="global.createUser")
        if admin and not actor.is_admin:
            raise DomainError(ErrorCode.NOT_ALLOWED, "Only an admin may create an admin.", ["admin"])
    login = require_login(login)
    if kind == UserKind.SERVICE:
        if password is not None:
            raise DomainError(
                ErrorCode.INVALID_INPUT, "A service user has no password: it uses API tokens.", ["password"]
            )
    elif password is None or len(password) < 8:
        raise DomainError(ErrorCode.INVALID_INPUT, "A password has at least 8 characters.", ["password"])
    if await session.scalar(select(User.id).where(User.login == login)):
        raise DomainError(ErrorCode.ALREADY_EXISTS, f"The login {login!r} is taken.", ["login"])
    user = User(
        id=new_id("usr"),
        login=login,
        display_name=require_text(display_name or login, "displayName"),
        organization=organization or "",
        # Never checked: login refuses a service user first (require_may_log_in).
        password_hash="" if password is None else hash_password(password),
        is_admin=admin,
        kind=UserKind(kind),
    )
    session.add(user)
    await session.flush()
    for intent in DEFAULT_USER_INTENTS:
        await permissions.grant_raw(session, resource_id=permissions.GLOBAL, intent=intent, party_id=user.id)
    return user


def require_may_log_in(user: User | None) -> None:
    """A service user never logs in (it has no password). Answered as a wrong password is, after
    the throttle has charged the attempt: a sentence naming it a service user would tell anyone
    without credentials that the login exists (docs/api.md says service users cannot log in)."""
    if user is not None and user.kind == UserKind.SERVICE:
        raise invalid_credentials()


async def create_group(
    session: AsyncSession, *, actor: Actor, name: str, display_name: str | None = None, managed: str | None = None
) -> Group:
    """``managed="OIDC"``: the identity provider's groups claim sets who is in it
    (engine/people/oidc_identities.py)."""
    await permissions.require_global(session, actor=actor, intent="global.createGroup")
    name = require_text(name, "name", max_len=64)
    if await session.scalar(select(Group.id).where(Group.name == name)):
        raise DomainError(ErrorCode.ALREADY_EXISTS, f"The group name {name!r} is taken.", ["name"])
    group = Group(
        id=new_id("grp"), name=name, display_name=require_text(display_name or name, "displayName"), managed=managed
    )
    session.add(group)
    await session.flush()
    return group


# Row locks on users and groups that do not block the foreign-key checks of a concurrent
# addGroupMember (FOR KEY SHARE): those would deadlock with a disabling in progress.
_NO_KEY_UPDATE = {"key_share": True}


async def _get_group_for_change(session: AsyncSession, actor: Actor, group_id: str, *, lock: bool = False) -> Group:
    await permissions.require_global(session, actor=actor, intent="global.createGroup")
    group = await session.get(Group, group_id, with_for_update=_NO_KEY_UPDATE if lock else None)
    if group is None:
        raise not_found("group", group_id, "groupId")
    return group


async def add_group_member(session: AsyncSession, *, actor: Actor, group_id: str, user_id: str) -> Group:
    group = await _get_group_for_change(session, actor, group_id)
    if await session.get(User, user_id) is None:
        raise not_found("user", user_id, "userId")
    # A concurrent equal add is harmless: membership is what was asked for.
    insert = insert_for(session)
    await session.execute(insert(GroupMember).values(group_id=group_id, user_id=user_id).on_conflict_do_nothing())
    _identities_changed(session)
    return group


async def remove_group_member(session: AsyncSession, *, actor: Actor, group_id: str, user_id: str) -> Group:
    """Take a user out of a group. Refused (LAST_GRANT_HOLDER) if the group then has nobody who
    may act and was the last party that could grant permissions on some resource: a group
    counts as a holder only while it has a member who is not disabled. The group's row is
    locked first, so a concurrent grant to the group is either seen here or waits for this."""
    group = await _get_group_for_change(session, actor, group_id, lock=True)
    await permissions.lock_grant_holders(session, permissions.resources_granted_to([group_id]))
    removed = await session.execute(
        delete(GroupMember).where(GroupMember.group_id == group_id, GroupMember.user_id == user_id)
    )
    if removed.rowcount:  # type: ignore[attr-defined]
        await permissions.require_grant_holders_remain(session, party_ids=[group_id])
        _identities_changed(session)
    return group


async def find_user(session: AsyncSession, *, login: str) -> User | None:
    """The user who signs in with ``login``, if any (one read; the caller closes it before
    checking the password, so the slow hash holds no database lock)."""
    return await session.scalar(select(User).where(User.login == login))


async def logout(session: AsyncSession, *, actor: Actor, token: str | None, everywhere: bool = False) -> int:
    """Revoke the token the request came with (``everywhere``: every token of the actor's).
    Returns how many tokens were revoked. Takes effect at once: the committer forgets the
    remembered actors (``_identities_changed``) and live connections are checked again."""
    if everywhere:
        condition = ApiToken.user_id == actor.user_id
    elif token:
        condition = (ApiToken.token_hash == _token_hash(token)) & (ApiToken.user_id == actor.user_id)
    else:
        return 0
    return await _revoke(session, condition)


async def revoke_tokens(
    session: AsyncSession, *, actor: Actor, token: str | None = None, user_id: str | None = None
) -> int:
    """Admin: revoke one token, given by its value (a token found in a log or a leaked
    configuration), or every token of a user. Returns how many were revoked."""
    _require_admin(actor, "revoke tokens")
    if (token is None) == (user_id is None):
        raise DomainError(ErrorCode.INVALID_INPUT, "Give either a token or a userId, not both.", ["token"])
    if user_id is not None:
        if await session.get(User, user_id) is None:
            raise not_found("user", user_id, "userId")
        return await _revoke(session, ApiToken.user_id == user_id)
    token_hash = _token_hash(token or "")
    if await session.scalar(select(ApiToken.id).where(ApiToken.token_hash == token_hash)) is None:
        raise DomainError(ErrorCode.NOT_FOUND, "No such token exists.", ["token"])
    return await _revoke(session, ApiToken.token_hash == token_hash)


async def _revoke(session: AsyncSession, condition: Any) -> int:
    result = await session.execute(update(ApiToken).where(condition, ApiToken.revoked.is_(False)).values(revoked=True))
    _identities_changed(session)
    return int(result.rowcount)  # type: ignore[attr-defined]


async def set_disabled(session: AsyncSession, *, actor: Actor, user_id: str, disabled: bool) -> User:
    """Admin: disable a user (none of their tokens works, they cannot log in, and they no
    longer count as a holder of grantPermission, nor make their groups count), or enable them
    again (their unexpired, unrevoked tokens work again). Refused for oneself, and
    (LAST_GRANT_HOLDER) when some resource would be left with nobody who may grant on it."""
    _require_admin(actor, "disable or enable users")
    if user_id == actor.user_id and disabled:
        raise DomainError(ErrorCode.NOT_ALLOWED, "You may not disable yourself.", ["userId"])
    user = await session.get(User, user_id, with_for_update=_NO_KEY_UPDATE)
    if user is None:
        raise not_found("user", user_id, "userId")
    if user.disabled == disabled:
        return user
    parties = [user_id]
    if disabled:
        # Their groups' rows first (as removing a member does), then the grants they reach.
        memberships = select(GroupMember.group_id).where(GroupMember.user_id == user_id)
        parties += await session.scalars(
            select(Group.id).where(Group.id.in_(memberships)).order_by(Group.id).with_for_update(key_share=True)
        )
        await permissions.lock_grant_holders(session, permissions.resources_granted_to(parties))
    user.disabled = disabled
    await session.flush()
    if disabled:
        await permissions.require_grant_holders_remain(session, party_ids=parties)
    _identities_changed(session)
    return user


def _require_admin(actor: Actor, what: str) -> None:
    if not actor.is_admin:
        raise DomainError(ErrorCode.NOT_ALLOWED, f"Only an admin may {what}.")


# Built once: every HTTP request authenticates, and building the statement cost as much as running it.
# Revoked tokens and disabled users are read too, so that a refusal can say why in the same query.
_AUTHENTICATE = (
    select(
        User.id,
        User.login,
        User.is_admin,
        User.disabled,
        ApiToken.expires_at,
        ApiToken.revoked,
        ApiToken.id.label("token_id"),
        ApiToken.name,
        ApiToken.scopes,
        GroupMember.group_id,
    )
    .join(ApiToken, ApiToken.user_id == User.id)
    .outerjoin(GroupMember, GroupMember.user_id == User.id)
    .where(ApiToken.token_hash == bindparam("token_hash"))
)


def _token_actor(row: Any, groups: list[str]) -> Actor:
    """The actor of a token's row: its user and groups, and, for an API token (one with a name),
    the token itself: its id, its name and the highest of its scopes, which narrow what it may do."""
    return Actor(
        user_id=row.id,
        login=row.login,
        is_admin=row.is_admin,
        expires_at=as_utc(row.expires_at),
        party_ids=frozenset([row.id, *groups]),
        token_id=row.token_id if row.name is not None else None,
        via=row.name,
        scope=str(highest(row.scopes.split(","))) if row.scopes else None,
    )


async def check_token(
    session: AsyncSession | AsyncConnection, token: str, *, now: datetime | None = None
) -> "Actor | TokenProblem":
    """The actor a bearer token stands for, or why it stands for none: one query, none at all
    for a value that is not a token's shape."""
    problem = token_shape_problem(token)
    if problem is not None:
        return problem
    now = now or utcnow()
    rows = (await session.execute(_AUTHENTICATE, {"token_hash": _token_hash(token)})).all()
    if not rows:
        return TokenProblem.UNKNOWN
    row, groups = rows[0], [r.group_id for r in rows if r.group_id]
    if row.revoked:
        return TokenProblem.REVOKED
    if row.disabled:
        return TokenProblem.DISABLED
    if row.expires_at <= now:
        return TokenProblem.EXPIRED
    return _token_actor(row, groups)


async def authenticate(
    session: AsyncSession | AsyncConnection, token: str, *, now: datetime | None = None
) -> Actor | None:
    """The actor a bearer token stands for, or None if it is unknown, revoked or expired."""
    checked = await check_token(session, token, now=now)
    return checked if isinstance(checked, Actor) else None


async def token_problems(
    session: AsyncSession | AsyncConnection, tokens: list[str], *, now: datetime | None = None
) -> dict[str, TokenProblem]:
    """Why each of ``tokens`` (which ``authenticate`` refused) does not authenticate, in one
    query. Asked only after a refusal, so the valid path keeps its single query."""
    now = now or utcnow()
    problems = {t: problem for t in tokens if (problem := token_shape_problem(t)) is not None}
    by_hash = {_token_hash(t): t for t in tokens if t not in problems}
    if by_hash:
        rows = await session.execute(
            select(ApiToken.token_hash, ApiToken.revoked, ApiToken.expires_at, User.disabled)
            .join(User, User.id == ApiToken.user_id)
            .where(ApiToken.token_hash.in_(by_hash))
        )
        for row in rows:
            problems[by_hash[row.token_hash]] = (
                TokenProblem.REVOKED
                if row.revoked
                else TokenProblem.DISABLED
                if row.disabled
                else TokenProblem.EXPIRED
                if as_utc(row.expires_at) <= now
                else TokenProblem.UNKNOWN  # valid now: it changed since the refusal; ask again
            )
    return {t: problems.get(t, TokenProblem.UNKNOWN) for t in tokens}


async def authenticate_many(
    session: AsyncSession, tokens: list[str], *, now: datetime | None = None
) -> dict[str, Actor]:
    """Every still-valid token among ``tokens`` with its actor, in two queries (for re-checking
    all live connections at once)."""
    now = now or utcnow()
    by_hash = {_token_hash(t): t for t in tokens}
    rows = (
        await session.execute(
            select(
                ApiToken.token_hash,
                ApiToken.expires_at,
                ApiToken.id.label("token_id"),
                ApiToken.name,
                ApiToken.scopes,
                User.id,
                User.login,
                User.is_admin,
            )
            .join(User, User.id == ApiToken.user_id)
            .where(ApiToken.token_hash.in_(by_hash), ApiToken.revoked.is_(False), User.disabled.is_(False))
        )
    ).all()
    rows = [r for r in rows if r.expires_at > now]
    groups: dict[str, list[str]] = {}
    for group_id, user_id in await session.execute(
        select(GroupMember.group_id, GroupMember.user_id).where(GroupMember.user_id.in_({r.id for r in rows}))
    ):
        groups.setdefault(user_id, []).append(group_id)
    return {by_hash[r.token_hash]: _token_actor(r, groups.get(r.id, [])) for r in rows}


async def actor_for(session: AsyncSession, *, user_id: str, login: str, is_admin: bool) -> Actor:
    group_ids = (await session.scalars(select(GroupMember.group_id).where(GroupMember.user_id == user_id))).all()
    return Actor(user_id=user_id, login=login, is_admin=is_admin, party_ids=frozenset([user_id, *group_ids]))


async def actor_by_login(session: AsyncSession, login: str) -> Actor:
    user = await session.scalar(select(User).where(User.login == login))
    if user is None:
        raise DomainError(ErrorCode.NOT_FOUND, f"No user with login {login!r}.", ["login"])
    return await actor_for(session, user_id=user.id, login=user.login, is_admin=user.is_admin)


async def create_token(session: AsyncSession, *, user_id: str, ttl_seconds: int) -> str:
    """Issue a token without a password (operator use: the demo token printed by `make serve`)."""
    token = issue_token_value()
    session.add(
        ApiToken(
            id=new_id("tok"),
            user_id=user_id,
            token_hash=_token_hash(token),
            expires_at=utcnow() + timedelta(seconds=ttl_seconds),
        )
    )
    await session.flush()
    return token
