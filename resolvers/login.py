"""Logging in: charged to the throttle first, and the slow password hash outside every
database transaction.

A login first charges its attempt to the throttle's counters and reads the user, in one short
write transaction that it commits; a refused attempt ends there. It then waits the throttle's
delay, checks the password in a thread (refused at once if too many checks are pending), and,
only on success, opens a second short transaction to give the charge back and issue the token.
On SQLite, whose single writer is serialized in-process, a login therefore never makes a write
wait for its hash; and since the charge comes before the check, concurrent guesses cannot all
pass on one stale count.
"""

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from engine.clock import SYSTEM_CLOCK
from engine.errors import DomainError
from engine.people import identity, passwords, throttle
from models import User
from resolvers.context import Context
from resolvers.errors import UserErrorRow, user_errors

# The wait of the throttle; tests replace it (a module attribute, read at call time). Its time
# is the process's one clock (engine/clock.py), which tests move as they move every other.
sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep


def policy(settings: Any) -> throttle.LoginPolicy:
    return throttle.LoginPolicy(
        free_failures=settings.login_free_failures,
        max_delay=settings.login_max_delay,
        lockout_failures=settings.login_lockout_failures,
        address_lockout_failures=settings.login_address_lockout_failures,
        lockout_seconds=settings.login_lockout_seconds,
    )


def client_address(ctx: Context) -> str | None:
    """The address the request came from (starlette's ``request.client``; behind a proxy, what
    uvicorn's ``--proxy-headers`` made of X-Forwarded-For from a trusted proxy)."""
    client = getattr(ctx.request, "client", None)
    return getattr(client, "host", None)


async def login(ctx: Context, *, login: str, password: str) -> tuple[tuple[str, User] | None, list[UserErrorRow]]:
    """A new bearer token for ``login`` and ``password``, or the userErrors saying why not."""
    keys = throttle.keys_for(login=login, address=client_address(ctx))
    now = SYSTEM_CLOCK.now()
    try:
        async with ctx.db.transaction() as session:
            charged = await throttle.charge(session, keys=keys, policy=policy(ctx.settings), now=now)
            user = None if charged.locked_until else await identity.find_user(session, login=login)
        if charged.locked_until:
            raise throttle.too_many_attempts(until=charged.locked_until, now=now)
        if charged.delay:
            await sleep(charged.delay)
        identity.require_may_log_in(user)
        if not await passwords.password_matches(user, password, max_pending=ctx.settings.login_max_password_checks):
            raise passwords.invalid_credentials()
        assert user is not None  # password_matches is False without a user
        async with ctx.db.transaction() as session:
            await throttle.refund(session, keys=keys)
            token = await identity.create_token(session, user_id=user.id, ttl_seconds=ctx.settings.token_ttl)
    except DomainError as error:
        return None, user_errors(error)
    return (token, user), []
