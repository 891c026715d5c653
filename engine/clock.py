"""The process's one source of "now": ``SYSTEM_CLOCK.now()``, the system clock in a server. The
engine's defaults (a verb given no ``now=``), the deputies' questions, the login throttle, the
due dates, the sweeper and the job runner all read it, so a test moves time in one place
(``monkeypatch.setattr(SYSTEM_CLOCK, "now", clock.now)`` with a ``SettableClock``) instead of
patching each module's own. Engine verbs still take ``now=``: a caller passes ``SYSTEM_CLOCK.now()``
(or a fixed time: ``runDueTimers(now:)``)."""

from datetime import datetime, timedelta
from typing import Protocol

from models import utcnow


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return utcnow()


class SettableClock:
    """A clock that stands still until a test moves it."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or utcnow()

    def now(self) -> datetime:
        return self._now

    def set(self, when: datetime) -> None:
        self._now = when

    def advance(self, seconds: float) -> datetime:
        self._now += timedelta(seconds=seconds)
        return self._now


SYSTEM_CLOCK = SystemClock()

__all__ = ["SYSTEM_CLOCK", "Clock", "SettableClock", "SystemClock"]
