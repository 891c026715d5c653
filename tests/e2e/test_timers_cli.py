"""`caseway run-due-timers` as an operator runs it: fires what is due at --now and says what."""

import asyncio
import os
from datetime import UTC, datetime, timedelta

import pytest

from server.migrate import upgrade
from tests.fixtures.builders import caseway, fired_per_timer, seed_timers

# Its own SQLite files or none: run once, by the SQLite run (scripts/run_tests.py).
pytestmark = pytest.mark.backend_free


async def test_run_due_timers_prints_what_fired_and_refuses_a_bad_time(tmp_path):
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    env = {**os.environ, "CASEWAY_DATABASE_URL": url}
    await asyncio.to_thread(upgrade, url)
    seeded_at = datetime.now(UTC)
    await seed_timers(url, 3)  # due two seconds after seeded_at, or a little later

    bad = caseway("run-due-timers", "--now", "tomorrow", env=env)
    assert bad.returncode == 2 and "not an ISO 8601 time: 'tomorrow'" in bad.stderr
    assert "Traceback" not in bad.stderr
    assert caseway("run-due-timers", "--limit", "0", env=env).returncode == 2
    early = caseway("run-due-timers", "--now", seeded_at.isoformat(), env=env)
    assert early.returncode == 0 and "Fired 0 timers" in early.stdout

    later = (seeded_at + timedelta(minutes=5)).isoformat()
    done = caseway("run-due-timers", "--now", later, "--limit", "2", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("  lapse  (timer due ") == 2 and "Fired 2 timers" in done.stdout
    assert "More timers are due" in done.stdout
    rest = caseway("run-due-timers", "--now", later, env=env)
    assert "Fired 1 timers" in rest.stdout and "More" not in rest.stdout
    assert sorted((await fired_per_timer(url)).values()) == [1, 1, 1]
