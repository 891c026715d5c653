"""The arithmetic of insights (engine/cases/insights.py), kept apart so that each figure is
computed one way: a percentile as PostgreSQL's ``percentile_cont`` computes it, throughput
buckets from days, whatever database the durations came from."""

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from enum import Enum


class Interval(Enum):
    DAY = "DAY"
    WEEK = "WEEK"
    MONTH = "MONTH"


@dataclass(frozen=True)
class Summary:
    """Seconds: the median, the 90th percentile (both interpolated, as ``percentile_cont``), the
    mean and the maximum of a set of durations."""

    count: int
    p50: float
    p90: float
    mean: float
    max: float


HOUR, DAY = 3600, 86400
# The cycle-time histogram's bins: each holds the durations below its bound and at or above the
# previous one's; the last bin (None) holds the rest.
CYCLE_BINS: tuple[int | None, ...] = (HOUR, 4 * HOUR, DAY, 3 * DAY, 7 * DAY, 14 * DAY, 30 * DAY, 90 * DAY, None)


def bin_of(seconds: float) -> int:
    """The index in ``CYCLE_BINS`` of the bin holding ``seconds``."""
    return next(n for n, bound in enumerate(CYCLE_BINS) if bound is None or seconds < bound)


def bin_counts(found: Mapping[int, int]) -> list[tuple[int | None, int]]:
    """(upper bound, count) for every bin, from counts by bin index."""
    return [(bound, found.get(n, 0)) for n, bound in enumerate(CYCLE_BINS)]


@dataclass(frozen=True)
class Bucket:
    start: datetime  # 00:00 UTC of the bucket's first day
    started: int
    completed: int


def percentile(ordered: Sequence[float], fraction: float) -> float:
    """``percentile_cont(fraction)`` of ascending values: the value at position
    ``fraction * (n - 1)``, interpolated linearly between its neighbours."""
    position = fraction * (len(ordered) - 1)
    low = math.floor(position)
    high = math.ceil(position)
    if low == high:
        return float(ordered[low])
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summarize(values: Iterable[float]) -> Summary | None:
    """The summary of ``values``; None when there are none."""
    ordered = sorted(values)
    if not ordered:
        return None
    return Summary(
        count=len(ordered),
        p50=percentile(ordered, 0.5),
        p90=percentile(ordered, 0.9),
        mean=math.fsum(ordered) / len(ordered),
        max=float(ordered[-1]),
    )


def bucket_start(day: date, interval: Interval) -> date:
    """The first day of the bucket holding ``day``: itself, its week's Monday (ISO weeks) or
    the first of its month."""
    if interval is Interval.WEEK:
        return day - timedelta(days=day.weekday())
    if interval is Interval.MONTH:
        return day.replace(day=1)
    return day


def _next(day: date, interval: Interval) -> date:
    if interval is Interval.DAY:
        return day + timedelta(days=1)
    if interval is Interval.WEEK:
        return day + timedelta(days=7)
    return (day.replace(day=28) + timedelta(days=4)).replace(day=1)


def buckets(
    interval: Interval, since: datetime, until: datetime, started: Mapping[date, int], completed: Mapping[date, int]
) -> list[Bucket]:
    """Every bucket from the one holding ``since`` to the one holding the window's last instant,
    each with the cases started and completed on its days (UTC); empty ones included."""
    first = bucket_start(since.astimezone(UTC).date(), interval)
    last = (until.astimezone(UTC) - timedelta(microseconds=1)).date()
    totals: dict[date, list[int]] = {}
    day = first
    while day <= last:
        totals[day] = [0, 0]
        day = _next(day, interval)
    for index, counts in ((0, started), (1, completed)):
        for when, count in counts.items():
            held = totals.get(bucket_start(when, interval))
            if held is not None:
                held[index] += count
    return [
        Bucket(start=datetime(d.year, d.month, d.day, tzinfo=UTC), started=s, completed=c)
        for d, (s, c) in totals.items()
    ]


def as_day(value: object) -> date:
    """A day as either database returns it: a date (PostgreSQL) or 'YYYY-MM-DD' (SQLite)."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value))
