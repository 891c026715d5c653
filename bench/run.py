"""`make bench`: seed PostgreSQL, drive Caseway and PostGraphile with wrk, write bench/REPORT.md.

python -m bench.run [--size medium|large] [--workers 2] [--seconds 10] [--connections 32]
                    [--skip-postgraphile] [--skip-subscriptions] [--skip-abuse] [--skip-timers] [--skip-jobs]
                    [--skip-pages] [--skip-sqlite]

`--size large` (`make bench SIZE=large`) runs every scenario on 1,000,000 items, bulk-seeded
with COPY (bench/bulk.py: about 7 minutes and 9 GB, then a VACUUM ANALYZE), and adds R5
(bench/pages.py): every list page at 1M items against a `medium` database of its own, and R6
(bench/dashboard_reads.py): every read document of the dashboard (web/src/api/documents.js) at 1M, as the
owner and as the user with a million tasks; it takes several minutes more than the default, 40-60
in all on a 2-core machine.

R5 also runs alone on two seeded databases: `python -m bench.pages --large-url … --medium-url …`;
R6 on one: `python -m bench.dashboard_reads --url …`.
R1f (bench/read_floor.py, R1 as one hand-written SQL statement), R1s (bench/sqlite_reads.py, R1
on SQLite with and without the planner) and J2 (bench/timed_webhooks.py, webhooks on TIME
actions) also run alone. A1 (abusive documents, bench/abuse.py) also runs alone: `python -m bench.abuse` seeds its own
database and replaces only the A1 section of the report; so does T1 (timers falling due,
bench/timers.py): `python -m bench.timers`.
"""

import argparse
import asyncio
import datetime
import os
import platform
import shutil
import signal
import statistics
import subprocess
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx

from bench import (
    abuse,
    cpu,
    dashboard_reads,
    jobs,
    pages,
    queries,
    raw_sql,
    read_floor,
    sections,
    seed,
    sqlite_reads,
    statements,
    subscriptions,
    timed_webhooks,
    timers,
    wrk,
)
from bench.pages_seed import seed_pages
from bench.server import RANDOM_PAGE_COST, ROOT, Server, drop_postgres, free_port, fresh_postgres, vacuum_analyze

REPORT = ROOT / "bench" / "REPORT.md"
FINDINGS = ROOT / "bench" / "FINDINGS.md"
POSTGRAPHILE = "postgraphile@4.14.1"


def _check(url: str, body: dict[str, Any], token: str | None) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = httpx.post(url, json=body, headers=headers, timeout=60).json()
    if response.get("errors"):
        raise SystemExit(f"scenario fails before the load even starts: {response['errors']}")


def _machine() -> list[str]:
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    wrk_version = subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout.splitlines()[0]
    pg = subprocess.run(["psql", "--version"], capture_output=True, text=True).stdout.strip()
    return [
        f"- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M UTC}",
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, {mem:.0f} GiB, {platform.platform()}",
        f"- Python {platform.python_version()}; strawberry-graphql {version('strawberry-graphql')}, "
        f"starlette {version('starlette')}, uvicorn {version('uvicorn')}, SQLAlchemy {version('sqlalchemy')}, "
        f"asyncpg {version('asyncpg')}",
        f"- {pg}; {wrk_version.split(' [')[0]}; peer {POSTGRAPHILE} (Node {_node_version()})",
    ]


def _node_version() -> str:
    return subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()


def _ensure_tools(skip_postgraphile: bool) -> None:
    if shutil.which("wrk") is None:
        print("installing wrk (Debian package)...", flush=True)
        subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], check=True, capture_output=True)
    if not skip_postgraphile and shutil.which("npx") is None:
        raise SystemExit("npx (Node.js) is needed for the PostGraphile peer; or pass --skip-postgraphile")


