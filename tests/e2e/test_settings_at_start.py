"""Settings that would cripple a server are refused at start (issue 47, finding 2): a polling
interval of 0 spun an idle server at a full core, `CASEWAY_OPERATION_TIMEOUT=0` timed every
operation out, `CASEWAY_MAX_BODY_BYTES=-1` answered 413 to everything, `--workers 0` was taken
for the default. Each refusal is one line naming the setting, its value and its range, exit
code 2, no traceback; a missing database directory is one sentence, not a thread's traceback."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from server import cli, settings_table
from server.settings import Settings

# Its own SQLite files or none: run once, by the SQLite run (scripts/run_tests.py).
pytestmark = pytest.mark.backend_free

ROOT = Path(__file__).resolve().parents[2]

CRIPPLING = [
    ("HUB_POLL_INTERVAL", "0", "a number, 0.1 to 3600"),
    ("TIMER_POLL_INTERVAL", "-1", "a number, 0.1 to 3600"),
    ("JOB_POLL_INTERVAL", "0", "a number, 0.1 to 3600"),
    ("CHECKPOINT_INTERVAL", "0", "a number, 0.05 to 86400"),
    ("WS_AUTH_REFRESH", "-5", "a number, 0.1 to 3600"),
    ("OPERATION_TIMEOUT", "0", "a number, 0.1 to 3600"),
    ("OPERATION_TIMEOUT", "nan", "a number, 0.1 to 3600"),
    ("OPERATION_TIMEOUT", "inf", "a number, 0.1 to 3600"),
    ("MAX_BODY_BYTES", "-1", "a whole number, 1024 to 2147483647"),
    ("TOKEN_TTL", "-1", "a whole number, 60 to 315360000"),
    ("LOGIN_MAX_PASSWORD_CHECKS", "0", "a whole number, 1 to 1000"),
    ("DB_POOL_SIZE", "-1", "a whole number, 1 to 1000"),
    ("WORKERS", "0", "a whole number, 1 to 256"),
    ("WORKERS", "-3", "a whole number, 1 to 256"),
    ("MAX_QUERY_DEPTH", "0", "a whole number, 1 to 1000"),
    ("WS_MAX_SUBSCRIPTIONS", "0", "a whole number, 1 to 10000"),
    ("JOB_CONCURRENCY", "0", "a whole number, 1 to 1000"),
    ("PORT", "eighty", "a whole number, 1 to 65535"),
]


@pytest.mark.parametrize(("name", "value", "allowed"), CRIPPLING)
def test_a_setting_out_of_its_range_is_refused_in_one_sentence_with_exit_code_2(
    name, value, allowed, monkeypatch, capsys, tmp_path
):
    monkeypatch.setenv("CASEWAY_DATABASE_URL", f"sqlite:///{tmp_path / 'c.db'}")
    monkeypatch.setenv(f"CASEWAY_{name}", value)
    with pytest.raises(SystemExit) as exited:
        cli.main(["migrate"])
    assert exited.value.code == 2
    said = capsys.readouterr().err
    assert said == f"error: CASEWAY_{name} is {value!r}: it must be {allowed}.\n"
    assert not (tmp_path / "c.db").exists()  # refused before anything was done


def test_every_bound_is_enforced_and_each_end_accepted():
    """The model's bounds are what the table says: each end is a valid value, one step past it
    is not (a bound declared and not applied would let the crippling values through)."""
    for name, field in Settings.model_fields.items():
        if not settings_table.is_number(field):
            continue
        low = next(getattr(rule, "ge", None) for rule in field.metadata if hasattr(rule, "ge"))
        high = next(getattr(rule, "le", None) for rule in field.metadata if hasattr(rule, "le"))
        for ok in (low, high):
            assert getattr(Settings(**{name: ok}), name) == ok
        step = 1 if isinstance(low, int) and field.annotation is int else 0.01
        for bad in (low - step, high + step):
            with pytest.raises(ValueError):
                Settings(**{name: bad})


def caseway(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


@pytest.mark.parametrize("workers", ["0", "-3", "many"])
def test_serve_refuses_fewer_than_one_worker(workers, tmp_path):
    run = caseway("serve", "--workers", workers, CASEWAY_DATABASE_URL=f"sqlite:///{tmp_path / 'c.db'}")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert f"argument --workers: {workers!r} is not a number of workers: it must be a whole number, 1 to 256" in (
        run.stderr
    )
    assert not (tmp_path / "c.db").exists()


def test_a_missing_database_directory_is_one_sentence_every_time(tmp_path):
    """It printed aiosqlite's thread traceback in 6 of 18 runs (5 of 6 here): three runs of
    `serve` and one of `migrate` each say one line."""
    missing = tmp_path / "nowhere" / "deeper"
    url = f"sqlite:///{missing / 'caseway.db'}"
    for args in (("serve", "--port", "1"), ("serve",), ("serve",), ("migrate",)):
        run = caseway(*args, CASEWAY_DATABASE_URL=url)
        assert run.returncode == 1, run.stderr
        assert run.stderr == (
            f"error: the directory {missing} of the SQLite database {missing / 'caseway.db'} does not exist: create it"
            f" (mkdir -p {missing}) or set CASEWAY_DATABASE_URL.\n"
        )
    assert not missing.exists()
