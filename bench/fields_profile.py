"""In-process CPU of W1r against W1, and of the parts of W1r's extra cost, through the whole ASGI
app on one seeded PostgreSQL database (its own, dropped afterwards): the figures to move before
wrk (bench/fields.py) can show anything, and steadier than it on a shared machine.

    python -m bench.fields_profile [--items 100] [--requests 200] [--repeat 3]
                                   [--cprofile SCENARIO] [--dump FOLDER]

Scenarios, each on cases of its own, alternating in rounds (the best round of each is printed):

- W1: the `comment` action, no fields, the state kept (bench/queries.py);
- W1r: `update` with ten fields, routed on the amount to the other state at each request;
- W1t: a transition alone: the purchase workflow's fields declared, no fields set, no routes,
  the state changing at each request (`flip_large` / `flip_open`);
- W1f: ten fields and the routes, the state kept (both sets of values route to `large`).

W1r - W1 is the budget's figure (issue 48); W1t - W1 is the transition's share of it, W1f - W1
the fields' and routes' without a transition.
"""

import argparse
import asyncio
import copy
import cProfile
import pstats
import statistics
import time
from typing import Any

import httpx

from bench import fields, server
from models import Database
from server.app import create_app, tune_garbage_collector
from server.settings import Settings

FLIP: dict[str, Any] = copy.deepcopy(fields.SPEC)
FLIP["short_name"], FLIP["pretty_name"] = "bench_flip", "Bench flip"
FLIP["actions"]["flip_large"] = {"allowed_roles": ["requester"], "enabled_states": ["open"], "new_state": "large"}
FLIP["actions"]["flip_open"] = {"allowed_roles": ["requester"], "enabled_states": ["large"], "new_state": "open"}

FLIP_QUERY = """mutation W1t($item: ID!, $action: String!) { executeAction(input: {
  workflowItemId: $item, action: $action}) { case { version } userErrors { code } } }"""


async def scenarios(url: str, items: int) -> tuple[str, dict[str, list[dict[str, Any]]]]:
    """The token and each scenario's bodies (a driver cycles through them in order)."""
    prepared = await fields.prepare(url, items=items)
    flips = await fields.make_cases(url, FLIP, items, project=FLIP["pretty_name"], name="C")
    kept_spec = {**fields.SPEC, "short_name": "bench_kept", "pretty_name": "Bench kept"}
    kept = await fields.make_cases(url, kept_spec, items, project=kept_spec["pretty_name"], name="C")
    await server.vacuum_analyze(url)
    w1f = []
    for variant, amount in ((0, "25000.00"), (1, "30000.00")):
        for item in kept:
            values = {**fields.values(variant, prepared.owner), "amount": amount}
            w1f.append({"query": fields.W1R, "variables": {"item": item, "fields": values}})
    w1t = [
        {"query": FLIP_QUERY, "variables": {"item": item, "action": action}}
        for action in ("flip_large", "flip_open")
        for item in flips
    ]
    return prepared.token, {"W1": prepared.w1, "W1r": prepared.w1r, "W1t": w1t, "W1f": w1f}


async def measure(url: str, args: argparse.Namespace) -> None:
    token, bodies = await scenarios(url, args.items)
    db = Database(url)
    tune_garbage_collector()  # as the server's start-up does (the ASGI transport runs no lifespan)
    app = create_app(Settings(database_url=url), db=db)
    headers = {"Authorization": f"Bearer {token}"}
    position = dict.fromkeys(bodies, 0)
    found: dict[str, list[float]] = {name: [] for name in bodies}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench") as client:

        async def run(name: str, count: int) -> None:
            for _ in range(count):
                body = bodies[name][position[name] % len(bodies[name])]
                position[name] += 1
                content = (await client.post("/graphql", json=body, headers=headers)).content
                if b'"errors":' in content or b'"userErrors":[{' in content:
                    raise SystemExit(f"{name} failed: {content[:500]!r}")

        for name in bodies:  # warm: specs, parsed documents, prepared statements
            await run(name, 20)
        for _ in range(args.repeat):  # alternating: the machine's load and clock wander
            for name in bodies:
                started = time.process_time()
                await run(name, args.requests)
                found[name].append((time.process_time() - started) / args.requests * 1000)
        for name in bodies if args.dump else ():
            profiler = cProfile.Profile(time.process_time)  # CPU: waits on the database are not the server's
            profiler.enable()
            await run(name, args.requests)
            profiler.disable()
            profiler.dump_stats(f"{args.dump}/{name}.pstats")
        if args.cprofile:
            profiler = cProfile.Profile(time.process_time)  # CPU: waits on the database are not the server's
            profiler.enable()
            await run(args.cprofile, args.requests)
            profiler.disable()
            pstats.Stats(profiler).sort_stats(args.sort).print_stats(args.lines)
    await db.dispose()
    for name, runs in found.items():
        line = ", ".join(f"{r:.2f}" for r in runs)
        print(f"{name}: {min(runs):.2f} ms CPU per request (best; median {statistics.median(runs):.2f}; {line})")
    w1 = min(found["W1"])
    for name in ("W1r", "W1t", "W1f"):
        print(f"{name} - W1: {min(found[name]) - w1:.2f} ms (best against best)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sort", default="cumulative")
    parser.add_argument("--lines", type=int, default=60)
    parser.add_argument("--dump", help="a folder: each scenario's cProfile statistics written there")
    parser.add_argument("--cprofile", choices=["W1", "W1r", "W1t", "W1f"], help="print one scenario's profile")
    args = parser.parse_args()
    asyncio.run(server.on_fresh_postgres("caseway_bench_w1r_profile", measure, args=args))


if __name__ == "__main__":
    main()
