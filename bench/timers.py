"""T1: how late timers fire. 10,000 pending timers on PostgreSQL fall due spread evenly over
60 s; the lateness of each (its firing time - its ``fire_at``): p50 / p99 / max, against the
budget of the project's goals (p99 ≤ 1 s), and whether every timer fired exactly once.

    python -m bench.timers [--timers 10000] [--spread 60] [--lead 20] [--workers 2]
                           [--poll-interval S] [--report bench/REPORT.md | --no-report]

On a fresh database a workflow with one TIME action (``timeout_seconds`` = ``TIMEOUT``) is
defined and a project and subproject created through the engine; the items are bulk-loaded
with COPY (bench/bulk.py's batch: the rows, and the hash-chained entries, the engine writes for
a new item of that workflow). Their cases were "created" in the last minutes, each so that its
``fire_at`` = ``enabled_at`` + ``TIMEOUT`` falls ``lead`` + i x ``spread`` / n seconds after the
load: the server (uvicorn, as `caseway serve` runs it, ``workers`` processes, each with its
sweeper) starts within ``lead``, and is killed by its PID after every timer fired or after
``spread`` + ``MARGIN`` seconds, whichever comes first.

Lateness is read two ways:
- from the log, as the brief of issue 20 defines it: an entry's ``at`` - ``data.timer.fireAt``.
  The ``at`` is the clock the sweeper read when it claimed the timer (server/timer_runs.py), not
  its commit;
- as a reader sees it: the first time this process's reader (polling the log every
  ``OBSERVE_EVERY`` s) saw the entry - its ``fireAt``. That is when the state change became
  visible, late by at most one poll more than the commit.

Run alone, it replaces the T1 section of bench/REPORT.md (between its ``<!-- T1 -->``
markers); `make bench` runs it on a database of its own and writes the same section.
"""

import argparse
import asyncio
import datetime
import math
import os
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import asyncpg

import engine
from bench import cpu, sections
from bench.bulk import Batch, add_item_and_case
from bench.server import Server, on_fresh_postgres
from engine.people import identity
from engine.spec import workflows
from models import Database, new_id
from server.migrate import upgrade
from server.settings import Settings

BEGIN, END = "<!-- T1 -->", "<!-- /T1 -->"

TIMERS = 10_000
SPREAD = 60.0  # seconds over which the timers fall due
LEAD = 20.0  # seconds from the end of the load to the first timer: the server starts meanwhile
MARGIN = 30.0  # seconds after the last timer's fire_at before the scenario gives up waiting
TIMEOUT = 300  # the action's timeout_seconds: every case was enabled before the load started
OBSERVE_EVERY = 0.1  # seconds between the reader's looks at the log
OVERLAP = 200  # log entries read again on each look: a lower seq may commit after a higher one
WORKERS = 2  # as W1 and the other write scenarios
BUDGET_P99 = 1.0  # seconds: the project's goal
WINDOWS = 6  # lateness per slice of the spread, to tell a backlog that grows from a slow wake-up

ACTION = "lapse"
SPEC = {
    "short_name": "bench_timer",
    "states": {"waiting": {}, "lapsed": {"terminal": True}},
    "actions": {
        "start": {"trigger": "init", "new_state": "waiting"},
        ACTION: {"trigger": "time", "enabled_states": ["waiting"], "timeout_seconds": TIMEOUT, "new_state": "lapsed"},
    },
}


@dataclass
class Fired:
    """One timer entry of the log."""

    enabled_action_id: str
    fire_at: datetime.datetime  # data.timer.fireAt
    at: datetime.datetime  # the entry's at
    seen: float | None = None  # wall-clock time (epoch s) the reader first saw it


