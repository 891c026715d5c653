"""J1: webhook jobs end to end on PostgreSQL (the project's goal: ≥ 500 delivered per second, p99
commit → delivery ≤ 200 ms).

    python -m bench.jobs [--jobs 3000] [--cases 300] [--rate 100] [--seconds 10] [--workers 2]
                         [--report bench/REPORT.md | --no-report]

A receiver in this process (a bare ASGI app on uvicorn, answering 200 at once) is the
``billing`` endpoint of a server of ``workers`` processes (uvicorn, as `caseway serve` runs
it, each with its job runner).

- Throughput: ``jobs`` webhook jobs (``cases`` cases, the same number each, so each case's are
  delivered one at a time in order) are written through the engine, not yet due; the server
  starts; then one UPDATE makes them all due at once and a NOTIFY wakes the runners. Jobs/s =
  jobs / (the last delivery - that commit).
- Latency: ``executeAction`` over HTTP at ``rate`` per second for ``seconds``, spread over the
  cases and both processes, sent by a lean driver (``Driver``: raw keep-alive connections, so
  the load generator leaves the two cores to what it measures); each job's delay is its
  delivery's arrival - its log entry's ``at`` (taken inside the action's transaction, before its
  commit: the commit → delivery time, plus the transaction's own end). p50 / p99 / max.

Run alone, it replaces the J1 section of bench/REPORT.md (between its markers); `make bench`
runs it on a database of its own and writes the same section.
"""

import argparse
import asyncio
import json
import math
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import orjson
import uvicorn

import engine
from bench import cpu, sections
from bench.server import Server, on_fresh_postgres
from engine.jobs import webhook
from engine.people import identity
from engine.spec import workflows
from models import Database
from server.migrate import upgrade

BEGIN, END = "<!-- J1 -->", "<!-- /J1 -->"
JOBS, CASES, RATE, SECONDS, WORKERS = 3000, 300, 100, 10, 2
GOAL_RATE, GOAL_P99_MS = 500, 200
SECRET = "bench-secret"
SPEC = {
    "short_name": "billed",
    "states": {"open": {}, "closed": {"terminal": True}},  # a workflow must be able to complete
    "actions": {
        "open": {"trigger": "init", "new_state": "open"},
        "close": {"privileges": ["workflowItem.update"], "enabled_states": ["open"], "new_state": "closed"},
        "note": {
            "privileges": ["workflowItem.update"],
            "always_enabled": True,
            "side_effects": [{"webhook": {"endpoint": "billing"}}],
        },
    },
}
EXECUTE = """mutation($c: ID!) { executeAction(input: {caseId: $c, action: "note"}) { userErrors { code } } }"""


class Sink:
    """The receiver: records (arrival time, body) and answers 200; nothing else."""

    def __init__(self) -> None:
        self.arrivals: list[tuple[float, bytes]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.arrivals.append((time.time(), body))
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})


class Driver:
    """The latency load: ``executeAction`` requests sent at fixed times over ``connections`` raw
    keep-alive HTTP/1.1 connections, each request's bytes built once. An httpx client with a
    shared pool spent 5-9 ms of CPU per request here (its pool scans every connection for every
    queued request), on the cores the server and PostgreSQL need: the driver slowed down what it
    measured. This one spends a few hundredths of that."""

    def __init__(self, url: str, token: str, connections: int = 16) -> None:
        parts = httpx.URL(url)
        self.host, self.port = parts.host, parts.port or 80
        self.token = token
        self.connections = connections
        self.answers: list[int] = []

    def request(self, case_id: str) -> bytes:
        body = orjson.dumps({"query": EXECUTE, "variables": {"c": case_id}})
        head = (
            f"POST /graphql HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {self.token}\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        return head.encode() + body

    async def run(self, requests: list[bytes], rate: float) -> None:
        """Send ``requests`` at ``rate`` per second (each at its time, or as soon as a connection
        is free); the status of each answer lands in ``answers``."""
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()

        async def worker() -> None:
            reader, writer = await asyncio.open_connection(self.host, self.port)
            try:
                while (request := await queue.get()) is not None:
                    writer.write(request)
                    head = await reader.readuntil(b"\r\n\r\n")
                    status = int(head.split(b" ", 2)[1])
                    length = next(
                        int(line.split(b":", 1)[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    )
                    body = await reader.readexactly(length)
                    self.answers.append(status if b'"userErrors":[]' in body else -status)
            finally:
                writer.close()

        workers = [asyncio.create_task(worker()) for _ in range(self.connections)]
        begin = time.monotonic()
        for i, request in enumerate(requests):
            await asyncio.sleep(max(0.0, begin + i / rate - time.monotonic()))
            queue.put_nowait(request)
        for _ in workers:
            queue.put_nowait(None)
        await asyncio.gather(*workers)


class PhaseCpu:
    """CPU per delivered job in one phase: the server's processes, the PostgreSQL backends of the
    bench database, and this process (the receiver and the load driver). CPU time holds when the
    machine is shared with other work; a wall-clock rate does not. A process that ends during the
    phase loses its last slice."""

    def __init__(self, server_pid: int, conn: asyncpg.Connection, database: str) -> None:
        self.server_pid, self.conn, self.database = server_pid, conn, database

    async def _backends(self) -> list[int]:
        rows = await self.conn.fetch("SELECT pid FROM pg_stat_activity WHERE datname = $1", self.database)
        return [row["pid"] for row in rows]

    async def start(self) -> None:
        self.server = {pid: cpu._process_cpu([pid]) for pid in cpu._tree(self.server_pid)}
        self.postgres = {pid: cpu._process_cpu([pid]) for pid in await self._backends()}
        self.own = cpu._own_cpu()

    async def stop(self, jobs: int) -> str:
        server = sum(cpu._process_cpu([pid]) - self.server.get(pid, 0.0) for pid in cpu._tree(self.server_pid))
        postgres = sum(cpu._process_cpu([pid]) - self.postgres.get(pid, 0.0) for pid in await self._backends())
        own = cpu._own_cpu() - self.own
        per = 1000 / max(jobs, 1)
        return (
            f"server {server * per:.2f} ms, PostgreSQL {postgres * per:.2f} ms, "
            f"receiver and driver {own * per:.2f} ms (total {(server + postgres + own) * per:.2f} ms)"
        )


@dataclass
class Result:
    jobs: int
    seconds: float
    rate: float
    latency_jobs: int
    offered_rate: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    lost: int
    doubled: int
    failed_requests: int
    commit: str
    throughput_cpu: str = ""
    latency_cpu: str = ""


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))] if ordered else float("nan")


