"""Failed logins slow down, then stop, whoever keeps guessing — without letting a guesser lock
out someone else.

Every attempt is charged to three counters in the database (``login_attempt``), so every
server process throttles the same guesser:

- ``login:<name>``: every attempt at this login name, from anywhere. It only **delays**:
  a login name is never locked, or anyone could lock anyone out by guessing their password.
- ``pair:<name>|<address>``: attempts at this login name from this address. At
  ``lockout_failures`` it **locks**: further attempts from that address at that name are refused.
- ``address:<address>``: attempts from this address at any name (password spraying). At
  ``address_lockout_failures`` (higher: many people may share an address) it locks the address
  for every name.

An address is the client's IPv4 address, or the /64 network of its IPv6 address (one
subscriber usually holds a whole /64, so rotating inside it gains nothing). A request whose
address is unknown counts as the address ``unknown``.

After ``free_failures`` recent failures of any of its counters an attempt waits before its
password is checked, twice as long after each further failure, up to ``max_delay``. A locked
counter refuses every attempt with TOO_MANY_ATTEMPTS for ``lockout_seconds``, even with the
right password (the password is not checked, so a locked counter tells a guesser nothing);
then its count starts over. Failures older than ``lockout_seconds`` are forgotten.

The attempt is charged **before** its password is checked, in one atomic upsert that
increments every counter and returns the new counts: concurrent guesses each see the count
their own charge made, so a burst cannot slip past the lockout. A successful login gives its
charge back: it forgets the login name's and the pair's failures, and takes one off the
address's (not more: a guesser who owns one account could otherwise clear the address's count
between guesses). Unknown login names are counted like known ones, so the answers do not tell
which exist.

Counters of made-up names would pile up: each charge that starts a counter deletes at most
``CLEANUP_BATCH`` forgotten ones, found through the index on ``last_failure_at``.

The caller passes ``now`` and does the waiting, so tests replace both.
"""

import hashlib
import ipaddress
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, case, delete, literal, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from engine.errors import DomainError, ErrorCode
from models import LoginAttempt
from models.db import insert_for
from models.types import UTCDateTime

# The delay of the first failure past the free ones; it doubles with each further failure.
FIRST_DELAY = 0.25
# Keys stay short however long the login name sent: a longer name cannot exist (64 at most).
_MAX_KEY_TEXT = 64
# Forgotten counters deleted, at most, by a charge that starts a counter (bounded work per login).
CLEANUP_BATCH = 100
# IPv6 addresses are counted by their network of this many bits.
IPV6_PREFIX = 64
UNKNOWN_ADDRESS = "unknown"


@dataclass(frozen=True, slots=True)
class LoginPolicy:
    """The throttling settings (``server/settings.py``: ``login_*``)."""

    free_failures: int = 5
    max_delay: float = 2.0
    lockout_failures: int = 20
    address_lockout_failures: int = 100
    lockout_seconds: int = 900

    def delay_after(self, failures: int) -> float:
        """Seconds an attempt waits after ``failures`` recent failures of its keys."""
        if failures < self.free_failures:
            return 0.0
        return min(self.max_delay, FIRST_DELAY * 2 ** min(failures - self.free_failures, 32))


@dataclass(frozen=True, slots=True)
class Keys:
    """The counters one attempt is charged to."""

    login: str
    pair: str
    address: str

    def lockouts(self, policy: LoginPolicy) -> dict[str, int]:
        """The counters that lock, and at how many failures (the login name's only delays)."""
        return {self.pair: policy.lockout_failures, self.address: policy.address_lockout_failures}

    def in_lock_order(self) -> list[str]:
        # One order for every attempt: concurrent upserts of shared keys never deadlock.
        return sorted((self.login, self.pair, self.address))


@dataclass(frozen=True, slots=True)
class Charge:
    """What charging an attempt decided, before its password is checked."""

    keys: Keys
    delay: float  # seconds to wait before checking the password
    locked_until: datetime | None  # set: refuse the attempt (TOO_MANY_ATTEMPTS) without checking


def keys_for(*, login: str, address: str | None) -> Keys:
    """The counters of an attempt at ``login`` from the client address ``address``."""
    name, where = _bounded(login), address_key(address)
    return Keys(login=f"login:{name}", pair=f"pair:{name}|{where}", address=f"address:{where}")