@dataclass
class Result:
    timers: int
    spread: float
    lead: float
    workers: int
    poll_interval: float
    load_average: float  # 1-minute load average when the scenario started
    load_seconds: float  # the bulk load
    ready_before_first: float  # seconds between the server answering /health and the first fire_at
    waited: float  # seconds from the first fire_at to the end of the wait
    expected: set[str]
    fired: list[Fired]  # every timer entry in the log, doubles included
    failed: int  # timer_failed entries (a timer that could not fire and was postponed)
    cpu_use: cpu.CpuUse | None = None  # from the first fire_at to the end of the wait
    per_timer: Counter[str] = field(init=False)

    def __post_init__(self) -> None:
        self.per_timer = Counter(f.enabled_action_id for f in self.fired)

    @property
    def missing(self) -> int:
        return len(self.expected - set(self.per_timer))

    @property
    def doubled(self) -> int:
        return sum(1 for n in self.per_timer.values() if n > 1)

    @property
    def exactly_once(self) -> int:
        return sum(1 for key, n in self.per_timer.items() if n == 1 and key in self.expected)

    @property
    def log_lateness(self) -> list[float]:
        return sorted((f.at - f.fire_at).total_seconds() for f in self.fired)

    @property
    def seen_lateness(self) -> list[float]:
        return sorted(f.seen - f.fire_at.timestamp() for f in self.fired if f.seen is not None)

    @property
    def rate(self) -> float:
        """Timers fired per second, from the first fire_at to the last entry seen: the sweepers'
        capacity when they fell behind (then below ``timers / spread``)."""
        seen = [f.seen for f in self.fired if f.seen is not None]
        if not seen:
            return 0.0
        first = min(f.fire_at for f in self.fired).timestamp()
        return len(seen) / max(max(seen) - first, 1e-3)

    def windows(self) -> list[tuple[float, float, int, float, float]]:
        """Per slice of the spread: its start and end (s after the first fire_at), the timers in
        it, and the p99 of their log and reader lateness."""
        if not self.fired:
            return []
        first = min(f.fire_at for f in self.fired)
        width = self.spread / WINDOWS
        slices: list[list[Fired]] = [[] for _ in range(WINDOWS)]
        for f in self.fired:
            slices[min(WINDOWS - 1, int((f.fire_at - first).total_seconds() / width))].append(f)
        rows = []
        for n, part in enumerate(slices):
            logged = sorted((f.at - f.fire_at).total_seconds() for f in part)
            seen = sorted(f.seen - f.fire_at.timestamp() for f in part if f.seen is not None)
            rows.append((n * width, (n + 1) * width, len(part), quantile(logged, 0.99), quantile(seen, 0.99)))
        return rows

    @property
    def problems(self) -> list[str]:
        found = []
        if self.missing:
            found.append(f"{self.missing:,} never fired")
        if self.doubled:
            found.append(f"{self.doubled:,} fired more than once")
        if self.failed:
            found.append(f"{self.failed:,} timer_failed entries")
        if self.ready_before_first < 0:
            found.append(f"the server answered {-self.ready_before_first:.1f} s after the first timer fell due")
        for name, values in (("log", self.log_lateness), ("reader", self.seen_lateness)):
            p99 = quantile(values, 0.99)
            if not p99 <= BUDGET_P99:  # NaN (nothing fired) fails too
                found.append(f"{name} p99 {p99:.2f} s > {BUDGET_P99:g} s")
        return found

    @property
    def verdict(self) -> str:
        return sections.verdict(self.problems)


def quantile(ordered: list[float], q: float) -> float:
    """The nearest-rank ``q`` quantile of a sorted list (NaN when empty)."""
    if not ordered:
        return float("nan")
    return ordered[max(0, min(len(ordered) - 1, math.ceil(len(ordered) * q) - 1))]


