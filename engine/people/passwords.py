"""Passwords: scrypt hashes, and their checks kept off the event loop and bounded.

A login's password check costs tens of milliseconds of CPU, so it runs in a small thread pool
of its own, and a burst of logins is refused beyond a bound instead of queueing without end
(``password_matches``); engine/people/identity.py signs users in with it.
"""

import asyncio
import base64
import hashlib
import hmac
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from engine.errors import DomainError, ErrorCode
from models import User

__all__ = [
    "hash_password",
    "invalid_credentials",
    "password_matches",
    "pending_password_checks",
    "server_busy",
    "verify_password",
]

# scrypt cost: 2**14 x 8 x 1 is the interactive-login setting recommended by its author.
_SCRYPT_N, _SCRYPT_R, _SCRYPT_P = 2**14, 8, 1


def hash_password(password: str) -> str:
    salt = os.urandom(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=_SCRYPT_N, r=_SCRYPT_R, p=_SCRYPT_P)
    b64 = base64.b64encode
    return f"scrypt${_SCRYPT_N}${_SCRYPT_R}${_SCRYPT_P}${b64(salt).decode()}${b64(digest).decode()}"


def verify_password(password: str, stored: str) -> bool:
    try:
        _, n, r, p, salt, digest = stored.split("$")
        expected = base64.b64decode(digest)
        actual = hashlib.scrypt(password.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(expected, actual)


# Password checks run here, never on the event loop, and at most one fewer at a time than
# there are CPUs: eight clients guessing at once must not take every core from the requests.
_HASHING = ThreadPoolExecutor(max_workers=max(1, (os.cpu_count() or 2) - 1), thread_name_prefix="caseway-hash")


class _PendingChecks:
    """How many password checks are queued or running in ``_HASHING``. A check is counted until
    its job ends or is cancelled before it started (a done callback, from whichever thread
    finishes it), not until its caller stops waiting: a job whose client went away still
    occupies the pool."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def take(self, limit: int) -> bool:
        with self._lock:
            if self.count >= limit:
                return False
            self.count += 1
            return True

    def give_back(self, _job: object = None) -> None:
        with self._lock:
            self.count -= 1


_PENDING = _PendingChecks()


def pending_password_checks() -> int:
    """Password checks queued or running in this process (for tests and monitoring)."""
    return _PENDING.count


async def password_matches(user: User | None, password: str, *, max_pending: int) -> bool:
    """Whether ``password`` is ``user``'s. scrypt takes tens of milliseconds of CPU: it runs in
    a thread of its own (``_HASHING``), so the event loop keeps serving meanwhile. At most
    ``max_pending`` checks wait or run at once: beyond that the check is refused at once
    (``server_busy``) instead of queueing work that a burst of logins could make endless. An
    unknown login is checked against a dummy hash, so the time taken does not reveal which
    logins exist; a disabled user's password is checked too, and never matches."""
    if not _PENDING.take(max_pending):
        raise server_busy()
    stored = user.password_hash if user else _DUMMY_HASH
    try:
        job = _HASHING.submit(verify_password, password, stored)
    except BaseException:
        _PENDING.give_back()
        raise
    job.add_done_callback(_PENDING.give_back)
    ok = await asyncio.wrap_future(job)  # cancelling the wait cancels the job if it has not started
    return ok and user is not None and not user.disabled


def server_busy() -> DomainError:
    return DomainError(
        ErrorCode.TOO_MANY_ATTEMPTS,
        "The server is busy checking other logins; try again in a few seconds.",
        ["login"],
    )


def invalid_credentials() -> DomainError:
    return DomainError(ErrorCode.INVALID_CREDENTIALS, "Login or password is wrong.", ["login"])


_DUMMY_HASH = hash_password("not a real password")
