"""`make serve` installs what the server needs and `make test` the development lock (issue 40,
finding 10: serving installed the whole test toolchain, 81 packages, while it said "about 40"),
and what each prints while it installs is true of the lockfile it installs. Read from `make -n`
with a virtualenv that does not exist, so nothing is installed."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def planned(target: str, tmp_path: Path) -> str:
    run = subprocess.run(
        ["make", "-n", target, f"VENV={tmp_path / 'venv'}"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def pinned(lockfile: str) -> int:
    return len(re.findall(r"^[A-Za-z0-9_.\-\[\]]+==", (ROOT / lockfile).read_text(), re.M))


def said(plan: str, lockfile: str) -> int:
    return int(re.search(rf"\({re.escape(lockfile)}, about (\d+) packages", plan).group(1))


def test_serve_installs_the_runtime_lock_only_and_says_how_much(tmp_path):
    plan = planned("serve", tmp_path)

    assert "--require-hashes -r requirements.txt" in plan
    assert "requirements-test.txt" not in plan
    assert abs(said(plan, "requirements.txt") - pinned("requirements.txt")) <= 5


def test_test_installs_the_development_lock_and_says_how_much(tmp_path):
    plan = planned("test", tmp_path)

    assert "--require-hashes -r requirements-test.txt" in plan
    assert abs(said(plan, "requirements-test.txt") - pinned("requirements-test.txt")) <= 5
    assert pinned("requirements-test.txt") > pinned("requirements.txt")