async def _owner_and_subproject(url: str) -> tuple[str, str, str, str]:
    """The workflow, a user and the project and subproject the items go into, through the engine;
    returns (owner id, workflow id, project id, subproject id)."""
    db = Database(url)
    try:
        async with db.transaction() as s:
            await engine.sync_spec_files(s, workflows.BUILTIN_DIR)
            user = await identity.create_user(s, actor=None, login="t1-owner", password=new_id("pw"), admin=True)
            owner = await identity.actor_for(s, user_id=user.id, login=user.login, is_admin=True)
            workflow = await engine.define_workflow(s, actor=None, spec=SPEC)
            project = await engine.create_project(s, actor=owner, display_name="T1 timers")
            sub = await engine.create_subproject(
                s, actor=owner, project_id=project.id, display_name="T1", currency="EUR", workflow=SPEC["short_name"]
            )
            return user.id, workflow.id, project.id, sub.id
    finally:
        await db.dispose()


def _item(batch: Batch, *, owner: str, workflow_id: str, project: str, sub: str, name: str, created) -> str:  # type: ignore[no-untyped-def]
    """The rows `engine.create_workflow_item` writes for an item of ``SPEC`` created at
    ``created``: its permissions, its case in ``waiting`` with the ``lapse`` timer enabled then
    (fire_at = enabled_at + TIMEOUT), and two log entries; returns the timer's instance id."""
    _, case, _ = add_item_and_case(
        batch,
        project=project,
        sub=sub,
        owner=owner,
        assignee=owner,
        workflow_id=workflow_id,
        name=name,
        at=created,
        init_action="start",
        state="waiting",
    )
    instance = new_id("ea")
    batch.add(
        "enabled_action",
        id=instance,
        case_id=case,
        action=ACTION,
        scope="",
        trigger="time",
        status="ENABLED",
        enabled_at=created,
        fire_at=created + timedelta(seconds=TIMEOUT),
    )
    return instance


async def load(url: str, *, timers: int, spread: float, lead: float) -> tuple[set[str], datetime.datetime]:
    """Migrate, create the workflow and subproject, bulk-load ``timers`` items whose timers fall
    due ``lead`` s after the load ends and spread over ``spread`` s; returns their instance ids
    and the first fire_at."""
    await asyncio.to_thread(upgrade, url)
    owner, workflow_id, project, sub = await _owner_and_subproject(url)
    started = time.monotonic()
    # The load's own time is guessed from its size (COPY of ~5 rows + 2 entries per item runs
    # at several thousand items/s here) and checked afterwards against the server's start.
    first = datetime.datetime.now(UTC) + timedelta(seconds=lead + timers / 2000)
    step = spread / max(timers - 1, 1)
    expected: set[str] = set()
    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        for start in range(0, timers, 1000):
            batch = Batch()
            for i in range(start, min(start + 1000, timers)):
                created = first + timedelta(seconds=i * step - TIMEOUT)
                expected.add(
                    _item(
                        batch,
                        owner=owner,
                        workflow_id=workflow_id,
                        project=project,
                        sub=sub,
                        name=f"T{i}",
                        created=created,
                    )
                )
            await batch.copy(conn)
        await conn.execute("ANALYZE")  # the sweeper's queries planned on today's rows, not an empty table's
    finally:
        await conn.close()
    print(f"loaded {timers:,} timers in {time.monotonic() - started:.1f} s", flush=True)
    return expected, first


_READ = f"""SELECT seq, id, at, data->'timer'->>'enabledActionId', data->'timer'->>'fireAt' FROM activity
WHERE seq > $1 AND kind = 'action_executed' AND action = '{ACTION}' ORDER BY seq"""


