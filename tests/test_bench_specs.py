"""The workflows the benchmarks define must be ones Caseway accepts: J1's lacked a terminal
state once the checker asked for one, and `make bench` stopped at J1's seeding."""

import pytest

from bench import jobs, timed_webhooks, timers
from engine.jobs import webhook
from engine.spec.diagnostics import errors_of
from engine.spec.workflows import check_spec

# No database at all: run once, by the SQLite run (scripts/run_tests.py).
pytestmark = pytest.mark.backend_free


@pytest.mark.parametrize("module", [jobs, timed_webhooks, timers], ids=lambda m: m.__name__)
def test_a_bench_workflow_passes_the_spec_checker(module):
    webhook.configure(webhook.parse_endpoints({"billing": {"url": "http://127.0.0.1:9/hook", "secret": "s"}}))
    try:
        parsed, found = check_spec(module.SPEC)
    finally:
        webhook.configure({})
    assert parsed is not None and errors_of(found) == []