class PostGraphile:
    """The peer, with as many processes as Caseway's server has workers (``--cluster-workers``:
    node's cluster module forks them and they share the port, as uvicorn's workers do), so the
    two compare on the same cores."""

    def __init__(self, dsn: str, *, workers: int) -> None:
        self.port = free_port()
        self.root = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.root}/graphql"
        self.process = subprocess.Popen(
            [
                "npx",
                "-y",
                POSTGRAPHILE,
                "-c",
                dsn,
                "--schema",
                "public",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--disable-query-log",
                *(["--cluster-workers", str(workers)] if workers > 1 else []),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # npx starts node as a child: stop the whole group
        deadline = time.monotonic() + 180  # the first run downloads the package
        while time.monotonic() < deadline:
            try:
                httpx.post(self.url, json={"query": "{ __typename }"}, timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError("PostGraphile did not start")

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)


SETTLE_SECONDS = 5
WARM_UP_SECONDS = 3
# S1's p99 at 1,000 subscribers moved from 101 to 272 ms between two runs of the same morning:
# the report gives the round with the median p99 and lists every round's.
S1_ROUNDS = 3


Run = tuple[wrk.WrkResult, cpu.CpuUse]


def _load(server_pid: int, url: str, bodies: list[dict], **kwargs: Any) -> Run:
    """One wrk run, with the CPU it cost the server, wrk and the rest of the machine."""
    meter = cpu.Meter(server_pid).start()
    result = wrk.run(url, bodies, **kwargs)
    return result, meter.stop(result.requests)


def _subscribers(run: dict[str, Any]) -> str:
    """S1's subscribers, and how many connected when not all did (bench/subscriptions.py)."""
    subscribers, connected = run["subscribers"], run.get("connected", run["subscribers"])
    return str(subscribers) if connected == subscribers else f"{subscribers} ({connected} connected)"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _median(runs: list[Any], rate: Callable[[Any], float] = lambda run: run[0].requests_per_second) -> Any:
    """The run with the median ``rate`` (throughput unless told; the lower middle one for an
    even count)."""
    return sorted(runs, key=rate)[(len(runs) - 1) // 2]


def _row(name: str, what: str, run: Run | None, statements_count: Any = "") -> str:
    if run is None:
        return f"| {name} | {what} | - | - | - | {statements_count} |"
    result = run[0]
    note = f" ({result.errors} errors)" if result.errors else ""
    return (
        f"| {name} | {what} | {result.requests_per_second:,.0f}{note} | {result.p50_ms:.1f} | "
        f"{result.p99_ms:.1f} | {statements_count} |"
    )


def _cpu_table(results: dict[str, Run], peer: Run | None, w2: cpu.CpuUse) -> list[str]:
    """Where each scenario's CPU went, per request: with the server, PostgreSQL and the driver
    on the same cores, a CPU-bound scenario runs at about cores / total."""
    uses = [(key, results[key][1]) for key in ("R1", "R2", "R3", "R4", "W1", "W1e", "W0") if key in results]
    uses.append(("W2", w2))
    if peer is not None:
        uses.append(("peer", peer[1]))
    lines = [
        "",
        "CPU per request, in ms (`bench/cpu.py`): the server measured (W2: its asyncpg driver), the load "
        "driver (wrk), and the rest of the machine, which is PostgreSQL and the kernel:",
        "",
        "| scenario | server | driver | PostgreSQL and kernel | total | cores busy |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for key, use in uses:
        measured, driver = (use.driver_ms, "-") if key == "W2" else (use.server_ms, f"{use.driver_ms:.2f}")
        lines.append(
            f"| {key} | {measured:.2f} | {driver} | {use.rest_ms:.2f} | {use.total_ms:.2f} | {use.cores_busy:.2f} |"
        )
    return lines


def _ratio_lines(name: str, targets: str, ours: tuple[str, list[float]], theirs: tuple[str, list[float]]) -> list[str]:
    """The median ratio of alternating rounds, then each round's throughputs and ratio."""
    ratios = [a / b for a, b in zip(ours[1], theirs[1], strict=True) if b]
    if not ratios:
        return [f"- {name}: {theirs[0].split()[0]} completed no request"]
    rounds = "; ".join(f"{label} " + ", ".join(f"{v:,.0f}" for v in values) for label, values in (ours, theirs))
    return [
        f"- {name}: **{statistics.median(ratios):.2f}** (median of {len(ratios)} alternating rounds; {targets})",
        f"  - rounds: {rounds}; ratios " + ", ".join(f"{r:.2f}" for r in ratios),
    ]


def _warm_w1(server: Server, w1: list[dict], token: str) -> None:
    """Check that ``server`` answers W1 (executes once: comment stays enabled), then load it
    unmeasured: the pools' connections are opened and their statements prepared on first use,
    as W2 opens its connections before its clock starts."""
    _check(f"{server.url}/graphql", w1[0], token)
    wrk.run(server.url, w1, token=token, connections=32, seconds=WARM_UP_SECONDS)


def _load_w1(server: Server, w1: list[dict], token: str, seconds: int) -> Run:
    """One measured W1 run (32 clients) against ``server``."""
    return _load(server.process.pid, server.url, w1, token=token, connections=32, seconds=seconds)


def _engineless(url: str, args: argparse.Namespace, w1: list[dict], token: str) -> Run:
    """One round of W1e on a server started for it: three servers' pools and W2's 32
    connections together would pass PostgreSQL's 100."""
    server = Server(url, workers=args.workers, app="bench.engineless:create", factory=True)
    try:
        _warm_w1(server, w1, token)
        return _load_w1(server, w1, token, args.seconds)
    finally:
        server.stop()


async def _wide_pages(args: argparse.Namespace) -> tuple[Run, int]:
    """R4 on its own database: one subproject of 20,000 items (bulk-seeded), paged."""
    url, name = await fresh_postgres()
    try:
        await seed.seed(url, *seed.SIZES["wide"], bulk=True)
        await vacuum_analyze(url)
        data = await seed.driver_data(url)
        bodies = queries.bodies(data)["R4"]
        count = await statements.count(url, data["token"], bodies[1])
        server = Server(url, workers=args.workers)
        try:
            token = data["token"]
            _check(f"{server.url}/graphql", bodies[1], token)
            result = _load(
                server.process.pid, server.url, bodies, token=token, connections=args.connections, seconds=args.seconds
            )
        finally:
            server.stop()
        return result, count
    finally:
        await drop_postgres(name)


async def _list_pages(large: str) -> list[str]:
    """R5: the list pages on ``large`` (the 1M-item data) against a medium database of its own,
    bulk-seeded as the large one is."""
    medium, name = await fresh_postgres("caseway_bench_r5")
    try:
        seeded = await seed.seed(medium, *seed.SIZES["medium"], bulk=True)
        await seed_pages(medium, owner=seeded["owner"], password=seed.PASSWORD)
        await vacuum_analyze(medium)
        return await pages.run(large, medium)
    finally:
        await drop_postgres(name)


async def main_async(args: argparse.Namespace) -> None:
    _ensure_tools(args.skip_postgraphile)
    url, name = await fresh_postgres()
    dsn = url
    lines: list[str] = []
    try:
        print(f"seeding {args.size} into {name}...", flush=True)
        started = time.monotonic()
        bulk = args.size == "large"
        seeded = await seed.seed(url, *seed.SIZES[args.size], bulk=bulk)
        if bulk:
            await seed_pages(url, owner=seeded["owner"], password=seed.PASSWORD)
        seed_seconds = time.monotonic() - started
        await vacuum_analyze(url)
        data = await seed.driver_data(url)
        token, projects, items = data["token"], data["projects"], data["items"]
        scenario = queries.bodies(data)
        r1, r2, r3, w1 = scenario["R1"][0], scenario["R2"], scenario["R3"][0], scenario["W1"]
        counts = {
            key: await statements.count(url, token, body)
            for key, body in (("R1", r1), ("R2", r2[0]), ("R3", r3), ("W1", w1[-1]))
        }

        server = Server(url, workers=args.workers)
        graphile = None if args.skip_postgraphile else PostGraphile(dsn, workers=args.workers)
        results: dict[str, Run] = {}
        r1_rounds: list[Run] = []
        peer_rounds: list[Run] = []
        r1f_rounds: list[dict[str, Any]] = []
        w1_rounds: list[Run] = []
        w0_rounds: list[Run] = []
        w1e_rounds: list[Run] = []
        w2_rounds: list[tuple[dict[str, Any], cpu.CpuUse]] = []
        try:
            endpoint = f"{server.url}/graphql"
            peer_body = scenario["PEER"][0]
            _check(endpoint, r1, token)
            if graphile is not None:
                _check(graphile.url, peer_body, None)
            # R1 against the peer in alternating rounds: this machine's speed drifts by tens of
            # percent within minutes, so one run of each would compare the drift as much as the
            # servers. A pause after each run lets the server finish what wrk abandoned.
            for n in range(args.rounds):
                print(f"R1 round {n + 1}/{args.rounds}...", flush=True)
                r1_rounds.append(
                    _load(
                        server.process.pid,
                        server.url,
                        [r1],
                        token=token,
                        connections=args.connections,
                        seconds=args.seconds,
                    )
                )
                await asyncio.sleep(SETTLE_SECONDS)
                if graphile is not None:
                    peer_rounds.append(
                        _load(
                            graphile.process.pid,
                            graphile.root,
                            [peer_body],
                            connections=args.connections,
                            seconds=args.seconds,
                        )
                    )
                    await asyncio.sleep(SETTLE_SECONDS)
                # R1f: the same tree as one hand-written statement, the database's own limit
                r1f_rounds.append(await read_floor.run(dsn, projects[0], clients=32, seconds=args.seconds))
                await asyncio.sleep(SETTLE_SECONDS)
            results["R1"] = _median(r1_rounds)
            for key, bodies in {"R2": r2, "R3": [r3]}.items():
                _check(endpoint, bodies[0], token)
                print(f"{key}...", flush=True)
                results[key] = _load(
                    server.process.pid,
                    server.url,
                    bodies,
                    token=token,
                    connections=args.connections,
                    seconds=args.seconds,
                )
            if graphile is not None:
                graphile.stop()
                graphile = None
            floor = Server(url, workers=args.workers, app="bench.floor:app", env={"CASEWAY_FLOOR_ACTOR": data["owner"]})
            try:
                for measured in (server, floor):
                    _warm_w1(measured, w1, token)
                # W1, W1e, W0 and the raw transaction in alternating rounds, for the same reason as R1
                # against the peer; W2's driver is this process (the idle servers cost nothing).
                for n in range(args.rounds):
                    print(f"W1 / W1e / W0 / W2 round {n + 1}/{args.rounds}...", flush=True)
                    w1_rounds.append(_load_w1(server, w1, token, args.seconds))
                    await asyncio.sleep(SETTLE_SECONDS)
                    w1e_rounds.append(_engineless(url, args, w1, token))
                    await asyncio.sleep(SETTLE_SECONDS)
                    w0_rounds.append(_load_w1(floor, w1, token, args.seconds))
                    await asyncio.sleep(SETTLE_SECONDS)
                    meter = cpu.Meter().start()
                    w2_run = await raw_sql.run(dsn, items, data["owner"], clients=32, seconds=args.seconds)
                    w2_rounds.append((w2_run, meter.stop(w2_run["transactions"])))
            finally:
                floor.stop()
            results["W1"], results["W0"] = _median(w1_rounds), _median(w0_rounds)
            results["W1e"] = _median(w1e_rounds)
        finally:
            server.stop()
            if graphile is not None:
                graphile.stop()
        peer = _median(peer_rounds) if peer_rounds else None
        w2, w2_cpu = _median(w2_rounds, rate=lambda run: run[0]["tps"])

        fanout = []
        if not args.skip_subscriptions:
            server = Server(url, workers=1)
            try:
                for n in (100, 1000):
                    rounds = []
                    for k in range(S1_ROUNDS):
                        print(f"S1 with {n} subscribers, round {k + 1}/{S1_ROUNDS}...", flush=True)
                        rounds.append(
                            await subscriptions.measure(
                                server.url, url, subscribers=n, events=20, server_pid=server.process.pid
                            )
                        )
                    median = _median(rounds, rate=lambda run: run["p99_ms"])
                    fanout.append({**median, "rounds_p99_ms": [run["p99_ms"] for run in rounds]})
            finally:
                server.stop()
        # A1 after the load scenarios: its documents may hang or bloat a server (one of its own
        # per document, killed afterwards), and it defines a large workflow in the database.
        a1 = None if args.skip_abuse else await abuse.run(url, token)
        # T1 on a database of its own, with no other server running: its sweepers fire 10,000
        # timers in 60 s, and a load beside them would be measured as their lateness.
        t1 = None
        if not args.skip_timers:
            print(f"T1 ({timers.TIMERS:,} timers falling due over {timers.SPREAD:g} s)...", flush=True)
            t1 = await timers.run_fresh(workers=args.workers)
        # J1 likewise on a database of its own: its runners deliver thousands of webhooks.
        j1 = j2 = None
        if not args.skip_jobs:
            print(f"J1 ({jobs.JOBS:,} webhook jobs, then {jobs.RATE} jobs/s)...", flush=True)
            j1 = await jobs.run_fresh(workers=args.workers)
            print(f"J2 ({timed_webhooks.CASES} webhooks on TIME actions)...", flush=True)
            j2 = await timed_webhooks.run_fresh(workers=args.workers)
        # R1s on a SQLite file of its own, one worker, with and without the planner.
        r1s = None if args.skip_sqlite else await sqlite_reads.run(seconds=args.seconds, connections=args.connections)
        r5 = None
        if bulk and not args.skip_pages:
            print("R5 (seeding a medium database to compare with)...", flush=True)
            r5 = await _list_pages(url)
            print("R6 (the dashboard's read documents)...", flush=True)
            r5 += ["", *await dashboard_reads.run(url)]
        # After S1, on a database of its own: S1 measures as in earlier reports, undisturbed
        # by the bulk load (and its autovacuum) that R4's data takes.
        print("R4 (seeding the wide data)...", flush=True)
        results["R4"], counts["R4"] = await _wide_pages(args)

        lines += ["# Caseway benchmark report", "", "Written by `make bench` (bench/run.py); numbers from one run.", ""]
        lines += _machine()
        lines += [
            f"- data: `{args.size}` ({len(projects)} projects, {seeded['items']} items) seeded "
            f"{'with COPY (bench/bulk.py, bench/pages_seed.py)' if bulk else 'through the engine'} in "
            f"{seed_seconds:.0f} s; server: uvicorn, {args.workers} worker(s), PostgreSQL; the peer "
            f"with as many processes (`--cluster-workers {args.workers}`); "
            f"wrk {args.connections} connections, {args.seconds} s per scenario",
            f"- PostgreSQL: VACUUM ANALYZE after seeding; random_page_cost = {RANDOM_PAGE_COST} on the benchmark "
            "database (SSD; the same for both servers)",
            "",
        ]
        lines += [
            "| scenario | what | req/s | p50 ms | p99 ms | SQL statements per request |",
            "| --- | --- | ---: | ---: | ---: | ---: |",
        ]
        lines.append(
            _row(
                "R1",
                f"1 project, 10 subprojects x 20 items, case state, enabled actions, roles (median of {args.rounds})",
                results["R1"],
                counts["R1"],
            )
        )
        r1f = _median(r1f_rounds, rate=lambda run: run["sps"])
        lines.append(
            f"| R1f | R1's tree as one hand-written SQL statement building the JSON (`bench/read_floor.py`), asyncpg, "
            f"32 clients (median of {len(r1f_rounds)}) | {r1f['sps']:,.0f} | {r1f['p50_ms']:.1f} | "
            f"{r1f['p99_ms']:.1f} | 1 |"
        )
        if r1s is not None:
            lines += sqlite_reads.rows(r1s)
        lines.append(_row("R2", "medium tree, 100 items per request (5 subprojects x 20)", results["R2"], counts["R2"]))
        lines.append(_row("R3", "`{ __typename }`", results["R3"], counts["R3"]))
        lines.append(
            _row(
                "R4",
                "a page of 20 items of a 20,000-item subproject, from its start and its middle (`wide` data)",
                results["R4"],
                counts["R4"],
            )
        )
        lines.append(
            _row(
                "W1",
                f"executeAction on distinct cases, 32 clients (median of {len(w1_rounds)})",
                results["W1"],
                counts["W1"],
            )
        )
        lines.append(
            _row(
                "W1e",
                "W1's request through Caseway's whole server with an engine that costs nothing: W2's "
                f"statements in place of `engine.execute` (`bench/engineless.py`; median of {len(w1e_rounds)})",
                results["W1e"],
                w2["statements"],
            )
        )
        lines.append(
            _row(
                "W0",
                f"W1's request on the stack's floor: W2's transaction behind a bare strawberry mutation, "
                f"no engine, ORM or authentication (`bench/floor.py`; median of {len(w0_rounds)})",
                results["W0"],
                w2["statements"],
            )
        )
        lines.append(
            f"| W2 | the same transaction as raw SQL (asyncpg, 32 clients; median of {len(w2_rounds)}) | "
            f"{w2['tps']:,.0f} | "
            f"{w2['p50_ms']:.1f} | {w2['p99_ms']:.1f} | {w2['statements']} |"
        )
        lines.append(_row("peer", f"R1 on {POSTGRAPHILE} (median of {len(peer_rounds)})", peer, "-"))
        lines += ["", "Ratios:"]
        if peer_rounds:
            lines += _ratio_lines(
                "R1 Caseway / PostGraphile",
                "goal >= 1, floor 0.5",
                ("Caseway req/s", [r.requests_per_second for r, _ in r1_rounds]),
                ("PostGraphile req/s", [r.requests_per_second for r, _ in peer_rounds]),
            )
        lines += _ratio_lines(
            "R1 / R1f",
            "goal >= 0.5: how much of what the database can serve of this read Caseway serves",
            ("R1 req/s", [r.requests_per_second for r, _ in r1_rounds]),
            ("R1f statements/s", [r["sps"] for r in r1f_rounds]),
        )
        w1_rates = ("W1 req/s", [r.requests_per_second for r, _ in w1_rounds])
        w0_rates = ("W0 req/s", [r.requests_per_second for r, _ in w0_rounds])
        w2_rates = ("W2 tx/s", [r["tps"] for r, _ in w2_rounds])
        lines += _ratio_lines("W1 / W2", "floor 0.5", w1_rates, w2_rates)
        w1e_rates = ("W1e req/s", [r.requests_per_second for r, _ in w1e_rounds])
        lines += _ratio_lines(
            "W1e / W2",
            "the most any engine could reach behind Caseway's server: W1 / W2 can never exceed it",
            w1e_rates,
            w2_rates,
        )
        lines += _ratio_lines(
            "W0 / W2",
            "the most an executeAction served through this stack's HTTP and GraphQL could reach",
            w0_rates,
            w2_rates,
        )
        lines += _ratio_lines(
            "W1 / W0",
            "how much of that floor Caseway keeps; its engine, ORM and request context cost the rest",
            w1_rates,
            w0_rates,
        )
        lines += _ratio_lines(
            "W1 / W1e",
            "how much of that ceiling Caseway's engine keeps; the rest is what its engine and ORM cost",
            w1_rates,
            w1e_rates,
        )
        lines += _cpu_table(results, peer, w2_cpu)
        if fanout:
            lines += [
                "",
                "<!-- S1 -->",
                "",
                "S1, live activity fan-out (one server process, commit-to-delivery; the round with the median "
                f"p99 of {S1_ROUNDS}, and each round's p99; CPU per delivery of the server and of the subscribers' "
                "client, a Python process on the same machine):",
                "",
                "| subscribers | deliveries | p50 ms | p99 ms | max ms | p99 of each round | server CPU ms "
                "| client CPU ms |",
                "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            ]
            lines += [
                f"| {_subscribers(f)} | {f['deliveries']} | {f['p50_ms']:.1f} | {f['p99_ms']:.1f} | "
                f"{f['max_ms']:.1f} | {', '.join(f'{p:.0f}' for p in f['rounds_p99_ms'])} | "
                f"{_ms(f['server_ms_per_delivery'])} | {_ms(f['client_ms_per_delivery'])} |"
                for f in fanout
            ]
            lines += ["", "<!-- /S1 -->"]  # kept by a later run that skips the subscriptions
        if a1 is not None:
            lines += ["", *abuse.section(*a1)]
        if t1 is not None:
            lines += ["", *timers.section(t1)]
        if j1 is not None:
            lines += ["", *jobs.section(j1)]
        if j2 is not None:
            lines += ["", *timed_webhooks.section(j2)]
        if r5 is not None:
            lines += ["", *r5]
        previous = args.report.read_text() if args.report.exists() else ""
        for section in sections.carried_over(previous, "\n".join(lines)):
            lines += ["", section]
        if FINDINGS.exists():
            lines += ["", FINDINGS.read_text().strip()]
        args.report.write_text("\n".join(lines) + "\n")
        print(f"wrote {args.report}")
    finally:
        await drop_postgres(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--size", choices=["small", "medium", "large"], default="medium", help="large: 1M items, adds R5 (see above)"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument(
        "--rounds", type=int, default=5, help="alternating rounds: R1 against PostGraphile, W1 against W1e, W0 and W2"
    )
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--skip-postgraphile", action="store_true")
    parser.add_argument("--skip-subscriptions", action="store_true")
    parser.add_argument("--skip-abuse", action="store_true", help="leave out A1 (bench/abuse.py)")
    parser.add_argument("--skip-timers", action="store_true", help="leave out T1 (bench/timers.py)")
    parser.add_argument(
        "--skip-jobs", action="store_true", help="leave out J1 and J2 (bench/jobs.py, bench/timed_webhooks.py)"
    )
    parser.add_argument("--skip-sqlite", action="store_true", help="leave out R1s (bench/sqlite_reads.py)")
    parser.add_argument(
        "--skip-pages", action="store_true", help="leave out R5 and R6 (bench/pages.py, dashboard_reads.py; large only)"
    )
    parser.add_argument("--report", type=Path, default=REPORT, help="where to write the report")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
