"""Logging in: throttled, and the slow password hash outside every database transaction.

A login reads (the throttle's counters and the user) in a read session that it closes, waits
the throttle's delay, checks the password in a thread, and only then opens a short write
transaction: to issue the token, or to count the failure. On SQLite, whose single writer is
serialized in-process, a login therefore never makes a write wait for its hash.
"""

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from engine import identity, throttle
from engine.errors import DomainError
from models import User, utcnow
from resolvers.context import Context
from resolvers.errors import UserErrorRow, user_errors

# The clock and the wait of the throttle; tests replace them (module attributes, read at call time).
clock: Callable[[], datetime] = utcnow
sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep


def policy(settings: Any) -> throttle.LoginPolicy:
    return throttle.LoginPolicy(
        free_failures=settings.login_free_failures,
        max_delay=settings.login_max_delay,
        lockout_failures=settings.login_lockout_failures,
        lockout_seconds=settings.login_lockout_seconds,
    )


def client_address(ctx: Context) -> str | None:
    """The address the request came from (starlette's ``request.client``; behind a proxy, what
    uvicorn's ``--proxy-headers`` made of X-Forwarded-For from a trusted proxy)."""
    client = getattr(ctx.request, "client", None)
    return getattr(client, "host", None)


async def login(ctx: Context, *, login: str, password: str) -> tuple[tuple[str, User] | None, list[UserErrorRow]]:
    """A new bearer token for ``login`` and ``password``, or the userErrors saying why not."""
    rules = policy(ctx.settings)
    keys = throttle.keys_for(login=login, address=client_address(ctx))
    try:
        async with ctx.db.read_session() as session:
            attempt = await throttle.check(session, keys=keys, policy=rules, now=clock())
            user = await identity.find_user(session, login=login)
        if attempt.delay:
            await sleep(attempt.delay)
        ok = await identity.password_matches(user, password)
        async with ctx.db.transaction() as session:
            if not ok:
                await throttle.record_failure(session, attempt=attempt, policy=rules, now=clock())
            else:
                assert user is not None  # password_matches is False without a user
                await throttle.record_success(session, attempt=attempt)
                token = await identity.create_token(session, user_id=user.id, ttl_seconds=ctx.settings.token_ttl)
    except DomainError as error:
        return None, user_errors(error)
    if not ok:
        return None, user_errors(identity.invalid_credentials())
    return (token, user), []
