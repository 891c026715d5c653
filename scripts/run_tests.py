"""`make test`: the whole suite on SQLite and on PostgreSQL when one answers, the two runs side
by side on the two cores. Each run's output goes to a file and is printed whole when it ends, so
the two never interleave. The PostgreSQL run leaves out the tests marked ``backend_free`` (they
use no database of the run's backend: the SQLite run has them).

PostgreSQL is used when CASEWAY_TEST_POSTGRES_URL is set or 127.0.0.1:5432 accepts a
connection. On CI (CI=true) a missing PostgreSQL run is a failure, not a skip. Without arguments
a third run follows the SQLite one: the PostgreSQL tests of writes, timers, jobs, subscriptions and
migrations through a PgBouncer in transaction pooling that the tests start (Debian's pgbouncer;
skipped when it is not installed, except on CI, where .ci/run installs it).

`--coverage` (`make coverage`) runs both under coverage.py (configured in pyproject.toml:
greenlet and thread concurrency, subprocesses measured), combines the two databases' data and
prints the report, failing when it is under the floor (``fail_under``). Other arguments go to
pytest.
"""

import os
import socket
import subprocess
import sys
import tempfile

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/postgres"

# The third run: the PostgreSQL tests of writes, timers, jobs, subscriptions and migrations again,
# through a PgBouncer in transaction pooling (scripts/pgbouncer.py; tests/fixtures/database.py).
PGBOUNCER_SUBSET = [
    "tests/api/test_execution.py",
    "tests/api/test_timers_api.py",
    "tests/api/test_jobs_api.py",
    "tests/api/test_event_hub.py",
    "tests/e2e/test_live_activity.py",
    "tests/test_migrations.py",
]


# On Python 3.12 and newer, coverage measures through sys.monitoring, at a fraction of the 3.11
# tracer's cost and counting the same lines (measured 2026-11-29 on a quiet machine: the
# authorization matrix 55 s against 88 s, 46 s without coverage; the CLI-error and README tests,
# a process each, 112 s against 150 s). That core follows greenlets without being told and
# refuses `concurrency = greenlet`, which the tracer needs (pyproject.toml): its runs say
# threads alone, and the processes they start inherit it. `.python-version` picks 3.12 for pyenv.
SYSMON = ["--concurrency=thread"] if sys.version_info >= (3, 12) else []


def pgbouncer_installed() -> bool:
    return any(os.path.exists(p) for p in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"))


def postgres_answers() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=1):
            return True
    except OSError:
        return False


class Run:
    """One backend's pytest process, its output kept in a temporary file until it ends."""

    def __init__(
        self, name: str, extra_env: dict[str, str], args: list[str], *, coverage: bool, backend: str | None = None
    ) -> None:
        self.backend = name
        self.output = tempfile.TemporaryFile()
        env = {**os.environ, "CASEWAY_TEST_BACKEND": backend or name, **extra_env}
        runner = ["-m", "coverage", "run", *SYSMON, "-m", "pytest"] if coverage else ["-m", "pytest"]
        if coverage and SYSMON:
            env["COVERAGE_CORE"] = "sysmon"
        self.process = subprocess.Popen(
            [sys.executable, *runner, *args], env=env, stdout=self.output, stderr=subprocess.STDOUT
        )

    def finish(self) -> int:
        status = self.process.wait()
        print(f"\n=== test suite on {self.backend} ===", flush=True)
        self.output.seek(0)
        sys.stdout.buffer.write(self.output.read())
        sys.stdout.flush()
        self.output.close()
        return status


def report() -> int:
    """Combine every process's data (both databases, servers, CLIs) and print the report."""
    print("\n=== coverage, SQLite and PostgreSQL combined ===", flush=True)
    subprocess.call([sys.executable, "-m", "coverage", "combine", "--quiet"])
    return subprocess.call([sys.executable, "-m", "coverage", "report"])


def main() -> int:
    args = sys.argv[1:]
    coverage = "--coverage" in args
    args = [a for a in args if a != "--coverage"]
    if coverage:
        subprocess.call([sys.executable, "-m", "coverage", "erase"])
    # The whole suite prints its slowest tests, for keeping CI under its 25 minutes.
    timed = args or ["--durations=30"]
    sqlite = Run("sqlite", {}, timed, coverage=coverage)
    pg_url = os.environ.get("CASEWAY_TEST_POSTGRES_URL")
    postgres = None
    if pg_url or postgres_answers():
        # The whole suite's PostgreSQL run leaves out what touches no PostgreSQL database: the
        # SQLite run beside it runs those (marker backend_free, pyproject.toml).
        on_postgres = timed if args else [*timed, "-m", "not backend_free"]
        postgres = Run("postgres", {"CASEWAY_TEST_POSTGRES_URL": pg_url or DEFAULT_PG}, on_postgres, coverage=coverage)
    status = sqlite.finish()
    bounced = None
    if postgres is not None and not args and (pgbouncer_installed() or os.environ.get("CI")):
        # The whole suite only (`make test`, CI): started once the SQLite run has ended, beside
        # the PostgreSQL run's tail.
        bounced = Run(
            "postgres through PgBouncer",
            {"CASEWAY_TEST_POSTGRES_URL": pg_url or DEFAULT_PG, "CASEWAY_TEST_PGBOUNCER": "1"},
            PGBOUNCER_SUBSET,
            coverage=coverage,
            backend="postgres",
        )
    if postgres is not None:
        status = postgres.finish() or status
        print("\nPostgreSQL run: done", flush=True)
    if bounced is not None:
        status = bounced.finish() or status
        print("\nPostgreSQL through PgBouncer: done", flush=True)
    elif postgres is not None and not args:
        print("\nPostgreSQL through PgBouncer: skipped (pgbouncer is not installed: apt-get install pgbouncer)")
    elif postgres is None and os.environ.get("CI"):
        print("\nPostgreSQL run: MISSING (no server at 127.0.0.1:5432) - failing on CI", flush=True)
        return 1
    elif postgres is None:
        print("\nPostgreSQL run: skipped (no server at 127.0.0.1:5432)", flush=True)
    if coverage:
        status = report() or status
    return status


if __name__ == "__main__":
    sys.exit(main())
