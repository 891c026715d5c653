"""J2: webhooks on TIME actions, from the timer's firing to the webhook's delivery, on PostgreSQL
(issue 35's goal: p99 ≤ 200 ms).

    python -m bench.timed_webhooks [--cases 200] [--spread 10] [--workers 2]
                                   [--report bench/REPORT.md | --no-report]

A workflow whose TIME action ``lapse`` calls the ``billing`` webhook; ``cases`` cases are
written through the engine, their timers then set to fall due one after another over
``spread`` seconds, starting ``LEAD`` seconds later (the server's start). A server of
``workers`` processes (uvicorn, as `caseway serve` runs it: each with its sweeper and its job
runner, at the default poll intervals) fires them; the receiver (``bench.jobs.Sink``, in this
process) records each delivery's arrival. A delivery's delay is its arrival - the ``at`` of the
log entry the firing wrote (inside the firing's transaction): the firing → delivery time. A job
that nothing wakes waits for the job runner's next safety-net look (``CASEWAY_JOB_POLL_INTERVAL``,
5 s by default), which this row shows.

Run alone, it replaces the J2 section of bench/REPORT.md (between its markers); `make bench`
runs it on a database of its own and writes the same section.
"""

import argparse
import asyncio
import json
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg
import orjson
import uvicorn

import engine
from bench import jobs, sections
from bench.server import Server, on_fresh_postgres
from engine.jobs import webhook
from engine.people import identity
from engine.spec import workflows
from models import Database
from server.migrate import upgrade
from server.settings import Settings

BEGIN, END = "<!-- J2 -->", "<!-- /J2 -->"
CASES, SPREAD, LEAD, WORKERS = 200, 10.0, 8.0, 2
GOAL_P99_MS = 200
SECRET = "bench-secret"
SPEC = {
    "short_name": "timed_hook",
    "states": {"waiting": {}, "lapsed": {"terminal": True}},
    "actions": {
        "start": {"trigger": "init", "new_state": "waiting"},
        "lapse": {
            "trigger": "time",
            "enabled_states": ["waiting"],
            "timeout_seconds": 3600,  # set again below: due one after another once the server runs
            "new_state": "lapsed",
            "side_effects": [{"webhook": {"endpoint": "billing"}}],
        },
    },
}


@dataclass
class Result:
    cases: int
    delivered: int
    doubled: int
    spread: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    job_poll: float
    timer_poll: float
    workers: int
    commit: str


async def seed(url: str, sink_url: str, *, cases: int) -> None:
    """The workflow and ``cases`` items of it through the engine, each with its timer enabled."""
    webhook.configure(webhook.parse_endpoints({"billing": {"url": sink_url, "secret": SECRET}}))
    db = Database(url)
    try:
        async with db.transaction() as s:
            await engine.sync_spec_files(s, workflows.BUILTIN_DIR)
            user = await identity.create_user(s, actor=None, login="root", password="password123", admin=True)
            owner = await identity.actor_for(s, user_id=user.id, login=user.login, is_admin=True)
            await engine.define_workflow(s, actor=None, spec=SPEC)
            project = await engine.create_project(s, actor=owner, display_name="J2")
            sub = await engine.create_subproject(
                s, actor=owner, project_id=project.id, display_name="J2", currency="EUR", workflow=SPEC["short_name"]
            )
        for start in range(0, cases, 50):
            async with db.transaction() as s:
                for i in range(start, min(start + 50, cases)):
                    await engine.create_workflow_item(s, actor=owner, subproject_id=sub.id, display_name=f"J2 {i}")
    finally:
        await db.dispose()
        webhook.configure({})


SCHEDULE = """UPDATE enabled_action SET fire_at = now() + make_interval(secs => $1 + o.n * $2)
FROM (SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM enabled_action
      WHERE action = 'lapse' AND status = 'ENABLED') o WHERE enabled_action.id = o.id"""


def delays_ms(arrivals: list[tuple[float, bytes]]) -> tuple[list[float], int]:
    """Each delivery's arrival - its log entry's ``at``, in ms, once per entry; and how many
    entries were delivered more than once."""
    first: dict[str, float] = {}
    doubled = 0
    for arrived, body in arrivals:
        entry = orjson.loads(body)
        if entry["id"] in first:
            doubled += 1
            continue
        first[entry["id"]] = (arrived - datetime.fromisoformat(entry["at"]).timestamp()) * 1000
    return sorted(first.values()), doubled


