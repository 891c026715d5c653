"""In-process timing (and optionally a profile) of one scenario, through the whole ASGI app.

    python -m bench.profile --database-url postgresql://…/db [--scenario R1|R2|R3|R4|W1|W1e|W0]
                            [--requests 50] [--repeat 1] [--cprofile | --pyinstrument]

Seed the database first (`python -m bench.seed --size medium --bulk --database-url …`). One
client, no network: it prints the time a request takes and the CPU it costs the server (the
rest is waiting on the database), the numbers to move before wrk can show anything. W0 sends
W1's requests to the stack's floor (`bench/floor.py`) instead of to Caseway, W1e to Caseway
with an engine that costs nothing (`bench/engineless.py`).
"""

import argparse
import asyncio
import cProfile
import os
import pstats
import time
from typing import Any

import asyncpg
import httpx

from bench import engineless, floor, queries, seed
from models import Database
from server.app import create_app, tune_garbage_collector
from server.settings import Settings


async def main_async(args: argparse.Namespace) -> None:
    db = Database(args.database_url)
    tune_garbage_collector()  # as the server's start-up does (the ASGI transport runs no lifespan)
    data = await seed.driver_data(args.database_url)
    token, bodies = data["token"], queries.bodies(data)["W1" if args.scenario in ("W0", "W1e") else args.scenario]
    app: Any
    if args.scenario == "W0":  # W1's requests, answered by the stack's floor (bench/floor.py)
        app = floor.app
        app.state.pool = await asyncpg.create_pool(args.database_url, min_size=1, max_size=2)
        os.environ["CASEWAY_FLOOR_ACTOR"] = data["owner"]
    else:
        # W1e: W1's requests, answered by Caseway without its engine
        make = engineless.create if args.scenario == "W1e" else create_app
        app = make(Settings(database_url=args.database_url), db=db)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench") as client:

        async def one(i: int) -> None:
            response = await client.post("/graphql", json=bodies[i % len(bodies)], headers=headers)
            # Checked on the bytes: decoding R1's response (and printing it to a string) cost
            # this client more CPU than the server spent on the request.
            content = response.content
            if response.status_code != 200 or b'"errors":' in content or b'"userErrors":[{' in content:
                raise SystemExit(f"request failed: {content[:500]!r}")

        for i in range(5):  # warm the caches (specs, parsed documents, statements)
            await one(i)
        profiler: Any = None
        if args.cprofile:
            profiler = cProfile.Profile()
            profiler.enable()
        elif args.pyinstrument:
            from pyinstrument import Profiler

            profiler = Profiler(async_mode="enabled")
            profiler.start()
        runs = []  # the best of --repeat rounds: this machine's clock speed wanders
        for _ in range(args.repeat):
            started, cpu_started = time.perf_counter(), time.process_time()
            for i in range(5, 5 + args.requests):
                await one(i)
            runs.append((time.process_time() - cpu_started, time.perf_counter() - started))
        cpu, elapsed = min(runs)
        if args.cprofile:
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(40)
        elif args.pyinstrument:
            profiler.stop()
            print(profiler.output_text(unicode=False, color=False, show_all=False))
    await db.dispose()
    if args.scenario == "W0":
        await app.state.pool.close()
    per_request, cpu_per_request = elapsed / args.requests * 1000, cpu / args.requests * 1000
    print(
        f"{args.scenario}: {per_request:.2f} ms per request, of which {cpu_per_request:.2f} ms CPU in this process"
        f" ({args.requests} requests)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--scenario", choices=["R1", "R2", "R3", "R4", "W1", "W1e", "W0"], default="R1")
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=1, help="rounds of --requests; the best one is printed")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--cprofile", action="store_true")
    group.add_argument("--pyinstrument", action="store_true")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
