"""Where a scenario's CPU went: the server measured, the load driver, and the rest of the
machine (the database and the kernel), per request.

On a two-core machine that runs the server, PostgreSQL and the load driver together, a
CPU-bound scenario's throughput is the cores divided by the CPU all three spend per request,
so these numbers say why one scenario is faster than another (Linux: reads /proc).
"""

import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


def _machine_busy() -> float:
    """Seconds of CPU the whole machine spent busy (all cores), idle and I/O wait excluded."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / _TICKS


def _stat(pid: int | str) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command name (which may hold spaces):
    [0] state, [1] parent pid, [11] user and [12] system time in ticks."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (uvicorn's workers, npx's node)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int(_stat(entry.name)[1])
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo += parents.get(current, [])
    return found


def _process_cpu(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = _stat(pid)
        except (FileNotFoundError, ProcessLookupError):
            continue  # ended meanwhile: its last slice goes uncounted (to the rest)
        total += int(fields[11]) + int(fields[12])  # utime + stime
    return total / _TICKS


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass
class CpuUse:
    """CPU milliseconds per request, and how many cores were busy on average."""

    server_ms: float
    driver_ms: float
    rest_ms: float
    cores_busy: float

    @property
    def total_ms(self) -> float:
        return self.server_ms + self.driver_ms + self.rest_ms


class Meter:
    """Brackets one load run. ``server_pid``: the process tree of the server measured (None when
    the driver is the measured code itself, as W2's is); the driver is either a child process
    that has exited by ``stop`` (wrk) or this process (W2)."""

    def __init__(self, server_pid: int | None = None) -> None:
        self.server_pid = server_pid

    def start(self) -> "Meter":
        self._pids = _tree(self.server_pid) if self.server_pid else []
        self._server = _process_cpu(self._pids)
        self._children, self._own, self._busy = _children_cpu(), _own_cpu(), _machine_busy()
        self._started = time.monotonic()
        return self

    def stop(self, requests: int) -> CpuUse:
        elapsed = time.monotonic() - self._started
        busy = _machine_busy() - self._busy
        # Workers or connections started during the run count from zero.
        pids = sorted(set(self._pids) | set(_tree(self.server_pid))) if self.server_pid else []
        server = _process_cpu(pids) - self._server
        driver = (_children_cpu() - self._children) + (_own_cpu() - self._own)
        per = 1000 / max(requests, 1)
        return CpuUse(
            server_ms=server * per,
            driver_ms=driver * per,
            rest_ms=max(busy - server - driver, 0.0) * per,
            cores_busy=busy / elapsed if elapsed else 0.0,
        )
