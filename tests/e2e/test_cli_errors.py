"""The `caseway` command's failures, as an operator meets them (issue 24 point 3): each is one
line on stderr and exit code 1, never a traceback (unless --debug); and the conveniences that
keep an operator out of trouble: the password asked or read from stdin, `demo` saying what it
did, `serve --demo` on a database that has users, help on every command."""

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.cli import _parser
from tests.fixtures.database import BACKEND, POSTGRES_URL, admin_sql

ROOT = Path(__file__).resolve().parents[2]
SPEC = {
    "short_name": "cli_errors_flow",
    "states": {"a": {}, "b": {"terminal": True}},
    "actions": {"go": {"allowed_roles": [], "enabled_states": ["a"], "new_state": "b"}},
}


def caseway(*args: str, url: str, stdin: str | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CASEWAY_DATABASE_URL": url}
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args],
        env=env,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def one_line_failure(run: subprocess.CompletedProcess[str], *expected: str, code: int = 1) -> str:
    """The run failed with exit code ``code`` (2: a setting refused) and one line on stderr that
    contains ``expected``."""
    assert run.returncode == code, (run.returncode, run.stdout, run.stderr)
    assert "Traceback" not in run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), run.stderr
    for text in expected:
        assert text in lines[0], (text, lines[0])
    return lines[0]


@pytest.fixture
def empty_database(tmp_path: Path) -> Iterator[str]:
    """The URL of a database that exists but was never migrated, on the test backend."""
    if BACKEND == "postgres":
        name = f"caseway_cli_{uuid.uuid4().hex[:10]}"
        asyncio.run(admin_sql(f'CREATE DATABASE "{name}"'))
        yield POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"
        asyncio.run(admin_sql(f'DROP DATABASE "{name}" WITH (FORCE)'))
    else:
        (tmp_path / "empty.db").touch()
        yield f"sqlite:///{tmp_path / 'empty.db'}"


@pytest.fixture
def migrated_database(empty_database: str) -> str:
    run = caseway("migrate", url=empty_database)
    assert run.returncode == 0, run.stderr
    return empty_database


@pytest.mark.backend_free
def test_no_database_is_said_and_no_empty_file_is_created(tmp_path):
    url = f"sqlite:///{tmp_path / 'caseway.db'}"
    for args in (("create-user", "ada", "--password-stdin"), ("run-due-timers",), ("verify-history", "--all")):
        one_line_failure(caseway(*args, url=url, stdin="long-enough\n"), "does not exist", "caseway migrate")
    assert not (tmp_path / "caseway.db").exists()
    default = caseway("create-user", "ada", "--password-stdin", url="sqlite:///./caseway.db", stdin="x\n", cwd=tmp_path)
    one_line_failure(default, "./caseway.db does not exist")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(BACKEND != "postgres", reason="a PostgreSQL server is needed")
def test_a_postgresql_database_that_does_not_exist_is_said():
    url = POSTGRES_URL.rsplit("/", 1)[0] + "/caseway_cli_nowhere"
    line = one_line_failure(caseway("create-user", "ada", "--password", "long-enough", url=url), "does not exist")
    assert "createdb caseway_cli_nowhere" in line
    one_line_failure(caseway("migrate", url=url), "'caseway_cli_nowhere'", "does not exist")


@pytest.mark.backend_free
def test_an_unreachable_postgresql_server_is_said():
    with socket.socket() as closed:  # a port where nothing listens
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    one_line_failure(caseway("migrate", url=f"postgresql://nobody@127.0.0.1:{port}/x"), "cannot reach", str(port))


def test_a_database_that_is_not_migrated_is_said(empty_database):
    for args in (("create-user", "ada", "--password", "long-enough"), ("checkpoint-history",)):
        run = caseway(*args, url=empty_database)
        if args[0] == "checkpoint-history":  # refused for its missing key before the database
            one_line_failure(run, "CASEWAY_SECRET_KEY")
        else:
            one_line_failure(run, "not migrated", "never migrated", "caseway migrate")


