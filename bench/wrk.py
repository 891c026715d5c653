"""Driving an HTTP endpoint with wrk: one or many request bodies, parsed results."""

import json
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

# Each wrk thread has its own Lua state: threads start at evenly spaced bodies, so with many
# bodies (W1's distinct cases) two threads never send the same one at the same time.
_LUA = """
local bodies = {BODIES}
local counter = 0
local started = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
{AUTH}
setup = function(thread)
  thread:set("index", started)
  started = started + 1
end
init = function(args)
  counter = index * math.floor(#bodies / {THREADS})
end
request = function()
  counter = counter + 1
  return wrk.format(nil, "{PATH}", nil, bodies[(counter % #bodies) + 1])
end
"""


@dataclass
class WrkResult:
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    errors: int
    requests: int


def _ms(value: str) -> float:
    number, unit = re.match(r"([\d.]+)(\w+)", value).groups()  # type: ignore[union-attr]
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def _percentile(out: str, label: str) -> float:
    """A latency percentile in ms; NaN when wrk printed none (no request completed)."""
    found = re.search(label + r"\s+([\d.]+\w+)", out)
    return _ms(found.group(1)) if found else float("nan")


def run(
    url: str,
    bodies: list[dict],
    *,
    token: str | None = None,
    path: str = "/graphql",
    connections: int = 32,
    threads: int = 2,
    seconds: int = 10,
) -> WrkResult:
    lua_bodies = "{" + ",".join("[==[" + json.dumps(b) + "]==]" for b in bodies) + "}"
    auth = f'wrk.headers["Authorization"] = "Bearer {token}"' if token else ""
    script = _LUA.replace("{BODIES}", lua_bodies).replace("{AUTH}", auth).replace("{PATH}", path)
    script = script.replace("{THREADS}", str(threads))
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script)
    try:
        out = subprocess.run(
            # --timeout: a request that takes longer than wrk's default 2 s still did its work;
            # with 32 connections on a slow scenario, dropping it understates throughput.
            [
                "wrk",
                f"-t{threads}",
                f"-c{connections}",
                f"-d{seconds}s",
                "--timeout",
                "10s",
                "--latency",
                "-s",
                f.name,
                url,
            ],
            capture_output=True,
            text=True,
            timeout=seconds + 60,
            check=True,
        ).stdout
    finally:
        Path(f.name).unlink()
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50, p99 = _percentile(out, "50%"), _percentile(out, "99%")
    total = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    errors = (int(bad.group(1)) if bad else 0) + (sum(map(int, socket_errors.groups())) if socket_errors else 0)
    return WrkResult(rps, p50, p99, errors, total)
