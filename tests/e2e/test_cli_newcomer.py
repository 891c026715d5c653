"""The `caseway` command as a new user meets it (issue 40, findings 5, 11, 12 and 14): a port
that does not exist, database URLs it cannot use, a JSON setting that is not JSON, a file that
is not a database and a spec naming a webhook the shell does not know, each one sentence; and
documents kept beside a SQLite database whichever driver its URL names."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from bench.server import free_port
from tests.e2e.test_cli_errors import ROOT, one_line_failure
from tests.fixtures.database import BACKEND


def caseway(*args: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def test_a_port_that_does_not_exist_is_refused_naming_it(tmp_path):
    url = f"sqlite:///{tmp_path / 'caseway.db'}"
    flag = caseway("serve", "--port", "99999", CASEWAY_DATABASE_URL=url)
    assert flag.returncode == 2 and "port 99999 does not exist: a port is 1 to 65535" in flag.stderr
    word = caseway("serve", "--port", "eighty", CASEWAY_DATABASE_URL=url)
    assert word.returncode == 2 and "'eighty' is not a port number (1 to 65535)" in word.stderr
    variable = caseway("serve", CASEWAY_DATABASE_URL=url, CASEWAY_PORT="99999")
    one_line_failure(variable, "CASEWAY_PORT is '99999': it must be a whole number, 1 to 65535.", code=2)
    assert not (tmp_path / "caseway.db").exists()  # refused before anything was created


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "mysql://caseway@db.example/caseway",
            "CASEWAY_DATABASE_URL names mysql, which Caseway does not support: use sqlite:///path/to/caseway.db or "
            "postgresql://user@host:5432/dbname.",
        ),
        (
            "not a url",
            "CASEWAY_DATABASE_URL is not a database URL: write sqlite:///path/to/caseway.db or "
            "postgresql://user@host:5432/dbname.",
        ),
        (
            "postgresql://caseway:s3cret@db:fivefour/caseway",
            "CASEWAY_DATABASE_URL is not a database URL: write sqlite:///path/to/caseway.db or",
        ),
    ],
)
def test_a_database_url_caseway_cannot_use_is_one_sentence(url, expected):
    line = one_line_failure(caseway("migrate", CASEWAY_DATABASE_URL=url), expected, code=2)
    assert "s3cret" not in line  # a URL may hold a password: it is not echoed


def test_a_json_setting_that_is_not_json_and_a_file_that_is_not_a_database(tmp_path):
    url = f"sqlite:///{tmp_path / 'caseway.db'}"
    webhooks = caseway("migrate", CASEWAY_DATABASE_URL=url, CASEWAY_WEBHOOKS="{billing: 1}")
    one_line_failure(
        webhooks,
        "CASEWAY_WEBHOOKS is not valid JSON: Expecting property name enclosed in double quotes (line 1, column 2).",
        code=2,
    )
    notes = tmp_path / "notes.db"
    notes.write_text("shopping: milk, eggs\n" * 20)
    for command in ("migrate", "jobs"):
        one_line_failure(
            caseway(command, CASEWAY_DATABASE_URL=f"sqlite:///{notes}"),
            f"{notes} is not a SQLite database: the file holds something else. Check CASEWAY_DATABASE_URL.",
        )
    assert notes.read_text().startswith("shopping")


def test_documents_go_beside_a_sqlite_database_whatever_its_driver(tmp_path):
    """Finding 5: with sqlite+aiosqlite:/// they went to the working directory."""
    data = tmp_path / "data"
    data.mkdir()
    url = f"sqlite+aiosqlite:///{data / 'caseway.db'}"
    assert caseway("migrate", CASEWAY_DATABASE_URL=url, cwd=tmp_path).returncode == 0
    sha = "ab" + "c" * 62
    orphan = data / "caseway-documents" / sha[:2] / sha[2:4] / sha
    orphan.parent.mkdir(parents=True)
    orphan.write_bytes(b"an upload whose transaction failed")

    run = caseway("collect-documents", "--grace", "0", CASEWAY_DATABASE_URL=url, cwd=tmp_path)

    assert run.returncode == 0 and "Deleted 1 unreferenced files" in run.stdout, (run.stdout, run.stderr)
    assert not orphan.exists()
    assert not (tmp_path / "caseway-documents").exists()


def test_a_spec_naming_a_webhook_the_shell_does_not_know_says_where_it_is_configured(tmp_path):
    url = f"sqlite:///{tmp_path / 'caseway.db'}"
    assert caseway("migrate", CASEWAY_DATABASE_URL=url).returncode == 0
    spec = tmp_path / "billing.json"
    spec.write_text(
        json.dumps(
            {
                "short_name": "billed",
                "states": {"open": {}, "done": {"terminal": True}},
                "actions": {
                    "bill": {
                        "enabled_states": ["open"],
                        "new_state": "done",
                        "side_effects": [{"webhook": {"endpoint": "billing"}}],
                    }
                },
            }
        )
    )
    endpoints = json.dumps({"billing": {"url": "https://billing.example/hook", "secret": "s"}})

    refused = caseway("define-workflow", str(spec), CASEWAY_DATABASE_URL=url, CASEWAY_WEBHOOKS="{}")
    one_line_failure(
        refused,
        "No webhook endpoint 'billing' is configured (CASEWAY_WEBHOOKS: none is configured): define the spec where "
        "the server's CASEWAY_WEBHOOKS is set, as `caseway define-workflow` reads it from its own environment.",
    )
    defined = caseway("define-workflow", str(spec), CASEWAY_DATABASE_URL=url, CASEWAY_WEBHOOKS=endpoints)
    assert defined.returncode == 0 and "Defined workflow billed version 1" in defined.stdout, defined.stderr


