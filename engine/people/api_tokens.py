"""API tokens: named, scoped, revocable bearer tokens for machines (and people's scripts).

A token is a row of ``api_token`` with a ``name`` (a login's session token has none). Its secret
is shown once, when it is made, and stored as its plain SHA-256: the secret is 256 random bits
(``identity.issue_token_value``), so no guess or precomputed table reaches it and a slow or keyed
hash would add nothing but a cost on every request; a plain hash keeps the lookup one indexed
equality, the same as a session token's.

Scopes only narrow what the token's user may do (engine/people/scopes.py).
"""

from datetime import datetime, timedelta

from sqlalchemy import func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from engine.errors import DomainError, ErrorCode, not_found
from engine.people.actors import Actor
from engine.people.identity import _identities_changed
from engine.people.scopes import LEVEL, Scope
from engine.people.token_values import issue_token_value
from engine.people.token_values import token_hash as _token_hash
from engine.validation import require_text
from models import ApiToken, User, as_utc, new_id

MAX_NAME = 64
MAX_TOKENS_PER_USER = 50  # unrevoked ones, expired included: revoke one to make room
DEFAULT_LIFETIME = timedelta(days=90)
MAX_LIFETIME = timedelta(days=366)
# How often a token's lastUsedAt is written: at most once a minute per token.
USE_RESOLUTION = timedelta(minutes=1)


def _check_scopes(scopes: list[str]) -> list[str]:
    if not scopes:
        raise DomainError(ErrorCode.INVALID_INPUT, "Give at least one scope: READ, EXECUTE or WRITE.", ["scopes"])
    return sorted({Scope(s) for s in scopes}, key=LEVEL.__getitem__)


def _check_expiry(actor: Actor, expires_at: datetime | None, now: datetime) -> datetime:
    try:  # a time without an offset is UTC, as everywhere
        expires_at = now + DEFAULT_LIFETIME if expires_at is None else as_utc(expires_at)
    except OverflowError:
        raise DomainError(ErrorCode.INVALID_INPUT, "expiresAt is out of range.", ["expiresAt"]) from None
    if expires_at <= now:
        raise DomainError(ErrorCode.INVALID_INPUT, "expiresAt must be in the future.", ["expiresAt"])
    if expires_at > now + MAX_LIFETIME:
        raise DomainError(
            ErrorCode.INVALID_INPUT,
            f"A token lives at most {MAX_LIFETIME.days} days: expiresAt is too far ahead.",
            ["expiresAt"],
        )
    # Tokens are made by a signed-in person, never through another API token: a token made that
    # way would live on after the one that made it is revoked (nothing links them).
    if actor.token_id is not None:
        raise DomainError(
            ErrorCode.NOT_ALLOWED,
            "API tokens are made by a signed-in person, not through another API token: revoking that token "
            "would not end the ones it made.",
            [],
        )
    return expires_at


async def _target_user(session: AsyncSession, actor: Actor, user_id: str) -> User:
    """The user whose tokens ``actor`` manages: themselves, or anyone for an admin. Locked (no key
    update), so two creations for one user count the tokens one after the other."""
    user = await session.get(User, user_id, with_for_update={"key_share": True})
    if user is None:
        raise not_found("user", user_id, "userId")
    if user.id != actor.user_id and not actor.is_admin:
        raise DomainError(ErrorCode.NOT_ALLOWED, "Only an admin may manage another user's API tokens.", ["userId"])
    return user


async def create_api_token(
    session: AsyncSession,
    *,
    actor: Actor,
    user_id: str,
    name: str,
    scopes: list[str],
    expires_at: datetime | None,
    now: datetime,
) -> tuple[str, ApiToken]:
    """A new API token for ``user_id`` (the actor themselves, or anyone for an admin): its secret,
    returned this once, and its row. Names are unique among a user's unrevoked tokens, so an
    entry's ``via`` names one of them."""
    user = await _target_user(session, actor, user_id)
    name = require_text(name, "name", max_len=MAX_NAME)
    given = _check_scopes(scopes)
    expires_at = _check_expiry(actor, expires_at, now)
    live = ApiToken.user_id == user.id, ApiToken.name.is_not(None), ApiToken.revoked.is_(False)
    if await session.scalar(select(ApiToken.id).where(*live, ApiToken.name == name)) is not None:
        raise DomainError(ErrorCode.ALREADY_EXISTS, f"{user.login} already has an API token named {name!r}.", ["name"])
    if (await session.scalar(select(func.count()).select_from(ApiToken).where(*live)) or 0) >= MAX_TOKENS_PER_USER:
        raise DomainError(
            ErrorCode.INVALID_INPUT,
            f"A user has at most {MAX_TOKENS_PER_USER} API tokens: revoke one (expired ones count too) first.",
            ["userId"],
        )
    secret = issue_token_value()
    token = ApiToken(
        id=new_id("tok"),
        user_id=user.id,
        token_hash=_token_hash(secret),
        expires_at=expires_at,
        name=name,
        scopes=",".join(given),
        created_at=now,
    )
    session.add(token)
    await session.flush()
    return secret, token


async def api_tokens(session: AsyncSession, *, actor: Actor, user_id: str) -> list[ApiToken]:
    """``user_id``'s unrevoked API tokens (expired ones too), newest first: the actor's own, or
    anyone's for an admin; anybody else's are hidden (an empty list)."""
    if user_id != actor.user_id and not actor.is_admin:
        return []
    return list(
        await session.scalars(
            select(ApiToken)
            .where(ApiToken.user_id == user_id, ApiToken.name.is_not(None), ApiToken.revoked.is_(False))
            .order_by(ApiToken.created_at.desc(), ApiToken.id.desc())
            .limit(MAX_TOKENS_PER_USER)
        )
    )


async def revoke_api_token(session: AsyncSession, *, actor: Actor, id: str) -> str:
    """Revoke an unrevoked API token of the actor's (anyone's, for an admin). Takes effect at once:
    the committer forgets the remembered actors and live connections are checked again. Another
    user's token is not found, as one that does not exist."""
    token = await session.get(ApiToken, id, with_for_update=True)
    if token is None or token.name is None or token.revoked or (token.user_id != actor.user_id and not actor.is_admin):
        raise not_found("API token", id, "id")
    token.revoked = True
    await session.flush()
    _identities_changed(session)
    return token.id


async def note_use(connection: AsyncSession | AsyncConnection, *, token_id: str, at: datetime) -> None:
    """Record that the token was used at ``at``, unless a use less than a minute before was
    recorded (by this process or another): the caller asks at most once a minute per token, and
    the condition keeps several processes from moving it more often. Changes nobody's identity:
    migration 0022 keeps this column's updates from making the servers forget remembered actors."""
    await connection.execute(
        update(ApiToken)
        .where(
            ApiToken.id == token_id,
            or_(ApiToken.last_used_at.is_(None), ApiToken.last_used_at <= at - USE_RESOLUTION),
        )
        .values(last_used_at=at)
    )


__all__ = [
    "DEFAULT_LIFETIME",
    "MAX_LIFETIME",
    "MAX_NAME",
    "MAX_TOKENS_PER_USER",
    "USE_RESOLUTION",
    "api_tokens",
    "create_api_token",
    "note_use",
    "revoke_api_token",
]