async def _seed(url: str, sink_url: str, *, cases: int, jobs: int) -> tuple[str, list[str]]:
    webhook.configure(webhook.parse_endpoints({"billing": {"url": sink_url, "secret": SECRET}}))
    db = Database(url)
    try:
        async with db.transaction() as s:
            await engine.sync_spec_files(s, workflows.BUILTIN_DIR)
            user = await identity.create_user(s, actor=None, login="root", password="password123", admin=True)
            owner = await identity.actor_for(s, user_id=user.id, login=user.login, is_admin=True)
            token = await identity.create_token(s, user_id=user.id, ttl_seconds=3600)
            await engine.define_workflow(s, actor=None, spec=SPEC)
            project = await engine.create_project(s, actor=owner, display_name="P")
            sub = await engine.create_subproject(
                s, actor=owner, project_id=project.id, display_name="S", currency="EUR", workflow="billed"
            )
        case_ids: list[str] = []
        for start in range(0, cases, 50):
            async with db.transaction() as s:
                for i in range(start, min(start + 50, cases)):
                    _, case = await engine.create_workflow_item(
                        s, actor=owner, subproject_id=sub.id, display_name=f"I{i}"
                    )
                    case_ids.append(case.id)
        for round_ in range(math.ceil(jobs / cases)):
            for start in range(0, cases, 100):
                async with db.transaction() as s:
                    for case_id in case_ids[start : start + 100][: max(0, jobs - round_ * cases - start)]:
                        await engine.execute(s, actor=owner, case_id=case_id, action="note")
    finally:
        await db.dispose()
        webhook.configure({})
    return token, case_ids