async def run(
    url: str, *, cases: int = CASES, spread: float = SPREAD, lead: float = LEAD, workers: int = WORKERS
) -> Result:
    await asyncio.to_thread(upgrade, url)
    sink = jobs.Sink()
    receiver = uvicorn.Server(
        uvicorn.Config(sink, host="127.0.0.1", port=0, log_level="warning", lifespan="off", access_log=False)
    )
    receiving = asyncio.create_task(receiver.serve())
    while not receiver.started:  # noqa: ASYNC110 - uvicorn has no event for it
        await asyncio.sleep(0.01)
    sink_url = f"http://127.0.0.1:{receiver.servers[0].sockets[0].getsockname()[1]}/hook"
    server = None
    try:
        await seed(url, sink_url, cases=cases)
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(SCHEDULE, lead, spread / max(cases - 1, 1))
        finally:
            await conn.close()
        env = {"CASEWAY_WEBHOOKS": json.dumps({"billing": {"url": sink_url, "secret": SECRET}})}
        server = await asyncio.to_thread(Server, url, workers=workers, env=env)
        settings = Settings(database_url=url)
        deadline = time.monotonic() + lead + spread + settings.job_poll_interval + settings.timer_poll_interval + 30
        while len(sink.arrivals) < cases and time.monotonic() < deadline:  # noqa: ASYNC110 - polled
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.5)  # a second delivery of the last ones would arrive meanwhile
    finally:
        if server is not None:
            server.stop()
        receiver.should_exit = True
        await receiving
    delays, doubled = delays_ms(sink.arrivals)
    return Result(
        cases=cases,
        delivered=len(delays),
        doubled=doubled,
        spread=spread,
        p50_ms=jobs._percentile(delays, 0.5),
        p99_ms=jobs._percentile(delays, 0.99),
        max_ms=max(delays, default=float("nan")),
        job_poll=settings.job_poll_interval,
        timer_poll=settings.timer_poll_interval,
        workers=workers,
        commit=sections.commit(),
    )


def section(r: Result) -> list[str]:
    problems = []
    if r.p99_ms > GOAL_P99_MS:
        problems.append(f"p99 {r.p99_ms:.0f} ms > {GOAL_P99_MS}")
    if r.delivered < r.cases or r.doubled:
        problems.append(f"{r.cases - r.delivered} not delivered, {r.doubled} delivered twice")
    return [
        BEGIN,
        "",
        f"## J2: webhooks on TIME actions, firing → delivery (commit {r.commit})",
        "",
        f"bench/timed_webhooks.py: {r.cases} cases whose TIME action calls a webhook, due one after another "
        f"over {r.spread:g} s; the server with {r.workers} processes on PostgreSQL (sweepers and job runners at "
        f"the default polls: timers {r.timer_poll:g} s, jobs {r.job_poll:g} s); a receiver on loopback answering "
        "200 at once. Delay: the delivery's arrival - the `at` of the log entry the firing wrote.",
        "",
        "| webhooks | delivered | p50 ms | p99 ms | max ms | verdict |",
        "| ---: | ---: | ---: | ---: | ---: | --- |",
        f"| {r.cases} | {r.delivered} | {r.p50_ms:.0f} | {r.p99_ms:.0f} | {r.max_ms:.0f} | "
        f"{sections.verdict(problems)} |",
        "",
        f"Goal: p99 firing → delivery ≤ {GOAL_P99_MS} ms (issue 35): a firing wakes the job runner, rather than "
        "its job waiting for the runner's next look.",
        "",
        END,
    ]


def replace_section(report: Path, lines: list[str]) -> None:
    sections.replace(report, lines, begin=BEGIN, end=END, after=jobs.END)


async def run_fresh(**kwargs: Any) -> Result:
    return await on_fresh_postgres("caseway_j2", run, **kwargs)


async def main_async(args: argparse.Namespace) -> None:
    result = await run_fresh(cases=args.cases, spread=args.spread, workers=args.workers)
    sections.publish(section(result), args, name="J2", write=replace_section)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=CASES)
    parser.add_argument("--spread", type=float, default=SPREAD, help="seconds over which the timers fall due")
    parser.add_argument("--workers", type=int, default=WORKERS)
    sections.add_arguments(parser)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
