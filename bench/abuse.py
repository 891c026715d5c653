"""A1: how fast the server refuses each abusive document of issue 19, and whether other requests
wait behind it.

    python -m bench.abuse [--size small] [--rounds 5] [--timeout 30] [--only F30 B50 ...]
                          [--checkout /path/to/other/worktree] [--report bench/REPORT.md | --no-report]

Each document gets a fresh server process (uvicorn, one worker: a stalled event loop shows in
full instead of being hidden by a second worker), so a document that hangs or bloats the server
does not weigh on the next. While the document is sent ``rounds`` times, one after the other,
a probe sends `{ __typename }` over its own connection every few milliseconds; the probe's
latencies while the document is in flight say how long other requests wait behind it. Every
request has a client timeout; a document stops after its first timeout (or once its rounds have
taken ``timeout`` seconds), and a server that did not answer is killed by its PID.

Run alone, it seeds a fresh database, measures, and replaces the A1 section of bench/REPORT.md
(between its ``<!-- A1 -->`` markers); `make bench` runs it on its own data and writes the same
section.
"""

import argparse
import asyncio
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select

from bench import seed
from bench.abusive import DIAGRAM_STATES, Document, documents, workflow_spec
from bench.server import ROOT, Server, drop_postgres, fresh_postgres
from engine import identity
from models import Database, User

REPORT = ROOT / "bench" / "REPORT.md"
BEGIN, END = "<!-- A1 -->", "<!-- /A1 -->"

ROUNDS = 5
TIMEOUT = 30.0  # seconds: a request's client timeout, and what one document's rounds may take
REFUSAL_GOAL_MS = 50.0
WAIT_GOAL_MS = 100.0
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


@dataclass
class Result:
    document: Document
    answers: list[Answer]
    probe_ms: list[float]  # latencies of the `{ __typename }` requests in flight with the document
    timeout: float = TIMEOUT
    probe_failures: int = 0  # `{ __typename }` requests that got no 200 (a crashed server answers none)
    hung: bool = field(init=False)

    def __post_init__(self) -> None:
        self.hung = any(a.status is None and a.code == "timeout" for a in self.answers)

    @property
    def refusal_ms(self) -> tuple[float, float]:
        times = [a.ms for a in self.answers]
        return statistics.median(times), max(times)

    @property
    def probe_p99_max(self) -> tuple[float, float]:
        if not self.probe_ms:
            return float("nan"), float("nan")
        ordered = sorted(self.probe_ms)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], ordered[-1]

    @property
    def codes(self) -> str:
        seen = dict.fromkeys(f"{a.status or '-'} {a.code}" for a in self.answers)
        return ", ".join(seen)

    @property
    def problems(self) -> list[str]:
        found = []
        if self.hung:
            found.append(f"no answer in {self.timeout:g} s")
        if any(a.status is not None and a.status >= 500 for a in self.answers):
            found.append("HTTP 5xx")
        if not self.document.may_answer and any(a.answered for a in self.answers):
            found.append("answered, not refused")
        slowest = self.refusal_ms[1]
        if not self.hung and slowest > REFUSAL_GOAL_MS:
            found.append(f"took {slowest:,.0f} ms > {REFUSAL_GOAL_MS:.0f}")
        if self.probe_failures:
            found.append(f"`{{ __typename }}` failed {self.probe_failures} times")
        waited = self.probe_p99_max[1]
        if not waited <= WAIT_GOAL_MS:  # NaN (no probe answered) fails too
            found.append(f"`{{ __typename }}` waited {waited:,.0f} ms > {WAIT_GOAL_MS:.0f}")
        return found

    @property
    def verdict(self) -> str:
        problems = self.problems
        return "ok" if not problems else "**fail**: " + "; ".join(problems)


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


