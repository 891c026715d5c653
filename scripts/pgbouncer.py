"""Debian's PgBouncer in transaction pooling, in a temporary directory, for the tests and the
benchmark: `python scripts/pgbouncer.py [--pool-size N]` runs one in front of the machine's
PostgreSQL until interrupted and prints its URL; tests use ``running_pgbouncer()``.

PgBouncer refuses to run as root, so as root it runs as the ``postgres`` user (the directory is
handed to that user); it listens on 127.0.0.1 only, on a free port, forwards every database name
to the PostgreSQL at ``--target`` (trust authentication, as the machine's), and is stopped by its
PID when the block ends. Install it with `apt-get install pgbouncer` (.ci/run does).
"""

import argparse
import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BINARY_PLACES = ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer")


def binary() -> str | None:
    """The pgbouncer executable, or None when it is not installed."""
    found = shutil.which("pgbouncer")
    return found or next((p for p in BINARY_PLACES if Path(p).exists()), None)


@dataclass(frozen=True)
class Bouncer:
    port: int
    target_host: str
    target_port: int

    def url(self, database: str, user: str = "postgres") -> str:
        """The URL of ``database`` through this PgBouncer."""
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _config(directory: Path, port: int, *, target_host: str, target_port: int, pool_size: int) -> str:
    return f"""[databases]
* = host={target_host} port={target_port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {directory / "users.txt"}
pool_mode = transaction
; every client of one database and user shares this many server connections
default_pool_size = {pool_size}
max_db_connections = {pool_size}
reserve_pool_size = 0
max_client_conn = 2000
; asyncpg and libpq send it at start; PgBouncer would refuse the connection
ignore_startup_parameters = extra_float_digits
server_reset_query =
logfile = {directory / "pgbouncer.log"}
pidfile = {directory / "pgbouncer.pid"}
"""


@contextlib.contextmanager
def running_pgbouncer(
    *,
    target_host: str = "127.0.0.1",
    target_port: int = 5432,
    pool_size: int = 10,
    users: tuple[str, ...] = ("postgres",),
) -> Iterator[Bouncer]:
    """A PgBouncer in transaction pooling until the block ends."""
    executable = binary()
    if executable is None:
        raise FileNotFoundError("pgbouncer is not installed: apt-get install pgbouncer")
    directory = Path(tempfile.mkdtemp(prefix="caseway-pgbouncer-"))
    port = _free_port()
    (directory / "pgbouncer.ini").write_text(
        _config(directory, port, target_host=target_host, target_port=target_port, pool_size=pool_size)
    )
    (directory / "users.txt").write_text("".join(f'"{user}" ""\n' for user in users))
    as_user: dict[str, object] = {}
    if os.geteuid() == 0:  # PgBouncer refuses root: it runs as postgres, its own process (so
        # the signal that stops it reaches it, not a wrapper such as runuser)
        owner = pwd.getpwnam("postgres")
        for path in (directory, *directory.iterdir()):
            os.chown(path, owner.pw_uid, owner.pw_gid)
        as_user = {"user": owner.pw_uid, "group": owner.pw_gid, "extra_groups": []}
    process = subprocess.Popen(  # it logs to its logfile
        [executable, str(directory / "pgbouncer.ini")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        **as_user,  # type: ignore[arg-type]
    )
    try:
        _wait_for(port, process, directory)
        yield Bouncer(port=port, target_host=target_host, target_port=target_port)
    finally:
        process.send_signal(signal.SIGINT)  # PgBouncer's "shut down now"
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(directory, ignore_errors=True)


def _wait_for(port: int, process: subprocess.Popen[bytes], directory: Path, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log = (directory / "pgbouncer.log").read_text() if (directory / "pgbouncer.log").exists() else ""
            raise RuntimeError(f"pgbouncer exited ({process.returncode}): {log[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    raise TimeoutError(f"pgbouncer did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target-host", default="127.0.0.1")
    parser.add_argument("--target-port", type=int, default=5432)
    parser.add_argument("--pool-size", type=int, default=10)
    args = parser.parse_args()
    with running_pgbouncer(target_host=args.target_host, target_port=args.target_port, pool_size=args.pool_size) as b:
        print(f"PgBouncer (transaction pooling, {args.pool_size} server connections): {b.url('DBNAME')}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()


if __name__ == "__main__":
    main()