class Reader:
    """Polls the log for timer entries, remembering when it first saw each (by entry id)."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.entries: dict[str, Fired] = {}
        self._stop = asyncio.Event()

    def fired(self) -> set[str]:
        return {f.enabled_action_id for f in self.entries.values()}

    async def look(self, conn: asyncpg.Connection, after: int) -> int:
        rows = await conn.fetch(_READ, after)
        now = time.time()
        for seq, entry_id, at, instance, fire_at in rows:
            if entry_id not in self.entries:
                self.entries[entry_id] = Fired(instance, datetime.datetime.fromisoformat(fire_at), at, now)
            after = max(after, seq)
        return after

    async def run(self, until: Callable[[], bool], deadline: float) -> None:
        """Look every ``OBSERVE_EVERY`` s until ``until()`` or the monotonic ``deadline``."""
        conn = await asyncpg.connect(self.dsn)
        try:
            newest = 0
            while not until() and time.monotonic() < deadline:
                newest = await self.look(conn, max(0, newest - OVERLAP))
                await asyncio.sleep(OBSERVE_EVERY)
        finally:
            await conn.close()


async def _all_entries(dsn: str, reader: Reader) -> tuple[list[Fired], int]:
    """Every timer entry in the log (those the reader never saw have no ``seen``), and the
    number of timer_failed entries."""
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(_READ, 0)
        failed = await conn.fetchval("SELECT count(*) FROM activity WHERE kind = 'timer_failed'")
    finally:
        await conn.close()
    fired = []
    for _seq, entry_id, at, instance, fire_at in rows:
        known = reader.entries.get(entry_id)
        fired.append(known or Fired(instance, datetime.datetime.fromisoformat(fire_at), at))
    return fired, failed


def _poll_interval() -> float:
    default = Settings.model_fields["timer_poll_interval"].default
    return float(os.environ.get("CASEWAY_TIMER_POLL_INTERVAL", default))


async def run(
    url: str,
    *,
    timers: int = TIMERS,
    spread: float = SPREAD,
    lead: float = LEAD,
    margin: float = MARGIN,
    workers: int = WORKERS,
    start: Callable[..., Server] = Server,
) -> Result:
    """T1 on the empty database at ``url``: load, serve, wait, read the log. The server is
    stopped by its PID before this returns, whatever happens."""
    load_average = os.getloadavg()[0]
    dsn = url.replace("postgresql+asyncpg://", "postgresql://")
    started = time.monotonic()
    expected, first = await load(url, timers=timers, spread=spread, lead=lead)
    load_seconds = time.monotonic() - started
    print(f"T1: starting the server ({workers} workers)...", flush=True)
    server = await asyncio.to_thread(start, url, workers=workers)
    reader = Reader(dsn)
    try:
        ready_before_first = first.timestamp() - time.time()
        meter: cpu.Meter | None = None
        if ready_before_first > 0:
            await asyncio.sleep(ready_before_first)
            meter = cpu.Meter(server.process.pid).start()  # CPU from the first fire_at on
        to_wait = spread + margin + min(ready_before_first, 0)
        print(f"T1: timers falling due for {spread:g} s (waiting at most {spread + margin:g} s)...", flush=True)
        begun = time.monotonic()
        await reader.run(lambda: reader.fired() >= expected, begun + max(to_wait, 0))
        waited = time.monotonic() - begun
        use = meter.stop(len(reader.entries)) if meter is not None else None  # while the server's processes live
    finally:
        _kill(server)
    fired, failed = await _all_entries(dsn, reader)
    return Result(
        timers=timers,
        spread=spread,
        lead=lead,
        workers=workers,
        poll_interval=_poll_interval(),
        load_average=load_average,
        load_seconds=load_seconds,
        ready_before_first=ready_before_first,
        waited=waited,
        expected=expected,
        fired=fired,
        failed=failed,
        cpu_use=use,
    )


def _kill(server: Server) -> None:
    """Stop the server by its PID (SIGTERM, then SIGKILL if it lingers)."""
    server.process.terminate()
    try:
        server.process.wait(10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(10)


def _ms(values: list[float]) -> str:
    return " / ".join(f"{quantile(values, q) * 1000:,.0f}" for q in (0.5, 0.99, 1.0))


def section(result: Result) -> list[str]:
    """The T1 section of the report, between its markers."""
    r = result
    cpu_line = ""
    if r.cpu_use is not None:
        use = r.cpu_use
        cpu_line = (
            f" CPU per timer fired: server {use.server_ms:.1f} ms, this process's reader {use.driver_ms:.1f} ms, "
            f"PostgreSQL and the rest {use.rest_ms:.1f} ms; {use.cores_busy:.2f} of {os.cpu_count()} cores busy."
        )
    lines = [
        BEGIN,
        "",
        f"T1, timers falling due (`bench/timers.py`, {datetime.datetime.now(UTC):%Y-%m-%d}, at `{sections.commit()}`): "
        f"{r.timers:,} pending timers (one TIME action each, on {r.timers:,} cases bulk-loaded with COPY; "
        f"migrations and load {r.load_seconds:.0f} s) falling due evenly over {r.spread:g} s on PostgreSQL, "
        f"the first {r.lead:g} s after the load. Server: uvicorn as `caseway serve` runs it, {r.workers} "
        f"workers (a sweeper each), safety-net poll {r.poll_interval:g} s (`CASEWAY_TIMER_POLL_INTERVAL`); "
        f"it answered {r.ready_before_first:.1f} s before the first timer fell due. "
        "Lateness = firing time - `fire_at`, read from the log (`at` - `data.timer.fireAt`; `at` is when the "
        "sweeper claimed it) and as a reader polling the log every "
        f"{OBSERVE_EVERY * 1000:.0f} ms first saw the entry (the commit, plus at most one poll). "
        f"Budget (the project's goal): p99 ≤ {BUDGET_P99:g} s. Load average {r.load_average:.1f} on {os.cpu_count()} "
        f"cores when it started; waited {r.waited:.0f} s from the first `fire_at`.{cpu_line} The sweepers fired "
        f"{r.rate:,.0f} timers/s (needed: {r.timers / r.spread:,.0f}/s).",
        "",
        "| timers | fired exactly once | never fired | fired twice or more | timer_failed | log lateness p50 / p99 / "
        "max ms | reader lateness p50 / p99 / max ms | verdict |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        f"| {r.timers:,} | {r.exactly_once:,} | {r.missing:,} | {r.doubled:,} | {r.failed:,} | "
        f"{_ms(r.log_lateness)} | {_ms(r.seen_lateness)} | {r.verdict} |",
        "",
        "Lateness p99 per slice of the spread (a backlog shows as a p99 that grows slice after slice):",
        "",
        "| `fire_at` (s after the first) | timers | log p99 ms | reader p99 ms |",
        "| --- | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {a:g}-{b:g} | {n:,} | {log_p99 * 1000:,.0f} | {seen_p99 * 1000:,.0f} |"
        for a, b, n, log_p99, seen_p99 in r.windows()
    ]
    return [*lines, "", END]


def replace_section(report: Path, lines: list[str]) -> None:
    """Put the T1 section into ``report`` in place of the one there (else after the A1 section,
    else before the profile findings, else at the end), leaving the rest as it was."""
    sections.replace(report, lines, begin=BEGIN, end=END, after="<!-- /A1 -->")


async def run_fresh(**kwargs: Any) -> Result:
    """T1 on a fresh database of its own, dropped afterwards."""
    return await on_fresh_postgres("caseway_t1", run, **kwargs)


async def main_async(args: argparse.Namespace) -> None:
    if args.poll_interval is not None:
        os.environ["CASEWAY_TIMER_POLL_INTERVAL"] = str(args.poll_interval)  # the server inherits it
    result = await run_fresh(timers=args.timers, spread=args.spread, lead=args.lead, workers=args.workers)
    sections.publish(section(result), args, name="T1", write=replace_section)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timers", type=int, default=TIMERS)
    parser.add_argument("--spread", type=float, default=SPREAD, help="seconds over which the timers fall due")
    parser.add_argument("--lead", type=float, default=LEAD, help="seconds from the load to the first timer")
    parser.add_argument("--workers", type=int, default=WORKERS)
    parser.add_argument("--poll-interval", type=float, help="the sweepers' safety-net poll (default: the server's)")
    sections.add_arguments(parser)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
