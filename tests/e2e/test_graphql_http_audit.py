"""graphql-http's audit of the GraphQL-over-HTTP specification against a running server
(issue 24 point 7): no error and no warning. Needs Node.js; the audit's npm package is
installed from tests/audit/package-lock.json into tests/audit/node_modules (git-ignored)."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

AUDIT = Path(__file__).resolve().parents[1] / "audit"


def _audit_installed() -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js (node and npm) is not installed: the GraphQL-over-HTTP audit needs it")
    if (AUDIT / "node_modules" / "graphql-http").is_dir():
        return
    installed = subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund"], cwd=AUDIT, capture_output=True, text=True, timeout=300
    )
    if installed.returncode != 0:
        pytest.skip(f"could not install the audit's npm package (npm ci): {installed.stderr.strip()[-200:]}")


def test_the_server_passes_the_graphql_over_http_audit(live_server):
    _audit_installed()
    run = subprocess.run(
        ["node", "audit.mjs", f"{live_server.http}/graphql"], cwd=AUDIT, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout.strip().splitlines()[-1])
    assert summary["error"] == [] and summary["warn"] == [], summary
    assert summary["ok"] > 50  # the audit ran its checks