def test_spec_file_failures_are_said_with_line_and_column(tmp_path, migrated_database):
    url = migrated_database
    one_line_failure(
        caseway("define-workflow", str(tmp_path / "missing.yaml"), url=url), "no such file", "missing.yaml"
    )
    (tmp_path / "broken.json").write_text('{\n  "short_name": "x",\n  "states": {,\n}')
    one_line_failure(
        caseway("define-workflow", str(tmp_path / "broken.json"), url=url), "broken.json, line 3, column 14", "JSON"
    )
    (tmp_path / "broken.yaml").write_text("short_name: x\nstates:\n  a: [1, 2\n  b: {}\n")
    one_line_failure(caseway("define-workflow", str(tmp_path / "broken.yaml"), url=url), "broken.yaml, line", "YAML")
    (tmp_path / "invalid.json").write_text(json.dumps({**SPEC, "actions": {"go": {"new_state": "zzz"}}}))
    one_line_failure(
        caseway("define-workflow", str(tmp_path / "invalid.json"), url=url),
        "invalid.json is not a valid workflow spec",
        "unknown state 'zzz'",
    )
    (tmp_path / "good.json").write_text(json.dumps(SPEC))
    defined = caseway("define-workflow", str(tmp_path / "good.json"), url=url)
    assert defined.returncode == 0 and "cli_errors_flow version 1" in defined.stdout


@pytest.mark.backend_free
def test_debug_shows_the_traceback(tmp_path):
    url = f"sqlite:///{tmp_path / 'caseway.db'}"
    run = caseway("--debug", "define-workflow", str(tmp_path / "missing.yaml"), url=url)
    assert run.returncode == 1 and "Traceback" in run.stderr and "no such file" in run.stderr


@pytest.mark.backend_free
def test_a_bad_setting_is_said(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "server.cli", "migrate"],
        env={**os.environ, "CASEWAY_DATABASE_URL": f"sqlite:///{tmp_path / 'c.db'}", "CASEWAY_PORT": "eighty"},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    one_line_failure(run, "CASEWAY_PORT", "'eighty'", code=2)


def test_create_user_reads_the_password_from_stdin(migrated_database):
    url = migrated_database
    created = caseway("create-user", "ada", "--password-stdin", url=url, stdin="long-enough-pw\n")
    assert created.returncode == 0 and "Created user ada" in created.stdout, created.stderr
    one_line_failure(
        caseway("create-user", "bea", "--password-stdin", url=url, stdin=""), "no password on standard input"
    )
    # no terminal to ask in, and no password given: said, not hung
    one_line_failure(caseway("create-user", "bea", url=url), "no password", "--password-stdin")
    one_line_failure(caseway("create-user", "ada", "--password", "long-enough-pw", url=url), "ada")  # taken
    login = caseway("create-user", "cid", "--password-stdin", url=url, stdin="short\n")
    one_line_failure(login)


def test_a_login_with_spaces_or_signs_is_refused_with_the_rule_and_nothing_is_created(migrated_database):
    """`create-user 'bad name!'` was accepted: a login nobody can type at sign-in or name in a
    command. Refused before the password is asked, saying what a login may contain."""
    url = migrated_database
    one_line_failure(
        caseway("create-user", "bad name!", "--password-stdin", url=url, stdin="long-enough-pw\n"),
        "'bad name!' is not a login",
        "letters, digits and the signs . _ - @ +",
        "Nothing was created",
    )
    # asked before the password: without one (no terminal) the refusal is still the login's
    one_line_failure(caseway("create-user", "bad/name", url=url), "'bad/name' is not a login")
    # nothing was created: demo finds no user and loads its data (it skips a database with users)
    demo = caseway("demo", url=url)
    assert demo.returncode == 0 and "Loaded demo data" in demo.stdout, demo.stdout
    # a login with the signs of an email address passes
    created = caseway("create-user", "ada.b-c_d@example.org", "--password-stdin", url=url, stdin="long-enough-pw\n")
    assert created.returncode == 0 and "Created user ada.b-c_d@example.org" in created.stdout, created.stderr


def test_demo_says_what_it_loaded_or_why_it_skipped(migrated_database):
    url = migrated_database
    assert "ada" in caseway("create-user", "ada", "--password", "long-enough-pw", url=url).stdout
    first = caseway("demo", url=url)
    assert first.returncode == 0, first.stderr
    assert "no demo projects were loaded" in first.stdout and "admin, alice, bob, carol" in first.stdout
    again = caseway("demo", url=url)
    assert again.returncode == 0 and "Demo data skipped" in again.stdout


def test_demo_loads_an_empty_database(migrated_database):
    run = caseway("demo", url=migrated_database)
    assert run.returncode == 0 and "Loaded demo data" in run.stdout, run.stderr


