"""Retry policy: bounded attempts, exponential backoff, full jitter.

Full jitter (a delay drawn uniformly between 0 and the exponential bound) spreads the retries
of many jobs that failed together, e.g. when a receiver came back, instead of sending them all
at the same instants again.
"""

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``max_attempts`` runs in all; after attempt n fails transiently the next is due within
    ``min(max_delay, initial_delay * multiplier ** (n - 1))`` seconds (all of it without jitter)."""

    max_attempts: int = 5
    initial_delay: float = 1.0
    multiplier: float = 2.0
    max_delay: float = 60.0
    jitter: bool = True

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.initial_delay < 0 or self.multiplier < 1 or self.max_delay < 0:
            raise ValueError("a retry policy needs max_attempts >= 1, delays >= 0 and multiplier >= 1")

    def bound(self, attempt: int) -> float:
        """The longest delay after failed attempt ``attempt`` (1-based)."""
        return min(self.max_delay, self.initial_delay * self.multiplier ** max(attempt - 1, 0))

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """The delay before the attempt after ``attempt``."""
        bound = self.bound(attempt)
        return (rng or _RNG).uniform(0.0, bound) if self.jitter else bound

    def exhausted(self, attempts: int) -> bool:
        return attempts >= self.max_attempts


DEFAULT_POLICY = RetryPolicy()
_RNG = random.Random()

__all__ = ["DEFAULT_POLICY", "RetryPolicy"]
