"""Bench J2 (bench/timed_webhooks.py) must measure what it says: every TIME action's webhook
delivered once, the delay counted from the firing's log entry, and a verdict against the goal."""

import orjson
import pytest

from bench import timed_webhooks
from bench.server import drop_postgres, fresh_postgres
from tests.fixtures.database import BACKEND


def _delivery(entry_id: str, at: str) -> bytes:
    return orjson.dumps({"id": entry_id, "at": at})


def test_delays_run_from_the_log_entry_and_count_a_second_delivery_once():
    arrivals = [
        (1_000.250, _delivery("act_1", "1970-01-01T00:16:40+00:00")),  # at = 1000.0
        (1_001.100, _delivery("act_2", "1970-01-01T00:16:41+00:00")),
        (1_002.000, _delivery("act_1", "1970-01-01T00:16:40+00:00")),  # delivered again
    ]
    delays, doubled = timed_webhooks.delays_ms(arrivals)
    assert delays == pytest.approx([100.0, 250.0])
    assert doubled == 1


def _result(**changes) -> timed_webhooks.Result:
    fields = dict(
        cases=10,
        delivered=10,
        doubled=0,
        spread=1.0,
        p50_ms=50,
        p99_ms=150,
        max_ms=160,
        job_poll=5,
        timer_poll=10,
        workers=2,
        commit="abc1234",
    )
    return timed_webhooks.Result(**{**fields, **changes})


def test_the_section_says_ok_within_the_goal_and_what_failed_otherwise():
    ok = timed_webhooks.section(_result())
    assert ok[0] == timed_webhooks.BEGIN and ok[-1] == timed_webhooks.END
    assert "| 10 | 10 | 50 | 150 | 160 | ok |" in ok
    late = "\n".join(timed_webhooks.section(_result(p99_ms=4900, delivered=9, doubled=1)))
    assert "p99 4900 ms > 200" in late and "1 not delivered, 1 delivered twice" in late


@pytest.mark.slow
@pytest.mark.skipif(BACKEND != "postgres", reason="J2 serves with the PostgreSQL job runner and sweeper")
async def test_j2_at_a_tiny_size_delivers_each_timers_webhook_once():
    url, name = await fresh_postgres("caseway_j2_test")
    try:
        result = await timed_webhooks.run(url, cases=5, spread=1.0, lead=8.0, workers=1)
    finally:
        await drop_postgres(name)
    assert (result.delivered, result.doubled) == (5, 0)
    assert 0 < result.p50_ms <= result.p99_ms <= result.max_ms
