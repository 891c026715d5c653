"""Starting a Caseway server for a benchmark, and fresh databases to run it on."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Self, TypeVar

import asyncpg
import httpx

from server.bootstrap import DEMO_PASSWORD
from server.settings import Settings

T = TypeVar("T")

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN = os.environ.get("CASEWAY_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The planner's cost of a random page read, as recommended for SSD storage (the default, 4, is
# for spinning disks): with it PostgreSQL probes indexes for a page of 200 cases instead of
# scanning whole tables. Set on the benchmark database, so it holds for both servers measured.
RANDOM_PAGE_COST = 1.1


async def fresh_postgres(prefix: str = "caseway_bench") -> tuple[str, str]:
    """Create an empty database; returns (its URL, its name)."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    conn = await asyncpg.connect(PG_ADMIN)
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.execute(f'ALTER DATABASE "{name}" SET random_page_cost = {RANDOM_PAGE_COST}')
    await conn.close()
    return PG_ADMIN.rsplit("/", 1)[0] + f"/{name}", name


async def on_fresh_postgres(prefix: str, run: Callable[..., Awaitable[T]], **kwargs: Any) -> T:
    """``run(url, **kwargs)`` on an empty database of its own, dropped afterwards (a scenario
    run alone or by `make bench`: T1, J1, J2)."""
    url, name = await fresh_postgres(prefix)
    try:
        return await run(url, **kwargs)
    finally:
        await drop_postgres(name)


async def vacuum_analyze(url: str) -> None:
    """After seeding, the state autovacuum brings a table to some time after a bulk load, before
    any server is measured: fresh planner statistics, and a visibility map that lets an index-only
    scan skip the table (without it, R1's page of 200 items fetched 400 heap tuples, and its
    statements took 10.5-11.5 ms of PostgreSQL's time per request against 7.6-7.9 after)."""
    conn = await asyncpg.connect(url)
    await conn.execute("VACUUM ANALYZE")
    await conn.close()


async def drop_postgres(name: str) -> None:
    conn = await asyncpg.connect(PG_ADMIN)
    await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    await conn.close()


def stop_process(process: subprocess.Popen[Any], *, within: float) -> None:
    """Stop a server started in a session of its own: SIGTERM, SIGKILL after ``within`` seconds
    (then reaped: a killed child left unwaited warns when collected), and what is left of its
    process group killed: a uvicorn worker stuck in a request when its supervisor ended outlives
    it, orphaned, and was seen spinning a core for the rest of a CI run."""
    process.terminate()
    try:
        process.wait(within)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


class Server:
    """`uvicorn server.asgi:app` (or another ``app``, or a ``factory`` of one) in a child process,
    stopped by its PID; from another ``checkout`` of Caseway (with its own .venv) when given, so a
    scenario can measure a branch's server against this one's data."""

    def __init__(
        self,
        database_url: str,
        *,
        workers: int = 1,
        env: dict[str, str] | None = None,
        app: str = "server.asgi:app",
        factory: bool = False,
        checkout: Path | None = None,
        wait: bool = True,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        environment = {**os.environ, "CASEWAY_DATABASE_URL": database_url, **(env or {})}
        # As `caseway serve` runs it: a WebSocket message is bounded as a request body is.
        ws_max_size = environment.get("CASEWAY_MAX_BODY_BYTES", str(Settings.model_fields["max_body_bytes"].default))
        self.process = subprocess.Popen(
            [
                str(checkout / ".venv" / "bin" / "python") if checkout else sys.executable,
                "-m",
                "uvicorn",
                app,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--workers",
                str(workers),
                "--log-level",
                "warning",
                "--no-access-log",
                "--ws-per-message-deflate",  # off, as `caseway serve` runs it
                "false",
                "--ws-max-size",
                ws_max_size,
                *(["--factory"] if factory else []),
            ],
            cwd=checkout or ROOT,
            env=environment,
            start_new_session=True,  # its workers in its process group: stop() ends them all
        )
        if wait:
            self.wait_until_healthy()

    def wait_until_healthy(self) -> Self:
        """Returns once /health answers (``wait=False`` starts several servers whose start-ups,
        mostly imports, then overlap)."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("the server did not start")

    def stop(self) -> None:
        stop_process(self.process, within=15)


class Serve:
    """`caseway serve --demo` in a child process, as a newcomer runs it (migrations, demo data, the
    built web assets), stopped by its PID: the browser tests and bench D1 drive it."""

    def __init__(self, database_url: str, *, workers: int = 1, env: dict[str, str] | None = None) -> None:
        env = {**os.environ, "CASEWAY_DATABASE_URL": database_url, "CASEWAY_HUB_POLL_INTERVAL": "1", **(env or {})}
        output = ""
        for _ in range(3):  # a free port can be taken by another process before this one binds it
            self.port = free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            self.log = tempfile.TemporaryFile()
            command = ["serve", "--demo", "--port", str(self.port), "--workers", str(workers)]
            self.process = subprocess.Popen(
                [sys.executable, "-m", "server.cli", *command],
                cwd=ROOT,
                env=env,
                stdout=self.log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its workers in its process group: stop() ends them all
            )
            if self._started(deadline=time.monotonic() + 120):
                return
            self.log.seek(0)
            output = self.log.read().decode(errors="replace")
            self.stop()
        raise RuntimeError("caseway serve did not start:\n" + output[-3000:])

    def _started(self, deadline: float) -> bool:
        """Healthy, and it is this process that listens on the port (not another's server)."""
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return _listens(self.process.pid, self.port)
            except httpx.HTTPError:
                time.sleep(0.3)
        return False

    def gql(self, query: str, variables: dict[str, Any] | None = None, *, token: str | None = None) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        body = httpx.post(
            f"{self.url}/graphql", json={"query": query, "variables": variables or {}}, headers=headers, timeout=30
        ).json()
        assert not body.get("errors"), body["errors"]
        return body["data"]

    def login(self, login: str, password: str = DEMO_PASSWORD) -> str:
        query = "mutation($l: String!, $p: String!) { login(input: {login: $l, password: $p}) { token } }"
        return self.gql(query, {"l": login, "p": password})["login"]["token"]

    def stop(self) -> None:
        stop_process(self.process, within=20)
        self.log.close()


def _listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds the socket listening on ``port`` (Linux /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                    inodes.add(f"socket:[{fields[9]}]")
    with contextlib.suppress(OSError):
        return any(os.readlink(fd) in inodes for fd in Path(f"/proc/{pid}/fd").iterdir())
    return False
