"""Timed requests for bench A1 (bench/abuse.py): one request bounded as a whole, whatever the
server does with it, and a probe that measures how long other requests wait meanwhile."""

import asyncio
import json
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx

PROBE = b'{"query":"{ __typename }"}'
PROBE_PAUSE = 0.005  # seconds between the probe's requests: a steady 150-200 requests/s
READ_CAP = 1 << 20  # bytes of an answer read; a longer answer is no refusal, and is dropped
JSON = {"Content-Type": "application/json"}


@dataclass
class Answer:
    ms: float
    status: int | None  # None: no HTTP answer (timeout, connection closed)
    code: str  # errors[0].extensions.code, "data" when answered, or what went wrong

    @property
    def answered(self) -> bool:
        """The server ran the document and sent its data."""
        return self.status is not None and self.status < 400 and self.code.startswith("data")

    @property
    def refused(self) -> bool:
        return self.status is not None and self.status < 500 and not self.answered


def _code(raw: bytes, truncated: bool) -> str:
    """What an answer says, in a few words: its first error's code, or that it answered."""
    if truncated:
        return f"data (> {READ_CAP >> 20} MB)"
    try:
        body = json.loads(raw)
    except ValueError:
        return raw[:40].decode(errors="replace").strip() or "(empty)"
    if isinstance(body, dict) and body.get("errors"):
        error = body["errors"][0]
        return str((error.get("extensions") or {}).get("code") or error.get("message", "")[:40])
    return "data"


async def _post(client: httpx.AsyncClient, url: str, body: bytes, headers: dict[str, str]) -> Answer:
    started = time.perf_counter()
    async with client.stream("POST", url, content=body, headers=headers) as response:
        raw = bytearray()
        async for chunk in response.aiter_raw():
            raw += chunk
            if len(raw) > READ_CAP:
                break
        code = _code(bytes(raw), len(raw) > READ_CAP)
        return Answer((time.perf_counter() - started) * 1000, response.status_code, code)


async def _push(url: str, body: bytes, headers: dict[str, str], chunked: bool) -> Answer:
    """A large body as an attacker pushes it, over HTTP/1.1 by hand, reading while it writes: a
    server that refuses may answer and close long before the body is written, which httpx
    (writing first) reports as a ReadError instead of the server's answer."""
    target = httpx.URL(url)
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection(target.host, target.port)
    framing = {"Transfer-Encoding": "chunked"} if chunked else {"Content-Length": str(len(body))}
    fields = {"Host": f"{target.host}:{target.port}", **headers, **framing}
    head = f"POST {target.raw_path.decode()} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items())

    async def write() -> None:
        writer.write(head.encode() + b"\r\n")
        view = memoryview(body)
        for offset in range(0, len(body), 1 << 16):
            piece = view[offset : offset + (1 << 16)]
            writer.write(b"%x\r\n%b\r\n" % (len(piece), piece) if chunked else piece)
            await writer.drain()
        writer.write(b"0\r\n\r\n" if chunked else b"")
        await writer.drain()

    pushing = asyncio.create_task(write())
    try:
        answer_head = await reader.readuntil(b"\r\n\r\n")
        length = re.search(rb"(?im)^content-length:\s*(\d+)", answer_head)
        raw = await reader.readexactly(min(int(length.group(1)), READ_CAP)) if length else b""
        status = int(answer_head.split(None, 2)[1])
        return Answer((time.perf_counter() - started) * 1000, status, _code(raw, False))
    finally:
        pushing.cancel()
        await asyncio.gather(pushing, return_exceptions=True)  # the server may have closed on it
        writer.close()


async def send(
    client: httpx.AsyncClient,
    url: str,
    body: bytes,
    *,
    headers: dict[str, str],
    pushed: bool = False,
    chunked: bool = False,
    time_limit: float,
) -> Answer:
    """One request of a document, bounded by ``time_limit`` seconds as a whole (httpx's own
    timeouts are per read, and a server that trickles its answer never trips them)."""
    started = time.perf_counter()
    try:
        async with asyncio.timeout(time_limit):
            return await (_push(url, body, headers, chunked) if pushed else _post(client, url, body, headers))
    except TimeoutError:
        return Answer((time.perf_counter() - started) * 1000, None, "timeout")
    except (httpx.TransportError, OSError, asyncio.IncompleteReadError) as error:  # closed without an answer
        return Answer((time.perf_counter() - started) * 1000, None, type(error).__name__)


# The probe's loop, in a process of its own: "S <start>" before each request, "E <start> <seconds>
# <answered>" after (answered: 1 for a 200). time.perf_counter is the system's monotonic clock,
# the same in both processes.
_PROBE_LOOP = """
import sys, time, httpx
url, limit, pause = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
with httpx.Client(timeout=limit, limits=httpx.Limits(max_connections=1)) as client:
    while True:
        started = time.perf_counter()
        print("S", started, flush=True)
        try:
            body = b'{"query":"{ __typename }"}'
            ok = client.post(url, content=body, headers={"Content-Type": "application/json"}).status_code == 200
        except httpx.HTTPError:
            ok = False
        print("E", started, time.perf_counter() - started, int(ok), flush=True)
        time.sleep(pause)
"""


class Probe:
    """`{ __typename }` in a loop over one connection, in a process of its own until stopped:
    neither the sender's event loop nor its hold on the GIL (copying a 50 MB body) can delay it,
    so its latencies are the server's. ``spans`` are (start, seconds) of each request; the one
    still waiting when the probe is stopped counts for as long as it had waited."""

    def __init__(self, url: str, time_limit: float) -> None:
        self.url, self.time_limit = url, time_limit
        self.spans: list[tuple[float, float, bool]] = []  # (start, seconds, answered with a 200)
        self.answered = threading.Event()
        self._waiting_since: float | None = None
        self._lock = threading.Lock()  # the reader and stop() record the last span exactly once
        self._stopped = False
        self._process: subprocess.Popen[str] | None = None

    def start(self) -> "Probe":
        self._process = subprocess.Popen(
            [sys.executable, "-c", _PROBE_LOOP, self.url, str(self.time_limit), str(PROBE_PAUSE)],
            stdout=subprocess.PIPE,
            text=True,
        )
        threading.Thread(target=self._read, args=(self._process.stdout,), name="a1-probe", daemon=True).start()
        return self

    def _read(self, lines: Any) -> None:
        with lines:  # to its end: the probe's process is killed by stop()
            for line in lines:
                kind, *numbers = line.split()
                with self._lock:
                    if self._stopped:
                        continue
                    if kind == "S":
                        self._waiting_since = float(numbers[0])
                    else:
                        self._waiting_since = None
                        self.spans.append((float(numbers[0]), float(numbers[1]), numbers[2] == "1"))
                        self.answered.set()

    def stop(self) -> None:
        """End the probe by its PID; a request in flight is recorded now, for as long as it waited."""
        with self._lock:
            self._stopped = True
            if self._waiting_since is not None:
                self.spans.append((self._waiting_since, time.perf_counter() - self._waiting_since, True))
        if self._process is not None:
            self._process.kill()
            self._process.wait(10)

    def during(self, start: float, end: float) -> tuple[list[float], int]:
        """Latencies in ms of the requests in flight at some moment between ``start`` and ``end``,
        and how many of them failed (no answer, or not a 200: the server crashed or refused)."""
        spans = [(seconds, ok) for begun, seconds, ok in self.spans if begun <= end and begun + seconds >= start]
        return [seconds * 1000 for seconds, _ in spans], sum(not ok for _, ok in spans)
