"""The `caseway` command against a real SQLite file, as an operator would run it."""

import json
import os

import pytest

from tests.fixtures.builders import caseway

# Its own SQLite files or none: run once, by the SQLite run (scripts/run_tests.py).
pytestmark = pytest.mark.backend_free

SPEC = {
    "short_name": "cli_flow",
    "states": {"a": {}, "b": {"terminal": True}},
    "actions": {"go": {"allowed_roles": [], "enabled_states": ["a"], "new_state": "b"}},
}


def test_migrate_define_and_workflows_dir(tmp_path):
    spec_dir = tmp_path / "specs"
    spec_dir.mkdir()
    (spec_dir / "extra.json").write_text(json.dumps({**SPEC, "short_name": "from_dir"}))
    (tmp_path / "flow.json").write_text(json.dumps(SPEC))
    env = {
        **os.environ,
        "CASEWAY_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}",
        "CASEWAY_WORKFLOWS_DIR": str(spec_dir),
    }
    assert caseway("migrate", env=env).returncode == 0
    first = caseway("define-workflow", str(tmp_path / "flow.json"), env=env)
    assert first.returncode == 0 and "cli_flow version 1" in first.stdout
    second = caseway("define-workflow", str(tmp_path / "flow.json"), env=env)
    assert "cli_flow version 2" in second.stdout
    (tmp_path / "bad.json").write_text(json.dumps({**SPEC, "actions": {"go": {"new_state": "zzz"}}}))
    bad = caseway("define-workflow", str(tmp_path / "bad.json"), env=env)
    assert bad.returncode != 0 and "unknown state 'zzz'" in bad.stderr
    created = caseway("create-user", "ada", "--password", "long-enough", "--admin", env=env)
    assert created.returncode == 0 and "Created user ada" in created.stdout
    import sqlite3

    with sqlite3.connect(tmp_path / "cli.db") as conn:
        names = {row[0] for row in conn.execute("SELECT short_name FROM workflow")}
    assert {"simple", "bug", "approval", "from_dir", "cli_flow"} <= names
    sdl = caseway("export-schema", env=env)
    assert "type Query" in sdl.stdout


def test_serve_refuses_several_workers_on_sqlite(tmp_path):
    """Worker processes do not share SQLite's writer lock: one action was executed twice. (An
    address that cannot be bound: were the refusal gone, the server would fail, not start.)"""
    env = {**os.environ, "CASEWAY_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}"}
    for refused in (
        caseway("serve", "--workers", "2", "--host", "256.0.0.1", env=env),
        caseway("serve", "--host", "256.0.0.1", env={**env, "CASEWAY_WORKERS": "3"}),
    ):
        assert refused.returncode != 0
        assert "Use PostgreSQL" in refused.stderr and "Traceback" not in refused.stderr
    assert not (tmp_path / "cli.db").exists()  # refused before anything was done


def test_verify_history_needs_one_target(tmp_path):
    env = {**os.environ, "CASEWAY_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}"}
    for args in ((), ("prj_x", "--all")):
        bad = caseway("verify-history", *args, env=env)
        assert bad.returncode == 2 and "usage: caseway verify-history" in bad.stderr
        assert "Traceback" not in bad.stderr