def test_serve_says_the_port_is_in_use_before_printing_a_token(migrated_database):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = caseway("serve", "--demo", "--port", str(port), url=migrated_database)
    one_line_failure(run, f"port {port}", "in use", "--port")
    assert "token" not in run.stdout.lower()


@pytest.mark.backend_free
def test_every_command_and_option_has_help():
    """Each command's page shows a sentence for each of its arguments: none is left bare. The
    pages are argparse's, formatted in this process (a process per command cost CI a minute and a
    half under coverage); the command itself prints the list of commands and one command's page."""
    parser = _parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    listed = {choice.dest: choice.help for choice in commands._choices_actions}
    assert set(listed) == set(commands.choices) and all(listed.values()), listed
    for name, sub in commands.choices.items():
        bare = [a.dest for a in sub._actions if not a.help]
        assert bare == [], (name, bare)
        assert listed[name][:20].lower() in " ".join(sub.format_help().split()).lower(), (name, sub.format_help())
    overview = caseway("--help", url="sqlite:///unused.db")
    assert overview.returncode == 0 and all(name in overview.stdout for name in listed), overview.stdout
    page = caseway("create-user", "--help", url="sqlite:///unused.db")
    flat = " ".join(page.stdout.split()).lower()
    assert page.returncode == 0 and listed["create-user"][:20].lower() in flat, page.stdout
    assert flat == " ".join(commands.choices["create-user"].format_help().split()).lower()  # wrapped by width


def test_serve_demo_on_a_database_with_users_adds_them_and_logs_each_request_as_json(migrated_database):
    """The README's PostgreSQL path: a user made first, then `serve --demo` works; each
    request is one JSON access line on stderr with CASEWAY_LOG_FORMAT=json."""
    url = migrated_database
    assert caseway("create-user", "ada", "--password", "long-enough-pw", url=url).returncode == 0
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "CASEWAY_DATABASE_URL": url, "CASEWAY_LOG_FORMAT": "json", "CASEWAY_PORT": str(port)}
    with subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve", "--demo"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as server:
        try:
            _use_the_demo_server(server, port)
        finally:
            server.terminate()
            server.wait(timeout=30)


def _use_the_demo_server(server: subprocess.Popen[str], port: int) -> None:
    import httpx

    assert server.stdout is not None and server.stderr is not None
    lines = [server.stdout.readline() for _ in range(3)]
    assert "added the demo users it lacked: admin, alice, bob, carol" in lines[0], lines
    token = next(line.split(": ", 1)[1].strip() for line in server.stdout if "Demo token:" in line)
    for line in server.stderr:  # uvicorn says when it listens
        if "Uvicorn running" in line:
            break
    response = httpx.post(
        f"http://127.0.0.1:{port}/graphql",
        json={"query": "query Me { viewer { login } }"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.json()["data"] == {"viewer": {"login": "admin"}}
    access = json.loads(server.stderr.readline())
    assert access["logger"] == "caseway.access" and access["operation"] == "Me" and access["status"] == 200
    assert access["user_id"].startswith("usr_") and access["outcome"] == "ok" and access["duration_ms"] > 0


@pytest.mark.skipif(BACKEND != "postgres", reason="several workers need PostgreSQL")
def test_metrics_add_up_over_worker_processes(migrated_database):
    """With --workers 2 a scrape reaches one worker, and reports what both counted."""
    import time

    import httpx

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "CASEWAY_DATABASE_URL": migrated_database}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    with subprocess.Popen(
        [sys.executable, "-m", "server.cli", "serve", "--workers", "2", "--port", str(port)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ) as server:
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:  # until both workers can answer
                try:
                    if httpx.get(f"{base}/ready").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "the server did not become ready"
                time.sleep(0.2)
            with httpx.Client(base_url=base) as client:  # one connection per request: both workers serve
                for _ in range(8):
                    client.post(
                        "/graphql", json={"query": "query Summed { __typename }"}, headers={"Connection": "close"}
                    )
                scrapes = [client.get("/metrics", headers={"Connection": "close"}).text for _ in range(4)]
            line = 'caseway_graphql_requests_total{operation="Summed",outcome="ok"} 8.0'
            assert all(line in scrape for scrape in scrapes), [s for s in scrapes if line not in s][:1]
        finally:
            server.terminate()
            server.wait(timeout=30)
