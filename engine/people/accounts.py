"""Changing an existing account: an admin edits a user's names and resets their password.

Creating users, their tokens and disabling them is engine/people/identity.py's; where a user's
email goes and in which time zone is engine/notify/delivery.py's (``setNotificationDelivery``,
which an admin may call for anyone).
"""

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from engine.errors import DomainError, ErrorCode, not_found
from engine.people.actors import Actor
from engine.people.identity import UserKind, _require_admin, _revoke
from engine.people.passwords import hash_password
from engine.validation import optional_text, require_text
from models import ApiToken, User, kind_of

# A password's bounds: the same floor as createUser's, and a ceiling so one request cannot make
# the server hash megabytes.
MIN_PASSWORD = 8
MAX_PASSWORD = 200

UNSET: Any = object()


async def _user(session: AsyncSession, user_id: str) -> User:
    user = await session.get(User, user_id, with_for_update=True) if kind_of(user_id) == "User" else None
    if user is None:
        raise not_found("user", user_id, "userId")
    return user


async def update_user(
    session: AsyncSession,
    *,
    actor: Actor,
    user_id: str,
    display_name: Any = UNSET,
    organization: Any = UNSET,
) -> User:
    """Admin: a user's display name (not blank, at most 200 characters) and organization (at most
    200; empty: none). An argument left out keeps its value. The login never changes: others
    type it and it names the user in logs."""
    _require_admin(actor, "edit users")
    user = await _user(session, user_id)
    if display_name is not UNSET:
        user.display_name = require_text(display_name, "displayName")
    if organization is not UNSET:
        user.organization = optional_text((organization or "").strip(), "organization", max_len=200)
    await session.flush()
    return user


async def reset_password(session: AsyncSession, *, actor: Actor, user_id: str, password: str) -> User:
    """Admin: give a person a new password (8 to 200 characters). Every session of theirs signed
    in with the old one ends at once (their login tokens are revoked; API tokens keep working: an
    integration is not a session). Refused for a service user, which has no password."""
    _require_admin(actor, "reset passwords")
    user = await _user(session, user_id)
    if user.kind == UserKind.SERVICE:
        raise DomainError(ErrorCode.INVALID_INPUT, "A service user has no password: it uses API tokens.", ["userId"])
    if not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        raise DomainError(
            ErrorCode.INVALID_INPUT,
            f"A password has at least {MIN_PASSWORD} and at most {MAX_PASSWORD} characters.",
            ["password"],
        )
    user.password_hash = hash_password(password)
    await _revoke(session, (ApiToken.user_id == user.id) & ApiToken.name.is_(None))  # type: ignore[union-attr]
    await session.flush()
    return user
