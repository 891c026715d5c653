"""W1r: ``executeAction`` with 10 case fields and two routes, beside W1, on one server. Budget
(issue 48): it costs at most 1 ms of server CPU per request more than W1.

    python -m bench.fields [--items 200] [--seconds 10] [--rounds 5] [--workers 2]
                           [--connections 32] [--report bench/REPORT.md | --no-report]

On a fresh PostgreSQL database of its own (dropped afterwards): the `small` data of `make bench`
(W1's 200 bug cases, through the engine), then a subproject of ``items`` cases of ``SPEC`` (a
purchase with one field of every type, ``update`` sets all ten and routes on the amount) made
by the same user. One server (uvicorn, ``workers`` processes, as `make bench` runs W1) answers
both: W1 (the `comment` action, no fields) and W1r (``update`` with ten values), alternating for
``rounds`` rounds of ``seconds`` each after warming both, with wrk at ``connections`` clients.
Each round's CPU of the server's processes per request (bench/cpu.py); the section gives the
median of each, the median of the rounds' differences, and the verdict against the budget.

W1r's bodies alternate two sets of values per case (every request changes all ten fields, and
the amount crosses the route's bound: half the requests go to ``large``, half to ``open``), so
each request validates, logs and routes ten changes; it never repeats the values a case holds.
"""

import argparse
import asyncio
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy import select

import engine
from bench import cpu, queries, sections, seed, wrk
from bench.server import Server, on_fresh_postgres, vacuum_analyze
from engine.people import identity
from models import Database, User

BEGIN, END = "<!-- W1r -->", "<!-- /W1r -->"
BUDGET_MS = 1.0  # server CPU per request over W1's (issue 48)

SPEC: dict[str, Any] = {
    "short_name": "bench_purchase",
    "pretty_name": "Bench purchase",
    "fields": {
        "amount": {"type": "money", "label": "Amount", "min": 0},
        "vendor": {"type": "string", "label": "Vendor", "max_length": 40, "pattern": "[A-Za-z ]+"},
        "quantity": {"type": "integer", "label": "Quantity", "min": 1, "max": 1000},
        "urgency": {"type": "enum", "label": "Urgency", "choices": {"low": "Low", "high": "High"}},
        "express": {"type": "boolean", "label": "Express"},
        "needed_by": {"type": "date", "label": "Needed by"},
        "note": {"type": "text", "label": "Note", "max_length": 500},
        "owner": {"type": "user", "label": "Owner"},
        "weight": {"type": "number", "label": "Weight", "min": 0, "max": 1000},
        "deliver_at": {"type": "datetime", "label": "Deliver at"},
    },
    "roles": {"requester": {"callbacks": ["creation_user"]}},
    "states": {"open": {}, "large": {}, "closed": {"terminal": True}},
    "actions": {
        "create": {"trigger": "init", "new_state": "open"},
        "update": {
            "allowed_roles": ["requester"],
            "enabled_states": ["open", "large"],
            "fields": [
                "amount",
                "vendor",
                "quantity",
                "urgency",
                "express",
                "needed_by",
                "note",
                "owner",
                "weight",
                "deliver_at",
            ],
            "routes": [{"when": "fields.amount > 10000.0", "to": "large"}, {"to": "open"}],
        },
        "close": {"allowed_roles": ["requester"], "enabled_states": ["open", "large"], "new_state": "closed"},
    },
}

W1R = """mutation W1r($item: ID!, $fields: JSON!, $dryRun: Boolean = false) { executeAction(input: {
  workflowItemId: $item, action: "update", fields: $fields, dryRun: $dryRun}) {
  case { version } userErrors { code } } }"""