def address_key(address: str | None) -> str:
    """How an address is counted: IPv4 as is, IPv6 by its /64 (an IPv4-mapped IPv6 address as
    its IPv4 address), anything else (a Unix socket's name) as its text."""
    if not address:
        return UNKNOWN_ADDRESS
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return _bounded(address)
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, IPV6_PREFIX), strict=False))
    return str(parsed)


def _bounded(text: str) -> str:
    if len(text) <= _MAX_KEY_TEXT:
        return text
    return "sha256:" + hashlib.sha256(text.encode(errors="replace")).hexdigest()


async def charge(session: AsyncSession, *, keys: Keys, policy: LoginPolicy, now: datetime) -> Charge:
    """Count an attempt against its keys before its password is checked, and decide from the
    new counts: refuse (a lock), or how long to wait. One upsert (INSERT … ON CONFLICT DO
    UPDATE … RETURNING): the increment happens in the database, so each of many concurrent
    attempts sees its own count. Plus, when it started a counter, one bounded cleanup.

    The caller commits before it acts on a refusal: the charge of a refused attempt counts too,
    and the lock's end, set by the charge that reached it, stays."""
    window = _window(policy)
    lock_until = now + window
    lockouts = keys.lockouts(policy)
    row = LoginAttempt
    # The counter goes on from its stored count while it is recent and not past a lock's end.
    fresh = and_(row.last_failure_at > now - window, or_(row.locked_until.is_(None), row.locked_until > now))
    failures = case((fresh, row.failures + 1), else_=1)
    threshold = case(lockouts, value=row.key, else_=None)  # NULL for the login name's key: never locks
    insert = insert_for(session)
    statement = (
        insert(LoginAttempt)
        .values(
            [
                {
                    "key": key,
                    "failures": 1,
                    "last_failure_at": now,
                    "locked_until": lock_until if key in lockouts and 1 > lockouts[key] else None,
                }
                for key in keys.in_lock_order()
            ]
        )
        .on_conflict_do_update(
            index_elements=[LoginAttempt.key],
            set_={
                "failures": failures,
                "last_failure_at": now,
                "locked_until": case(
                    (and_(fresh, row.locked_until.is_not(None)), row.locked_until),  # still locked: the end stays
                    (failures > threshold, literal(lock_until, UTCDateTime())),  # this attempt passes the lockout
                    else_=None,
                ),
            },
        )
        .returning(LoginAttempt.failures, LoginAttempt.locked_until)
    )
    counts = (await session.execute(statement)).all()
    if any(count.failures == 1 for count in counts):
        await _forget_stale(session, before=now - window)
    locks = [count.locked_until for count in counts if count.locked_until is not None]
    return Charge(
        keys=keys,
        delay=policy.delay_after(max(count.failures for count in counts) - 1),  # failures before this one
        locked_until=max(locks) if locks else None,
    )


async def _forget_stale(session: AsyncSession, *, before: datetime) -> None:
    """Delete at most CLEANUP_BATCH counters whose last failure is older than the window (by
    the index on ``last_failure_at``). Rows another transaction holds are skipped, not waited
    for (PostgreSQL): two cleanups must not wait for each other's upserted rows."""
    # Chosen once (a materialized CTE): as a subquery PostgreSQL may run it again for each row
    # the delete looks at, and a rerun skips the rows the delete has locked meanwhile and picks
    # others, so the LIMIT bounded nothing (every forgotten counter went at once, seen in a
    # test under load).
    stale = (
        select(LoginAttempt.key)
        .where(LoginAttempt.last_failure_at <= before)
        .limit(CLEANUP_BATCH)
        .with_for_update(skip_locked=True)
        .cte("stale")
        .prefix_with("MATERIALIZED", dialect="postgresql")
    )
    await session.execute(delete(LoginAttempt).where(LoginAttempt.key.in_(select(stale.c.key))))


async def refund(session: AsyncSession, *, keys: Keys) -> None:
    """After a successful login: forget the login name's and the pair's failures, and take this
    attempt's charge off the address's count (only that: see the module's docstring)."""
    await session.execute(delete(LoginAttempt).where(LoginAttempt.key.in_([keys.login, keys.pair])))
    await session.execute(
        update(LoginAttempt)
        .where(LoginAttempt.key == keys.address, LoginAttempt.failures > 0)
        .values(failures=LoginAttempt.failures - 1)
    )


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
