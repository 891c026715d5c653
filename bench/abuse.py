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

The documents are in bench/abusive.py; the bounded request and the probe in bench/timed.py.
Run alone, it seeds a fresh database, measures, and replaces the A1 section of bench/REPORT.md
(between its ``<!-- A1 -->`` markers); `make bench` runs it on its own data and writes the same
section.
"""

import argparse
import asyncio
import datetime
import os
import statistics
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select

from bench import sections, seed
from bench.abusive import DIAGRAM_STATES, Document, documents, hostile, workflow_spec
from bench.server import ROOT, Server, drop_postgres, fresh_postgres
from bench.timed import JSON, PROBE, PROBE_PAUSE, Answer, Probe, send
from engine.people import identity
from models import Database, User

BEGIN, END = "<!-- A1 -->", "<!-- /A1 -->"

ROUNDS = 5
TIMEOUT = 30.0  # seconds: a request's client timeout, and what one document's rounds may take
REFUSAL_GOAL_MS = 50.0
WAIT_GOAL_MS = 100.0
RSS_GOAL_MB = 50.0  # growth of the server's RSS over a document's distinct hostile documents


@dataclass
class Result:
    document: Document
    answers: list[Answer]
    probe_ms: list[float]  # latencies of the `{ __typename }` requests in flight with the document
    timeout: float = TIMEOUT
    probe_failures: int = 0  # `{ __typename }` requests that got no 200 (a crashed server answers none)
    rss_mb: tuple[float, float] | None = None  # the server's RSS before and after document.hostile documents
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
        if self.rss_mb is not None and self.rss_mb[1] - self.rss_mb[0] > RSS_GOAL_MB:
            found.append(f"RSS grew {self.rss_mb[1] - self.rss_mb[0]:,.0f} MB > {RSS_GOAL_MB:.0f}")
        if self.probe_failures:
            found.append(f"`{{ __typename }}` failed {self.probe_failures} times")
        waited = self.probe_p99_max[1]
        if not waited <= WAIT_GOAL_MS:  # NaN (no probe answered) fails too
            found.append(f"`{{ __typename }}` waited {waited:,.0f} ms > {WAIT_GOAL_MS:.0f}")
        return found

    @property
    def verdict(self) -> str:
        return sections.verdict(self.problems)


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


def rss_mb(pid: int) -> float:
    """A process's resident memory now, in MB (VmRSS of /proc/<pid>/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


async def hostile_rss(url: str, pid: int, count: int) -> tuple[float, float]:
    """The server's RSS (MB) before and after ``count`` distinct hostile documents, one after the
    other (issue 47: each left ~21 MB behind, with no plateau)."""
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        before = rss_mb(pid)
        for n in range(count):
            await client.post(url, json={"query": hostile(n)}, headers=JSON)
        return before, rss_mb(pid)


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


def define_largest_workflow(
    url: str, token: str, sizes: tuple[int, ...] = DIAGRAM_STATES
) -> tuple[str, int, list[tuple[int, str]]]:
    """Define the largest of ``sizes`` states the server accepts; returns its id, its states and
    (size, status and code) of the sizes refused: the spec limits of issue 19 refuse 3,000."""
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
        errors = payload.get("userErrors") or body.get("errors") or [{}]
        code = errors[0].get("code") or (errors[0].get("extensions") or {}).get("code")
        refused.append((states, f"{response.status_code} {code}"))
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
            if document.hostile and not hung:
                result.rss_mb = await hostile_rss(endpoint, server.process.pid, document.hostile)
            results.append(result)
        finally:
            _stop(server, hung=hung)
    if spare is not None:
        _stop(spare, hung=False)
    return results, setup


def section(results: list[Result], setup: dict[str, Any], checkout: Path | None = None) -> list[str]:
    """The A1 section of the report, between its markers."""
    where = checkout or ROOT
    commit = sections.commit(where, subject=True)
    refused = ", ".join(f"{states:,}: {answer}" for states, answer in setup["workflow_sizes_refused"])
    lines = [
        BEGIN,
        "",
        f"A1, abusive documents of issue 19 (`bench/abuse.py`, {datetime.datetime.now(datetime.UTC):%Y-%m-%d}, "
        f"server from `{where.name}` at `{commit}`): a fresh server process per document (uvicorn, one "
        f"worker), each document sent {setup['rounds']} times one after the other while one client process sends "
        f"`{{ __typename }}` over its own connection every {PROBE_PAUSE * 1000:.0f} ms; client timeout "
        f"{setup['timeout']:.0f} s, after which the document stops and the server is killed. Goal: every refusal "
        f"≤ {REFUSAL_GOAL_MS:.0f} ms, no `{{ __typename }}` waits more than {WAIT_GOAL_MS:.0f} ms. The workflow of "
        f"D20 has {setup['workflow_states']:,} states"
        + (f" (the server refused {refused})" if refused else "")
        + ". Answer: the HTTP status and the first error's `extensions.code` (`-`: the connection closed, or no "
        "answer in time); `data`: answered, not refused; a refusal's time is to the end of its answer, as the "
        "client reads it. "
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
    for r in results:
        if r.rss_mb is not None:
            lines += [
                "",
                f"{r.document.key}, memory: the server's RSS was {r.rss_mb[0]:,.0f} MB before "
                f"{r.document.hostile} distinct hostile documents (`bench.abusive.hostile`: 495 copies of one "
                f"field, and 20 x 19 copies that reach validation's work bound, alternately) and {r.rss_mb[1]:,.0f} MB "
                f"after (goal: within {RSS_GOAL_MB:.0f} MB).",
            ]
    return [*lines, "", END]


def replace_section(report: Path, lines: list[str]) -> None:
    """Put the A1 section into ``report`` in place of the one there (before the profile
    findings if it has none), leaving the rest of the report as it was."""
    sections.replace(report, lines, begin=BEGIN, end=END)


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
    sections.publish(section(results, setup, args.checkout), args, name="A1", write=replace_section)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=["small", "medium"], default="small")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--timeout", type=float, default=TIMEOUT)
    parser.add_argument("--only", nargs="+", metavar="KEY", help="documents to send (their keys in the table)")
    parser.add_argument("--checkout", type=Path, help="start the server from this checkout (its .venv)")
    sections.add_arguments(parser)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