def values(variant: int, owner: str) -> dict[str, Any]:
    """One of the two sets of values a case alternates between: every field differs, and the
    amount is over the route's bound in the first (``large``) and under it in the second."""
    first = variant == 0
    return {
        "amount": "25000.00" if first else "1250.50",
        "vendor": "Acme Supplies" if first else "Globex",
        "quantity": 12 if first else 3,
        "urgency": "high" if first else "low",
        "express": first,
        "needed_by": "2027-01-15" if first else "2027-02-01",
        "note": "Chairs for the new office" if first else "Replacement parts",
        "owner": owner if first else None,  # null clears it
        "weight": 12.5 if first else 3.25,
        "deliver_at": "2027-01-10T09:00:00+00:00" if first else "2027-01-20T14:30:00+00:00",
    }


def bodies(items: list[str], owner: str) -> list[dict[str, Any]]:
    """Every case with the first values, then every case with the second: wrk sends them in
    turn, so each request on a case changes what the one before set."""
    return [
        {"query": W1R, "variables": {"item": item, "fields": values(variant, owner)}}
        for variant in (0, 1)
        for item in items
    ]


@dataclass
class Prepared:
    token: str
    owner: str
    w1: list[dict[str, Any]]
    w1r: list[dict[str, Any]]
    items: list[str] = field(default_factory=list)


async def make_cases(url: str, spec: dict[str, Any], count: int, *, project: str, name: str) -> list[str]:
    """Defines ``spec`` and makes ``count`` cases of it (``name`` and a number) by the bench user,
    in a project and subproject of their own; their items' ids."""
    db = Database(url)
    try:
        async with db.transaction() as s:
            await engine.define_workflow(s, actor=None, spec=spec)
            owner = await s.scalar(select(User).where(User.login == "bench"))
            actor = await identity.actor_for(s, user_id=owner.id, login=owner.login, is_admin=False)
            made_project = await engine.create_project(s, actor=actor, display_name=project, tags=["bench"])
            sub = await engine.create_subproject(
                s,
                actor=actor,
                project_id=made_project.id,
                display_name="Office",
                currency="EUR",
                workflow=spec["short_name"],
            )
            made = []
            for n in range(count):
                item, _ = await engine.create_workflow_item(
                    s, actor=actor, subproject_id=sub.id, display_name=f"{name} {n}"
                )
                made.append(item.id)
            return made
    finally:
        await db.dispose()


async def prepare(url: str, *, items: int, w1_size: tuple[int, int, int] = seed.SIZES["small"]) -> Prepared:
    """W1's data (``w1_size``), then ``items`` cases of ``SPEC`` of the bench user."""
    await seed.seed(url, *w1_size)
    data = await seed.driver_data(url)  # before the new items: W1's bodies are the bug cases'
    made = await make_cases(url, SPEC, items, project="Purchases", name="Order")
    await vacuum_analyze(url)
    return Prepared(
        token=data["token"],
        owner=data["owner"],
        w1=queries.bodies(data)["W1"],
        w1r=bodies(made, data["owner"]),
        items=made,
    )


Driver = Callable[..., wrk.WrkResult]


@dataclass
class Rounds:
    w1: list[cpu.CpuUse] = field(default_factory=list)
    w1r: list[cpu.CpuUse] = field(default_factory=list)
    w1_rps: list[float] = field(default_factory=list)
    w1r_rps: list[float] = field(default_factory=list)
    errors: int = 0

    def differences(self) -> list[float]:
        return [b.server_ms - a.server_ms for a, b in zip(self.w1, self.w1r, strict=True)]


def _check(url: str, body: dict[str, Any], token: str) -> None:
    answer = httpx.post(f"{url}/graphql", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=60).json()
    if answer.get("errors") or answer["data"]["executeAction"]["userErrors"]:
        raise SystemExit(f"the request fails before the load even starts: {answer}")


