"""A PostgreSQL primary and its streaming replica of their own, for the tests of read replicas:
`python scripts/replica_pair.py [--apply-delay-ms N]` runs a pair until interrupted and prints
their URLs; tests use ``running_pair()``.

Each cluster is made in a temporary directory with the machine's PostgreSQL binaries (``initdb``,
then ``pg_basebackup -R`` for the replica), listens on 127.0.0.1 on a free port, and runs as the
``postgres`` user when started by root (PostgreSQL refuses root). The machine's own server is not
touched. ``apply_delay_ms`` sets the replica's ``recovery_min_apply_delay``: it applies each
commit that long after the primary made it, so a lagging replica is a fact a test can rely on,
not a race it hopes to win. Durability is off (``fsync``): the clusters live for one test.
"""

import argparse
import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def bin_dir() -> Path | None:
    """The newest installed PostgreSQL's binaries (Debian: /usr/lib/postgresql/N/bin), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Pair:
    directory: Path
    primary_port: int
    replica_port: int
    _bin: Path
    _as_user: dict[str, Any]

    def primary_url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.primary_port}/{database}"

    def replica_url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.replica_port}/{database}"

    def _ctl(self, cluster: str, *args: str) -> None:
        data = self.directory / cluster
        subprocess.run(
            [str(self._bin / "pg_ctl"), "-D", str(data), "-l", str(data / "server.log"), "-w", "-t", "60", *args],
            check=True,
            stdout=subprocess.DEVNULL,
            **self._as_user,
        )

    def stop_replica(self) -> None:
        self._ctl("replica", "-m", "fast", "stop")

    def start_replica(self) -> None:
        self._ctl("replica", "start")


def _run(command: list[str], as_user: dict[str, Any]) -> None:
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **as_user)


@contextlib.contextmanager
def running_pair(*, apply_delay_ms: int = 0) -> Iterator[Pair]:
    """A primary and its streaming replica until the block ends, both stopped by pg_ctl."""
    binaries = bin_dir()
    if binaries is None:
        raise FileNotFoundError("PostgreSQL's server binaries (initdb) are not installed")
    directory = Path(tempfile.mkdtemp(prefix="caseway-replicas-"))
    as_user: dict[str, Any] = {}
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(directory, owner.pw_uid, owner.pw_gid)
        as_user = {"user": owner.pw_uid, "group": owner.pw_gid, "extra_groups": [], "cwd": str(directory)}
    pair = Pair(directory, _free_port(), _free_port(), binaries, as_user)
    started: list[str] = []
    try:
        primary = directory / "primary"
        _run([str(binaries / "initdb"), "-D", str(primary), "-U", "postgres", "--auth=trust", "-E", "UTF8"], as_user)
        settings = {
            "port": pair.primary_port,
            "listen_addresses": "'127.0.0.1'",
            "unix_socket_directories": f"'{directory}'",
            "wal_level": "replica",
            "max_wal_senders": 4,
            "hot_standby": "on",
            "fsync": "off",
            "full_page_writes": "off",
            "shared_buffers": "'32MB'",
            "max_connections": 60,
            "jit": "off",
        }
        with (primary / "postgresql.conf").open("a") as conf:
            conf.writelines(f"{key} = {value}\n" for key, value in settings.items())
        pair._ctl("primary", "start")
        started.append("primary")
        replica = directory / "replica"
        _run(
            [
                str(binaries / "pg_basebackup"),
                *("-h", "127.0.0.1", "-p", str(pair.primary_port), "-U", "postgres"),
                *("-D", str(replica), "-R", "-X", "stream", "-c", "fast"),
            ],
            as_user,
        )
        with (replica / "postgresql.auto.conf").open("a") as conf:
            conf.write(f"port = {pair.replica_port}\nrecovery_min_apply_delay = '{apply_delay_ms}ms'\n")
        pair.start_replica()
        started.append("replica")
        yield pair
    finally:
        for cluster in reversed(started):
            with contextlib.suppress(subprocess.CalledProcessError):
                pair._ctl(cluster, "-m", "immediate", "stop")
        shutil.rmtree(directory, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apply-delay-ms", type=int, default=0)
    args = parser.parse_args()
    with running_pair(apply_delay_ms=args.apply_delay_ms) as pair:
        print(f"primary: {pair.primary_url()}\nreplica: {pair.replica_url()}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()


if __name__ == "__main__":
    main()
