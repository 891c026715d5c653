"""RR: what routing reads to a replica costs (issue 51). R1 and R2 served by a server whose reads
go to a streaming replica (CASEWAY_DATABASE_REPLICA_URLS) against the same server reading the
primary alone, in alternating rounds, on one machine: the primary and the replica share its
cores, so the figure is the overhead of routing (the replica's WAL position check, the monitor,
the header), not the capacity a replica on another machine adds. Goal (docs: DESIGN's budgets):
reads routed to a replica cost at most 5% more server CPU per request than on the primary.

`python -m bench.replicas [--rounds N] [--seconds S] [--no-report]` makes its own primary and
replica (scripts/replica_pair.py), seeds the `medium` data on the primary, waits for the replica,
and writes the RR section of bench/REPORT.md.
"""

import argparse
import asyncio
import datetime
import os
import shutil
import statistics
import subprocess
from datetime import UTC
from typing import Any

import asyncpg

from bench import cpu, queries, sections, seed, wrk
from bench.server import Server
from scripts.replica_pair import running_pair

BEGIN, END = "<!-- RR -->", "<!-- /RR -->"
GOAL = 1.05  # server CPU per request through a replica, against the primary's


async def _caught_up(primary: str, replica: str, *, within: float = 120) -> None:
    """After VACUUM ANALYZE on the primary, until the replica has replayed all of it."""
    p, r = await asyncpg.connect(primary), await asyncpg.connect(replica)
    try:
        await p.execute("VACUUM ANALYZE")
        target = await p.fetchval("SELECT pg_current_wal_insert_lsn()")
        deadline = asyncio.get_running_loop().time() + within
        while await r.fetchval("SELECT pg_last_wal_replay_lsn() < $1", target):
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError("the replica did not catch up")
            await asyncio.sleep(0.1)
    finally:
        await p.close()
        await r.close()


def _round(server: Server, bodies: list[dict], token: str, seconds: int) -> tuple[float, float]:
    """(requests per second, the server's CPU ms per request) of one wrk run."""
    wrk.run(server.url, bodies, token=token, connections=32, seconds=1)  # warm the pools
    meter = cpu.Meter(server.process.pid).start()
    result = wrk.run(server.url, bodies, token=token, connections=32, seconds=seconds)
    use = meter.stop(result.requests)
    assert result.errors == 0, f"{result.errors} errors"
    return result.requests_per_second, use.server_ms


async def run(*, rounds: int, seconds: int, workers: int) -> dict[str, Any]:
    load = os.getloadavg()[0]
    with running_pair() as pair:
        admin = await asyncpg.connect(pair.primary_url())
        await admin.execute("CREATE DATABASE caseway_rr")
        await admin.close()
        primary, replica = pair.primary_url("caseway_rr"), pair.replica_url("caseway_rr")
        await seed.seed(primary, *seed.SIZES["medium"], bulk=True)
        data = await seed.driver_data(primary)
        await _caught_up(primary, replica)
        bodies = queries.bodies(data)
        env = {"CASEWAY_RUN_TIMERS": "false", "CASEWAY_RUN_JOBS": "false"}
        servers = {
            "primary": Server(primary, workers=workers, env=env, wait=False),
            "replica": Server(
                primary, workers=workers, env={**env, "CASEWAY_DATABASE_REPLICA_URLS": replica}, wait=False
            ),
        }
        try:
            for server in servers.values():
                server.wait_until_healthy()
            results: dict[str, dict[str, list[tuple[float, float]]]] = {"R1": {}, "R2": {}}
            for _ in range(rounds):
                for scenario in results:
                    for name, server in servers.items():
                        measured = _round(server, bodies[scenario], data["token"], seconds)
                        results[scenario].setdefault(name, []).append(measured)
            replica_conn = await asyncpg.connect(replica)
            scans = await replica_conn.fetchval("SELECT sum(idx_scan + seq_scan) FROM pg_stat_user_tables")
            await replica_conn.close()
        finally:
            for server in servers.values():
                server.stop()
    return {
        "load": load,
        "results": results,
        "replica_scans": scans,
        "rounds": rounds,
        "seconds": seconds,
        "workers": workers,
    }


def section(measured: dict[str, Any]) -> list[str]:
    lines = [
        BEGIN,
        "",
        f"RR, reads on a replica (`bench/replicas.py`, {datetime.datetime.now(UTC):%Y-%m-%d %H:%M} UTC, at "
        f"`{sections.commit()}`): R1 and R2 through a server whose reads go to a streaming replica against the "
        f"same server on the primary alone, {measured['workers']} worker(s), wrk 32 connections, "
        f"{measured['seconds']} s, {measured['rounds']} alternating rounds; the primary, its replica, both servers "
        "and wrk share this machine's cores, so the ratio is the cost of routing, not a replica's added capacity "
        f"(goal: server CPU per request <= {GOAL} of the primary's). Load average {measured['load']:.1f} "
        "when it started. The replica's statistics "
        f"counted {measured['replica_scans']:,} scans.",
        "",
        "| scenario | primary alone: req/s, server CPU ms | through the replica: req/s, server CPU ms "
        "| server CPU per request, replica / primary (median of rounds) | verdict |",
        "| --- | --- | --- | ---: | --- |",
    ]
    for scenario, by in measured["results"].items():
        ratios = [r[1] / p[1] for r, p in zip(by["replica"], by["primary"], strict=True) if p[1]]
        ratio = statistics.median(ratios)
        lines.append(
            f"| {scenario} | {'; '.join(f'{rate:,.0f}, {ms:.2f}' for rate, ms in by['primary'])} | "
            f"{'; '.join(f'{rate:,.0f}, {ms:.2f}' for rate, ms in by['replica'])} | {ratio:.2f} | "
            f"{'ok' if ratio <= GOAL else '**missed**'} |"
        )
    return [*lines, "", END]


def replace_section(report: Any, lines: list[str]) -> None:
    sections.replace(report, lines, begin=BEGIN, end=END, after="<!-- /M1 -->")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    sections.add_arguments(parser)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("installing wrk (Debian package)...", flush=True)
        subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], check=True, capture_output=True)
    measured = asyncio.run(run(rounds=args.rounds, seconds=args.seconds, workers=args.workers))
    sections.publish(section(measured), args, name="RR", write=replace_section)


if __name__ == "__main__":
    main()