def measure(
    url: str,
    prepared: Prepared,
    *,
    seconds: int,
    rounds: int,
    workers: int,
    connections: int,
    warm_seconds: int = 3,
    driver: Driver = wrk.run,
) -> Rounds:
    """W1 and W1r on one server in alternating rounds: the CPU its processes spent per request."""
    server = Server(url, workers=workers)
    found = Rounds()
    try:
        _check(server.url, prepared.w1[0], prepared.token)  # executes one comment, as `make bench` does
        # a dry run: W1r's cases see each set of values in turn, never the same one twice
        _check(
            server.url,
            {**prepared.w1r[0], "variables": {**prepared.w1r[0]["variables"], "dryRun": True}},
            prepared.token,
        )
        for scenario in (prepared.w1, prepared.w1r):  # the pools' connections and prepared statements
            driver(server.url, scenario, token=prepared.token, connections=connections, seconds=warm_seconds)
        for n in range(rounds):
            print(f"W1 / W1r round {n + 1}/{rounds}...", flush=True)
            for scenario, uses, rates in (
                (prepared.w1, found.w1, found.w1_rps),
                (prepared.w1r, found.w1r, found.w1r_rps),
            ):
                meter = cpu.Meter(server.process.pid).start()
                result = driver(server.url, scenario, token=prepared.token, connections=connections, seconds=seconds)
                uses.append(meter.stop(result.requests))
                rates.append(result.requests_per_second)
                found.errors += result.errors
    finally:
        server.stop()
    return found


def section(found: Rounds, *, items: int, workers: int, connections: int, note: str = "") -> list[str]:
    w1 = statistics.median(u.server_ms for u in found.w1)
    w1r = statistics.median(u.server_ms for u in found.w1r)
    more = statistics.median(found.differences())
    problems = [f"{more:.2f} ms more than W1, over {BUDGET_MS:.0f} ms"] if more > BUDGET_MS else []
    if found.errors:
        problems.append(f"{found.errors} failed requests")
    rounds = len(found.w1)
    lines = [
        BEGIN,
        f"## W1r: executeAction with 10 fields and two routes, beside W1 (`bench/fields.py`, at `{sections.commit()}`)",
        "",
        f"One server ({workers} worker(s), PostgreSQL), W1 and W1r alternating for {rounds} round(s), wrk "
        f"{connections} clients; W1r: {items} cases of a purchase workflow, each request sets all ten fields "
        "(one of every type) to new values and routes on the amount (half to each route). Server CPU per "
        f"request (bench/cpu.py), the median of the rounds. {note}".rstrip(),
        "",
        "| scenario | req/s | server CPU ms per request | rounds |",
        "| --- | ---: | ---: | --- |",
        f"| W1 | {statistics.median(found.w1_rps):,.0f} | {w1:.2f} | "
        + ", ".join(f"{u.server_ms:.2f}" for u in found.w1)
        + " |",
        f"| W1r | {statistics.median(found.w1r_rps):,.0f} | {w1r:.2f} | "
        + ", ".join(f"{u.server_ms:.2f}" for u in found.w1r)
        + " |",
        "",
        f"W1r - W1: **{more:.2f} ms** of server CPU per request (median of the rounds' differences: "
        + ", ".join(f"{d:.2f}" for d in found.differences())
        + f"); budget {BUDGET_MS:.0f} ms: {sections.verdict(problems)}",
        END,
    ]
    return lines


async def run(url: str, args: argparse.Namespace) -> list[str]:
    prepared = await prepare(url, items=args.items)
    found = await asyncio.to_thread(
        measure,
        url,
        prepared,
        seconds=args.seconds,
        rounds=args.rounds,
        workers=args.workers,
        connections=args.connections,
    )
    return section(found, items=args.items, workers=args.workers, connections=args.connections, note=args.note)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--note", default="", help="said in the report: the machine's load")
    sections.add_arguments(parser)
    args = parser.parse_args()
    lines = asyncio.run(on_fresh_postgres("caseway_bench_w1r", run, args=args))
    sections.publish(
        lines,
        args,
        name="W1r",
        write=lambda report, found: sections.replace(report, found, begin=BEGIN, end=END, after="<!-- /S1 -->"),
    )


if __name__ == "__main__":
    main()
