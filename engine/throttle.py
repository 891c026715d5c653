"""Failed logins slow down, then stop, whoever keeps guessing.

Failures are counted in the database (``login_attempt``), per login name and per client
address, so every server process throttles the same guesser. After ``free_failures`` an
attempt waits before its password is checked, twice as long after each further failure, up to
``max_delay``; at ``lockout_failures`` the key is locked for ``lockout_seconds``, during which
every attempt is refused with TOO_MANY_ATTEMPTS, even with the right password (the password
is not checked, so a locked key tells a guesser nothing). Failures older than
``lockout_seconds`` are forgotten, so a lockout's end starts the count over. A successful
login forgets its login name's failures, not its address's: a guesser who owns one account
could otherwise clear the address's count between guesses.

Unknown login names are counted like known ones, so the answers do not tell which exist. The
caller passes ``now`` and does the waiting, so tests replace both.
"""

import hashlib
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, case, delete, literal, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine.errors import DomainError, ErrorCode
from models import LoginAttempt
from models.db import insert_for
from models.types import UTCDateTime

# The delay of the first failure past the free ones; it doubles with each further failure.
FIRST_DELAY = 0.25
# Keys stay short however long the login name sent: a longer name cannot exist (64 at most).
_MAX_KEY_TEXT = 64


@dataclass(frozen=True, slots=True)
class LoginPolicy:
    """The throttling settings (``server/settings.py``: ``login_*``)."""

    free_failures: int = 5
    max_delay: float = 2.0
    lockout_failures: int = 20
    lockout_seconds: int = 900

    def delay_after(self, failures: int) -> float:
        """Seconds an attempt waits after ``failures`` recent failures of its keys."""
        if failures < self.free_failures:
            return 0.0
        return min(self.max_delay, FIRST_DELAY * 2 ** min(failures - self.free_failures, 32))


@dataclass(frozen=True, slots=True)
class Attempt:
    """What the throttle knows before a password is checked."""

    keys: tuple[str, ...]
    delay: float  # seconds to wait before checking the password
    counted: frozenset[str] = field(default_factory=frozenset)  # keys with recent failures


def keys_for(*, login: str, address: str | None) -> tuple[str, ...]:
    """The counters an attempt is charged to: its login name and, if known, its client address."""
    keys = [f"login:{_bounded(login)}"]
    if address:
        keys.append(f"address:{_bounded(address)}")
    return tuple(keys)


def _bounded(text: str) -> str:
    if len(text) <= _MAX_KEY_TEXT:
        return text
    return "sha256:" + hashlib.sha256(text.encode(errors="replace")).hexdigest()


async def check(session: AsyncSession, *, keys: tuple[str, ...], policy: LoginPolicy, now: datetime) -> Attempt:
    """Before a password is checked: refuse while any of ``keys`` is locked, else say how long
    the attempt must wait. One read."""
    rows = (
        await session.scalars(
            select(LoginAttempt).where(LoginAttempt.key.in_(keys), LoginAttempt.last_failure_at > now - _window(policy))
        )
    ).all()
    locked = [row.locked_until for row in rows if row.locked_until is not None and row.locked_until > now]
    if locked:
        raise too_many_attempts(until=max(locked), now=now)
    failures = max((row.failures for row in rows), default=0)
    return Attempt(keys=keys, delay=policy.delay_after(failures), counted=frozenset(row.key for row in rows))


async def record_failure(session: AsyncSession, *, attempt: Attempt, policy: LoginPolicy, now: datetime) -> None:
    """Count a failed attempt against each of its keys, locking those that reach the lockout.
    Two statements: forget stale counters, then one upsert for all keys (concurrent failures
    of one key add up: the increment happens in the database)."""
    await session.execute(delete(LoginAttempt).where(LoginAttempt.last_failure_at <= now - _window(policy)))
    lock_until = now + _window(policy)
    insert = insert_for(session)
    statement = insert(LoginAttempt).values(
        [
            {
                "key": key,
                "failures": 1,
                "last_failure_at": now,
                "locked_until": lock_until if policy.lockout_failures <= 1 else None,
            }
            for key in attempt.keys
        ]
    )
    failures = LoginAttempt.failures + 1
    await session.execute(
        statement.on_conflict_do_update(
            index_elements=[LoginAttempt.key],
            set_={
                "failures": failures,
                "last_failure_at": now,
                "locked_until": _when(failures >= policy.lockout_failures, lock_until, LoginAttempt.locked_until),
            },
        )
    )


def _when(condition: ColumnElement[bool], then: datetime, otherwise: object) -> ColumnElement[datetime | None]:
    return case((condition, literal(then, UTCDateTime())), else_=otherwise)


async def record_success(session: AsyncSession, *, attempt: Attempt) -> None:
    """Forget the login name's failures (not the address's); nothing to do if it had none."""
    login_key = attempt.keys[0]
    if login_key in attempt.counted:
        await session.execute(delete(LoginAttempt).where(LoginAttempt.key == login_key))


def too_many_attempts(*, until: datetime, now: datetime) -> DomainError:
    seconds = max(1, math.ceil((until - now).total_seconds()))
    wait = f"{seconds} seconds" if seconds < 120 else f"{math.ceil(seconds / 60)} minutes"
    return DomainError(
        ErrorCode.TOO_MANY_ATTEMPTS,
        f"Too many failed logins; try again in {wait} (after {until.strftime('%Y-%m-%d %H:%M:%S')} UTC).",
        ["login"],
    )


def _window(policy: LoginPolicy) -> timedelta:
    return timedelta(seconds=policy.lockout_seconds)