async def run(
    url: str, *, jobs: int = JOBS, cases: int = CASES, rate: int = RATE, seconds: int = SECONDS, workers: int = WORKERS
) -> Result:
    await asyncio.to_thread(upgrade, url)
    sink = Sink()
    server_config = uvicorn.Config(
        sink, host="127.0.0.1", port=0, log_level="warning", lifespan="off", access_log=False
    )
    receiver = uvicorn.Server(server_config)
    receiving = asyncio.create_task(receiver.serve())
    while not receiver.started:  # noqa: ASYNC110 - uvicorn has no event for it
        await asyncio.sleep(0.01)
    sink_url = f"http://127.0.0.1:{receiver.servers[0].sockets[0].getsockname()[1]}/hook"
    token, case_ids = await _seed(url, sink_url, cases=cases, jobs=jobs)
    conn = await asyncpg.connect(url)
    await conn.execute("UPDATE job SET next_attempt_at = now() + interval '1 day'")  # not due yet
    env = {"CASEWAY_WEBHOOKS": json.dumps({"billing": {"url": sink_url, "secret": SECRET}})}
    server = await asyncio.to_thread(Server, url, workers=workers, env=env)
    try:
        await asyncio.sleep(2)  # both processes' runners have made their first pass
        meter = PhaseCpu(server.process.pid, conn, url.rsplit("/", 1)[1])
        await meter.start()
        # Throughput: every job due at once.
        await conn.execute("UPDATE job SET next_attempt_at = now(); NOTIFY caseway_jobs")
        started = time.time()
        deadline = time.monotonic() + 120
        while len(sink.arrivals) < jobs and time.monotonic() < deadline:  # noqa: ASYNC110 - polled
            await asyncio.sleep(0.02)
        took = (sink.arrivals[-1][0] - started) if sink.arrivals else float("nan")
        delivered = len(sink.arrivals)
        keys = [orjson.loads(body)["id"] for _, body in sink.arrivals]
        await asyncio.sleep(0.5)  # the last outcomes are recorded
        throughput_cpu = await meter.stop(delivered)
        # Latency: a steady load of actions over HTTP.
        sink.arrivals.clear()
        print(f"J1 throughput: {delivered} jobs in {took:.2f} s, {delivered / took:.0f}/s", flush=True)
        print(f"J1 throughput, CPU per job: {throughput_cpu}", flush=True)
        await meter.start()
        driver = Driver(server.url, token)
        await driver.run([driver.request(case_ids[i % len(case_ids)]) for i in range(rate * seconds)], rate)
        sent = sum(1 for status in driver.answers if status == 200)
        failed = rate * seconds - sent
        deadline = time.monotonic() + 30
        while len(sink.arrivals) < sent and time.monotonic() < deadline:  # noqa: ASYNC110 - polled
            await asyncio.sleep(0.02)
        delays = [
            (arrived - datetime.fromisoformat(orjson.loads(body)["at"]).timestamp()) * 1000
            for arrived, body in sink.arrivals
        ]
        await asyncio.sleep(0.5)
        latency_cpu = await meter.stop(len(delays))
        print(f"J1 latency, CPU per job (its executeAction included): {latency_cpu}", flush=True)
    finally:
        server.stop()
        await conn.close()
        receiver.should_exit = True
        await receiving
    return Result(
        jobs=delivered,
        seconds=took,
        rate=delivered / took if took else float("nan"),
        latency_jobs=len(delays),
        offered_rate=rate,
        p50_ms=_percentile(delays, 0.5),
        p99_ms=_percentile(delays, 0.99),
        max_ms=max(delays, default=float("nan")),
        lost=jobs - len(set(keys)),
        doubled=len(keys) - len(set(keys)),
        failed_requests=failed,
        commit=sections.commit(),
        throughput_cpu=throughput_cpu,
        latency_cpu=latency_cpu,
    )


def section(r: Result) -> list[str]:
    problems = []
    if r.rate < GOAL_RATE:
        problems.append(f"{r.rate:.0f} jobs/s < {GOAL_RATE}")
    if r.p99_ms > GOAL_P99_MS:
        problems.append(f"p99 {r.p99_ms:.0f} ms > {GOAL_P99_MS}")
    if r.failed_requests:
        problems.append(f"{r.failed_requests} executeAction requests failed")
    if r.lost or r.doubled:
        problems.append(f"{r.lost} lost, {r.doubled} delivered twice")
    return [
        BEGIN,
        "",
        f"## J1: webhook jobs end to end (commit {r.commit})",
        "",
        "bench/jobs.py: a receiver on loopback in the driver's process answering 200 at once; the server with "
        f"{WORKERS} processes on PostgreSQL, each with its job runner; each case's jobs in order, one at a time.",
        "",
        "| jobs | seconds | jobs/s | load (jobs/s) | p50 ms | p99 ms | max ms | verdict |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        f"| {r.jobs} (all due at once) | {r.seconds:.2f} | {r.rate:.0f} | {r.offered_rate} ({r.latency_jobs} jobs) | "
        f"{r.p50_ms:.0f} | {r.p99_ms:.0f} | {r.max_ms:.0f} | {sections.verdict(problems)} |",
        "",
        f"CPU per delivered job (`PhaseCpu`): all due at once: {r.throughput_cpu}; under the load, each "
        f"with its executeAction: {r.latency_cpu}.",
        "",
        f"Goal: ≥ {GOAL_RATE} jobs/s, p99 commit → delivery ≤ {GOAL_P99_MS} ms at {RATE} jobs/s. Delays "
        "run from the log entry's `at` (inside the action's transaction) to the delivery's arrival.",
        "",
        END,
    ]


def replace_section(report: Path, lines: list[str]) -> None:
    sections.replace(report, lines, begin=BEGIN, end=END, after="<!-- /T1 -->")


async def run_fresh(**kwargs: Any) -> Result:
    return await on_fresh_postgres("caseway_j1", run, **kwargs)


async def main_async(args: argparse.Namespace) -> None:
    result = await run_fresh(
        jobs=args.jobs, cases=args.cases, rate=args.rate, seconds=args.seconds, workers=args.workers
    )
    sections.publish(section(result), args, name="J1", write=replace_section)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=JOBS)
    parser.add_argument("--cases", type=int, default=CASES)
    parser.add_argument("--rate", type=int, default=RATE, help="jobs per second of the latency load")
    parser.add_argument("--seconds", type=int, default=SECONDS, help="how long the latency load runs")
    parser.add_argument("--workers", type=int, default=WORKERS)
    sections.add_arguments(parser)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
