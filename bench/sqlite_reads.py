"""R1s: R1 on SQLite, as a newcomer's single-process install serves it (one uvicorn worker),
with the read planner and without it (``CASEWAY_COMPILED_READS=false``), in alternating rounds.

    python -m bench.sqlite_reads [--seconds 10] [--connections 32] [--rounds 3]

It seeds the `small` data (through the engine, as ``bench.seed`` does) into a SQLite file of
its own. SQLite's parser takes about five nested subqueries, fewer than R1's tree needs: the
planner then forgets R1's plan as not compilable (resolvers/compiled, ``TooDeep``) and the
resolvers answer, so the two rows say what the planner's attempt costs or saves there.
"""

import argparse
import asyncio
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench import cpu, queries, seed, wrk
from bench.server import Server

SETTINGS = {"with the planner": "true", "without (CASEWAY_COMPILED_READS=false)": "false"}


@dataclass
class Round:
    planner: str  # a key of SETTINGS
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    server_ms: float  # server CPU per request
    errors: int


def rows(rounds: list[Round]) -> list[str]:
    """The report's R1s rows: per setting, the round with the median throughput (and every
    round's), then the ratio of the medians."""
    lines = []
    medians: dict[str, float] = {}
    for planner in SETTINGS:
        mine = sorted((r for r in rounds if r.planner == planner), key=lambda r: r.requests_per_second)
        if not mine:
            continue
        median = mine[(len(mine) - 1) // 2]
        medians[planner] = statistics.median(r.requests_per_second for r in mine)
        note = f" ({median.errors} errors)" if median.errors else ""
        each = ", ".join(f"{r.requests_per_second:,.0f}" for r in mine)
        lines.append(
            f"| R1s | R1 on SQLite, one worker, {planner} (median of {len(mine)}: {each}; server CPU "
            f"{median.server_ms:.1f} ms per request) | {median.requests_per_second:,.0f}{note} | "
            f"{median.p50_ms:.1f} | {median.p99_ms:.1f} | - |"
        )
    on, off = (medians.get(planner) for planner in SETTINGS)
    if on and off:
        lines.append(f"| R1s ratio | with the planner / without | {on / off:.2f} | | | |")
    return lines


async def run(*, seconds: int = 10, connections: int = 32, rounds: int = 3, size: str = "small") -> list[Round]:
    with tempfile.TemporaryDirectory(prefix="caseway_r1s_") as directory:
        url = f"sqlite:///{Path(directory) / 'r1s.db'}"
        await seed.seed(url, *seed.SIZES[size])
        data = await seed.driver_data(url)
        body = queries.bodies(data)["R1"]
        servers = {
            planner: Server(url, workers=1, env={"CASEWAY_COMPILED_READS": value})
            for planner, value in SETTINGS.items()
        }
        measured: list[Round] = []
        try:
            for server in servers.values():  # warm: the plan tried (and forgotten), statements cached
                wrk.run(server.url, body, token=data["token"], connections=4, seconds=1)
            for n in range(rounds):
                for planner, server in servers.items():
                    print(f"R1s round {n + 1}/{rounds}, {planner}...", flush=True)
                    meter = cpu.Meter(server.process.pid).start()
                    result = wrk.run(server.url, body, token=data["token"], connections=connections, seconds=seconds)
                    use = meter.stop(result.requests)
                    measured.append(
                        Round(
                            planner,
                            result.requests_per_second,
                            result.p50_ms,
                            result.p99_ms,
                            use.server_ms,
                            result.errors,
                        )
                    )
        finally:
            for server in servers.values():
                server.stop()
        return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    measured = asyncio.run(run(seconds=args.seconds, connections=args.connections, rounds=args.rounds))
    print("\n".join(rows(measured)))


if __name__ == "__main__":
    main()
