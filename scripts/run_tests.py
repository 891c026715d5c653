"""`make test`: the whole suite on SQLite, then on PostgreSQL when one answers.

PostgreSQL is used when CASEWAY_TEST_POSTGRES_URL is set or 127.0.0.1:5432 accepts a
connection. On CI (CI=true) a missing PostgreSQL run is a failure, not a skip.
"""

import os
import socket
import subprocess
import sys

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/postgres"


def postgres_answers() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=1):
            return True
    except OSError:
        return False


def run(backend: str, extra_env: dict[str, str]) -> int:
    print(f"\n=== test suite on {backend} ===", flush=True)
    env = {**os.environ, "CASEWAY_TEST_BACKEND": backend, **extra_env}
    return subprocess.call([sys.executable, "-m", "pytest", *sys.argv[1:]], env=env)


def main() -> int:
    status = run("sqlite", {})
    pg_url = os.environ.get("CASEWAY_TEST_POSTGRES_URL")
    if pg_url or postgres_answers():
        status = run("postgres", {"CASEWAY_TEST_POSTGRES_URL": pg_url or DEFAULT_PG}) or status
        print("\nPostgreSQL run: done", flush=True)
    elif os.environ.get("CI"):
        print("\nPostgreSQL run: MISSING (no server at 127.0.0.1:5432) - failing on CI", flush=True)
        return 1
    else:
        print("\nPostgreSQL run: skipped (no server at 127.0.0.1:5432)", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