WRONG_LOGIN = 'mutation { login(input: {login: "nobody", password: "wrong-password"}) { userErrors { code } } }'


def _serve(tmp_path: Path, **env: str) -> tuple[subprocess.Popen[bytes], str]:
    url = f"sqlite:///{tmp_path / 'caseway.db'}"
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve", "--port", str(port)],
        env={**os.environ, "CASEWAY_DATABASE_URL": url, "CASEWAY_LOGIN_ADDRESS_LOCKOUT_FAILURES": "2", **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                return process, base
        except httpx.HTTPError:
            pass
        assert process.poll() is None and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.1)


def _codes_from(base: str, forwarded: list[str]) -> list[list[str]]:
    codes = []
    for address in forwarded:
        body = httpx.post(f"{base}/graphql", json={"query": WRONG_LOGIN}, headers={"X-Forwarded-For": address}).json()
        codes.append([e["code"] for e in body["data"]["login"]["userErrors"]])
    return codes


@pytest.mark.parametrize(
    ("proxies", "expected"),
    [
        # Every attempt counts against 127.0.0.1, whatever the header says: the third is locked out.
        ("", [["INVALID_CREDENTIALS"]] * 2 + [["TOO_MANY_ATTEMPTS"]]),
        # The proxy named: each forwarded address is counted on its own.
        ("127.0.0.1", [["INVALID_CREDENTIALS"]] * 3),
    ],
)
def test_x_forwarded_for_is_believed_only_from_the_proxies_named(tmp_path, proxies, expected):
    """Finding 6: uvicorn believed it from 127.0.0.1 by default, so any local process could
    choose the address the login throttle counts."""
    process, base = _serve(tmp_path, CASEWAY_FORWARDED_ALLOW_IPS=proxies)
    try:
        assert _codes_from(base, ["203.0.113.1", "203.0.113.2", "203.0.113.3"]) == expected
    finally:
        process.kill()
        process.wait(10)


def _workers_of(parent: int) -> list[int]:
    """uvicorn's worker processes: the children that multiprocessing spawned (not its tracker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent and "multiprocessing" in command and "resource_tracker" not in command:
            found.append(int(entry.name))
    return sorted(found)


def _until(condition, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.mark.skipif(BACKEND != "postgres", reason="several workers need PostgreSQL")
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the workers in /proc")
def test_a_worker_that_dies_says_why_and_is_replaced(db, tmp_path):
    """Finding 9: one of two workers was reported "died" with no traceback."""
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as stderr:
        parent = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "serve", "--port", str(port), "--workers", "2"],
            env={**os.environ, "CASEWAY_DATABASE_URL": db.url},
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            cwd=ROOT,
        )
    try:
        _until(
            lambda: len(_workers_of(parent.pid)) == 2 and "Application startup complete" in log.read_text(), "2 workers"
        )
        victim = _workers_of(parent.pid)[0]
        os.kill(victim, signal.SIGABRT)

        _until(lambda: f"Child process [{victim}] died" in log.read_text(), "the supervisor to notice")
        text = log.read_text()
        assert "Fatal Python error: Aborted" in text and "Current thread" in text, text[-2000:]
        _until(lambda: len(_workers_of(parent.pid)) == 2, "a new worker")
        assert victim not in _workers_of(parent.pid)
        _until(lambda: httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200, "/health")
    finally:
        parent.terminate()
        try:
            parent.wait(30)
        except subprocess.TimeoutExpired:
            parent.kill()
            parent.wait(10)


def test_a_direct_url_is_postgresql_behind_a_postgresql_pooler(tmp_path):
    """CASEWAY_DATABASE_DIRECT_URL (docs/scaling.md) is PostgreSQL itself behind PgBouncer: any
    other URL, or one beside a SQLite database, is refused in one sentence, the password unsaid."""
    pooled = "postgresql://caseway@pgbouncer.example:6432/caseway"
    line = one_line_failure(
        caseway("migrate", CASEWAY_DATABASE_URL=pooled, CASEWAY_DATABASE_DIRECT_URL="mysql://c:s3cret@db/caseway"),
        "CASEWAY_DATABASE_DIRECT_URL is not a PostgreSQL URL: write postgresql://user@host:5432/dbname.",
        code=2,
    )
    assert "s3cret" not in line
    sqlite = f"sqlite:///{tmp_path / 'caseway.db'}"
    one_line_failure(
        caseway("migrate", CASEWAY_DATABASE_URL=sqlite, CASEWAY_DATABASE_DIRECT_URL=pooled),
        "CASEWAY_DATABASE_DIRECT_URL is for PostgreSQL behind PgBouncer: CASEWAY_DATABASE_URL names SQLite.",
        code=2,
    )
    assert not (tmp_path / "caseway.db").exists()
