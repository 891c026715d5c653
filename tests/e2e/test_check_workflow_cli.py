"""`caseway check-workflow FILE`, as an author would run it on a spec file before defining it:
one `FILE: path: CODE message` line per finding, exit 1 when one is an error, no database."""

import json
import os

import pytest

from tests.fixtures.builders import caseway

# Its own SQLite files or none: run once, by the SQLite run (scripts/run_tests.py).
pytestmark = pytest.mark.backend_free

FLOW = {
    "short_name": "cli_check",
    "roles": {"clerk": {"callbacks": ["creation_user"]}},
    "states": {"open": {}, "done": {"terminal": True}},
    "actions": {"finish": {"assigned_role": "clerk", "assigned_states": ["open"], "new_state": "done"}},
}


def _env(tmp_path) -> dict[str, str]:
    # a database that does not exist: the command must not need (or create) one
    return {**os.environ, "CASEWAY_DATABASE_URL": f"sqlite:///{tmp_path / 'none.db'}"}


def test_findings_are_printed_one_per_line_and_errors_exit_1(tmp_path):
    broken = {
        **FLOW,
        "states": {**FLOW["states"], "limbo": {}},
        "actions": {**FLOW["actions"], "nag": {"trigger": "time", "timeout_seconds": 60, "enabled_states": ["open"]}},
    }
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    done = caseway("check-workflow", str(path), env=_env(tmp_path))
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stdout.splitlines() if not line.startswith("    hint: ")]
    assert lines == [
        f"{path}: states.limbo: UNREACHABLE_STATE State 'limbo' is never reached: no action leads there from "
        "'open', where a case starts.",
        f"{path}: actions.nag: TIMER_REPEATS Action 'nag' fires by its timer and leaves the case in 'open', where "
        "it is enabled again: it fires every 60 seconds (at most once per CASEWAY_TIMER_MIN_INTERVAL, 60 by default) "
        "until something else moves the case on.",
    ]
    assert "    hint: Give it a new_state where it is not enabled" in done.stdout
    assert f"{path}: 1 errors, 1 warnings." in done.stderr
    assert not (tmp_path / "none.db").exists()


def test_warnings_alone_exit_0_and_a_clean_spec_prints_no_finding(tmp_path):
    warned = {**FLOW, "roles": {"clerk": {}}}  # nothing fills the role: a warning
    path = tmp_path / "warned.yaml"
    path.write_text(json.dumps(warned))  # JSON is YAML
    done = caseway("check-workflow", str(path), env=_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{path}: actions.finish.assigned_role: ROLE_NEVER_FILLED Action 'finish'")
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps(FLOW))
    done = caseway("check-workflow", str(clean), env=_env(tmp_path))
    assert (done.returncode, done.stdout) == (0, "")
    assert f"{clean}: 0 errors, 0 warnings." in done.stderr


def test_a_key_by_key_mistake_and_an_unreadable_file_are_told_as_well(tmp_path):
    typo = tmp_path / "typo.json"
    typo.write_text(json.dumps({**FLOW, "actions": {"finish": {"enabled_states": ["open"], "new_state": "dun"}}}))
    done = caseway("check-workflow", str(typo), env=_env(tmp_path))
    assert done.returncode == 1
    assert done.stdout == f"{typo}: actions.finish.new_state: INVALID_SPEC Action 'finish' names unknown state 'dun'.\n"
    twice = tmp_path / "twice.yaml"
    twice.write_text("short_name: a\nshort_name: b\n")
    done = caseway("check-workflow", str(twice), env=_env(tmp_path))
    assert done.returncode == 1 and "INVALID_SPEC Duplicate key 'short_name' (line 2)." in done.stdout
    missing = caseway("check-workflow", str(tmp_path / "nope.yaml"), env=_env(tmp_path))
    assert missing.returncode == 1 and "no such file" in missing.stderr and "Traceback" not in missing.stderr


def test_define_workflow_tells_the_warnings_of_what_it_defined_and_refuses_an_error(tmp_path):
    env = {**os.environ, "CASEWAY_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}"}
    assert caseway("migrate", env=env).returncode == 0
    warned = tmp_path / "warned.json"
    warned.write_text(json.dumps({**FLOW, "roles": {"clerk": {}}}))
    done = caseway("define-workflow", str(warned), env=env)
    assert done.returncode == 0 and "Defined workflow cli_check version 1" in done.stdout
    assert f"{warned}: actions.finish.assigned_role: ROLE_NEVER_FILLED Action 'finish'" in done.stderr
    stuck = tmp_path / "stuck.json"
    stuck.write_text(json.dumps({**FLOW, "states": {**FLOW["states"], "limbo": {}}}))
    refused = caseway("define-workflow", str(stuck), env=env)
    assert refused.returncode == 1 and "State 'limbo' is never reached" in refused.stderr
    assert "(spec.states.limbo)" in refused.stderr and "Traceback" not in refused.stderr