async def measure(
    url: str, document: Document, *, token: str | None, rounds: int = ROUNDS, time_limit: float = TIMEOUT
) -> Result:
    """Send ``document`` ``rounds`` times to ``url`` (the GraphQL endpoint) with the probe running."""
    bodies = [build() for build in document.bodies]  # built before the clock starts
    headers = dict(JSON)
    if token and document.authenticated:
        headers["Authorization"] = f"Bearer {token}"
    probe = Probe(url, time_limit).start()
    answers: list[Answer] = []
    try:
        if not await asyncio.to_thread(probe.answered.wait, time_limit):  # the server answers others first
            raise RuntimeError("the server does not answer `{ __typename }`")
        start = time.perf_counter()
        async with httpx.AsyncClient(timeout=time_limit) as client:
            for n in range(rounds):
                body = bodies[n % len(bodies)]
                answers.append(
                    await send(
                        client,
                        url,
                        body,
                        headers=headers,
                        pushed=document.pushed,
                        chunked=document.chunked,
                        time_limit=time_limit,
                    )
                )
                if answers[-1].code == "timeout" or time.perf_counter() - start > time_limit:
                    break
                await asyncio.sleep(0.05)  # the probe gets answers between rounds
        end = time.perf_counter()
        if not answers[-1].code == "timeout":
            await asyncio.sleep(0.05)  # a probe stuck behind the last round finishes
    finally:
        probe.stop()
    latencies, failures = probe.during(start, end)
    return Result(document, answers, latencies, time_limit, failures)


async def _admin_token(database_url: str) -> str:
    """A token of an admin (created if missing), who may define the large workflow."""
    db = Database(database_url)
    async with db.transaction() as s:
        admin = await s.scalar(select(User).where(User.login == "a1-admin"))
        if admin is None:
            admin = await identity.create_user(s, actor=None, login="a1-admin", password=uuid.uuid4().hex, admin=True)
        token = await identity.create_token(s, user_id=admin.id, ttl_seconds=3600)
    await db.dispose()
    return token


DEFINE = """mutation($spec: JSON!) { defineWorkflow(input: {spec: $spec}) {
  workflow { id } userErrors { code message } } }"""


def define_largest_workflow(url: str, token: str, sizes: tuple[int, ...] = DIAGRAM_STATES) -> tuple[str, int, list]:
    """Define the largest of ``sizes`` states the server accepts; returns its id, its states and
    the answers of the sizes refused (the spec limits of issue 19 may refuse 3,000)."""
    refused = []
    for states in sizes:
        response = httpx.post(
            url,
            json={"query": DEFINE, "variables": {"spec": workflow_spec(states)}},
            headers={"Authorization": f"Bearer {token}"},
            timeout=TIMEOUT,
        )
        body = response.json()
        payload = (body.get("data") or {}).get("defineWorkflow") or {}
        if payload.get("workflow"):
            return payload["workflow"]["id"], states, refused
        refused.append((states, response.status_code, payload.get("userErrors") or body.get("errors")))
    raise RuntimeError(f"the server refused every workflow size: {refused}")


def _stop(server: Server, hung: bool) -> None:
    """Stop the server by its PID: a hung one ignores SIGTERM (issue 19, finding 1), so kill it."""
    if not hung:
        server.process.terminate()
        try:
            server.process.wait(5)
            return
        except subprocess.TimeoutExpired:
            pass
    server.process.kill()
    server.process.wait(10)


async def run(
    database_url: str,
    token: str,
    *,
    rounds: int = ROUNDS,
    time_limit: float = TIMEOUT,
    only: list[str] | None = None,
    checkout: Path | None = None,
    workflow_sizes: tuple[int, ...] = DIAGRAM_STATES,
    start: Callable[..., Server] = Server,
) -> tuple[list[Result], dict[str, Any]]:
    """A1 over a seeded database (``token``: a user's who may read its projects); a fresh server
    per document, started by ``start``. The server that defines D20's workflow serves the first
    document too, unless that is D20 (it would find the workflow parsed and cached)."""
    chosen = set(only or [])
    admin = await _admin_token(database_url)
    spare: Server | None = await asyncio.to_thread(start, database_url, workers=1, checkout=checkout)
    try:
        workflow_id, states, refused = await asyncio.to_thread(
            define_largest_workflow, f"{spare.url}/graphql", admin, workflow_sizes
        )
    except BaseException:
        _stop(spare, hung=False)
        raise
    setup = {
        "workflow_states": states,
        "workflow_sizes_refused": refused,
        "rounds": rounds,
        "timeout": time_limit,
        "load": os.getloadavg()[0],  # this machine's speed wanders with what else runs on it
    }
    results = []
    for document in documents(workflow_id=workflow_id, workflow_states=states):
        if chosen and document.key not in chosen:
            continue
        print(f"A1 {document.key}...", flush=True)
        if spare is not None and document.key != "D20":
            server, spare = spare, None
        else:
            server = await asyncio.to_thread(start, database_url, workers=1, checkout=checkout)
        hung = True
        try:
            endpoint = f"{server.url}/graphql"
            async with httpx.AsyncClient(timeout=time_limit) as warm:  # pools, caches, the token's actor
                for _ in range(3):
                    await warm.post(endpoint, content=PROBE, headers=JSON)
                viewer = {"query": "{ viewer { login } }"}
                await warm.post(endpoint, json=viewer, headers={"Authorization": f"Bearer {token}"})
            result = await measure(endpoint, document, token=token, rounds=rounds, time_limit=time_limit)
            hung = result.hung
            results.append(result)
        finally:
            _stop(server, hung=hung)
    if spare is not None:
        _stop(spare, hung=False)
    return results, setup


