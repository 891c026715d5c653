"""The one source of "now" for whatever acts on its own (the timer sweeper): the system clock in
a server, a clock the test sets. Engine verbs still take ``now=``: a caller passes
``clock.now()``, so a test replaces time in one place instead of patching ``utcnow``."""

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
