"""`caseway run-jobs --once` and `caseway jobs` as an operator runs them, and a configuration
that could not run refused before anything starts."""

import asyncio
import json
import os

import pytest

from engine.jobs import webhook
from server.migrate import upgrade
from tests.fixtures.builders import caseway
from tests.fixtures.jobs import seed_jobs
from tests.fixtures.receiver import SECRET, Receiver

# Its own SQLite files or none: run once, by the SQLite run (scripts/run_tests.py).
pytestmark = pytest.mark.backend_free


async def test_run_jobs_once_delivers_what_is_due_and_jobs_lists_them(tmp_path, receiver: Receiver):
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    await asyncio.to_thread(upgrade, url)
    keys = await seed_jobs(url, receiver.url, cases=2, per_case=2)
    webhook.configure({})
    receiver.per_request = lambda d: 400 if d.key == keys[0] else None  # one of them fails for good
    env = {
        **os.environ,
        "CASEWAY_DATABASE_URL": url,
        "CASEWAY_WEBHOOKS": json.dumps({"billing": {"url": receiver.url, "secret": SECRET}}),
    }
    listed = await asyncio.to_thread(caseway, "jobs", "--state", "PENDING", env=env)
    assert listed.returncode == 0 and "4 jobs." in listed.stdout

    ran = await asyncio.to_thread(caseway, "run-jobs", "--once", env=env)
    assert ran.returncode == 0, ran.stderr
    assert "Finished 4 jobs." in ran.stdout
    assert set(receiver.keys_ok()) == set(keys[1:])
    failed = await asyncio.to_thread(caseway, "jobs", "--state", "FAILED", env=env)
    assert f"{keys[0]}  FAILED" in failed.stdout and "HTTP_400: Endpoint 'billing' answered HTTP 400." in failed.stdout
    assert "1 jobs." in failed.stdout


async def test_a_bad_webhook_configuration_is_refused_with_a_sentence(tmp_path):
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    for bad, words in (
        ({"billing": {"url": "ftp://x", "secret": "s"}}, "needs an http(s) url"),
        ({"billing": {"url": "http://x", "secret": ""}}, "needs a signing secret"),
        ({"billing": {"url": "http://x", "secret": "s", "serialize_by": "day"}}, "serialize_by is one of"),
        ({"billing": {"url": "http://x", "secret": "s", "timeout": 0}}, "timeout is seconds"),
        ({"billing": {"url": "http://x", "secret": "s", "retries": 3}}, "unknown keys: retries"),
        ({"billing": {"url": "http://x", "secret": "s", "format": "xml"}}, "format is plain or cloudevents, not 'xml'"),
    ):
        env = {**os.environ, "CASEWAY_DATABASE_URL": url, "CASEWAY_WEBHOOKS": json.dumps(bad)}
        refused = await asyncio.to_thread(caseway, "jobs", env=env)
        assert refused.returncode == 2 and words in refused.stderr and "Traceback" not in refused.stderr, refused.stderr
    env = {**os.environ, "CASEWAY_DATABASE_URL": url, "CASEWAY_JOB_RETRY": json.dumps({"fax": {}})}
    refused = await asyncio.to_thread(caseway, "jobs", env=env)
    assert "unknown job kind 'fax'" in refused.stderr