def _commit(checkout: Path) -> str:
    out = subprocess.run(["git", "-C", str(checkout), "log", "-1", "--format=%h %s"], capture_output=True, text=True)
    return out.stdout.strip()


def section(results: list[Result], setup: dict[str, Any], checkout: Path | None = None) -> list[str]:
    """The A1 section of the report, between its markers."""
    where = checkout or ROOT
    refused = "; ".join(f"{states} refused ({status})" for states, status, _ in setup["workflow_sizes_refused"])
    lines = [
        BEGIN,
        "",
        f"A1, abusive documents of issue 19 (`bench/abuse.py`, {datetime.datetime.now(datetime.UTC):%Y-%m-%d}, "
        f"server from `{where.name}` at `{_commit(where)}`): a fresh server process per document (uvicorn, one "
        f"worker), each document sent {setup['rounds']} times one after the other while one client process sends "
        f"`{{ __typename }}` over its own connection every {PROBE_PAUSE * 1000:.0f} ms; client timeout "
        f"{setup['timeout']:.0f} s, after which the document stops and the server is killed. Goal: every refusal "
        f"≤ {REFUSAL_GOAL_MS:.0f} ms, no `{{ __typename }}` waits more than {WAIT_GOAL_MS:.0f} ms. The workflow of "
        f"D20 has {setup['workflow_states']:,} states" + (f" ({refused})" if refused else "") + ". Answer: the "
        "HTTP status and the first error's `extensions.code` (`-`: the connection closed, or no answer in time); "
        "`data`: answered, not refused; a refusal's time is to the end of its answer, as the client reads it. "
        f"Load average {setup['load']:.1f} on {os.cpu_count()} cores when it started.",
        "",
        "| document | answer (status, code) | rounds | refusal p50 / max ms | `{ __typename }` during it: "
        "requests, p99 / max ms | verdict |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for r in results:
        p50, slowest = r.refusal_ms
        p99, waited = r.probe_p99_max
        lines.append(
            f"| {r.document.key}: {r.document.what} | {r.codes} | {len(r.answers)} | {p50:,.1f} / {slowest:,.1f} | "
            f"{len(r.probe_ms)}, {p99:,.1f} / {waited:,.1f} | {r.verdict} |"
        )
    return [*lines, "", END]


def replace_section(report: Path, lines: list[str]) -> None:
    """Put the A1 section into ``report`` in place of the one there (before the profile
    findings if it has none), leaving the rest of the report as it was."""
    text = report.read_text() if report.exists() else ""
    block = "\n".join(lines)
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + block + rest.split(END, 1)[1]
    elif "\n## Profile findings" in text:
        head, rest = text.split("\n## Profile findings", 1)
        text = head.rstrip("\n") + "\n\n" + block + "\n\n## Profile findings" + rest
    else:
        text = text + ("\n" if text else "") + block + "\n"
    report.write_text(text)


async def main_async(args: argparse.Namespace) -> None:
    url, name = await fresh_postgres("caseway_a1")
    try:
        print(f"seeding {args.size} into {name}...", flush=True)
        await seed.seed(url, *seed.SIZES[args.size])
        data = await seed.driver_data(url)
        results, setup = await run(
            url, data["token"], rounds=args.rounds, time_limit=args.timeout, only=args.only, checkout=args.checkout
        )
    finally:
        await drop_postgres(name)
    lines = section(results, setup, args.checkout)
    print("\n".join(lines))
    if not args.no_report:
        replace_section(args.report, lines)
        print(f"wrote the A1 section of {args.report}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=["small", "medium"], default="small")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--timeout", type=float, default=TIMEOUT)
    parser.add_argument("--only", nargs="+", metavar="KEY", help="documents to send (their keys in the table)")
    parser.add_argument("--checkout", type=Path, help="start the server from this checkout (its .venv)")
    parser.add_argument("--report", type=Path, default=REPORT)
    parser.add_argument("--no-report", action="store_true", help="print the section only")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
