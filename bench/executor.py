"""Whether Caseway's executor subclass still pays (issue 36 point 7): the in-process CPU per
request of reads the read planner does not compile, with the fast field path of
schema/execution_fields.py and schema/execution_completers.py, and with graphql-core's own
``execute_fields`` in its place (everything else of the executor kept: compiled roots, request
errors, live events). Alternating rounds, the best of each; CPU time holds on a shared machine
where wall-clock rates do not.

    python -m bench.executor --database-url postgresql://…/db [--requests 10] [--rounds 3]

on a database `python -m bench.seed --size small` has seeded. Measured on 2026-11-26
(PostgreSQL, load 4-5 from other work), ms of CPU per request, fast / graphql-core's: R1 with
the planner off 17.6 / 53.5, R2 off 6.8 / 9.7, a filtered project list 8.5 / 14.3,
``Project.history`` 5.7 / 8.4, ``myTasks`` 13.7 / 17.3, ``Case.log`` 4.3 / 4.7, R4 off 4.9 / 5.2,
an executeAction payload 5.4 / 5.4, R1 compiled 2.8 / 2.7.
"""

import argparse
import asyncio
import time
from typing import Any

import httpx
from sqlalchemy import select
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from bench import queries, seed
from engine.people import identity
from models import Database, User
from schema.execution import CasewayExecutor
from server.app import create_app, tune_garbage_collector
from server.settings import Settings

FAST = CasewayExecutor.execute_fields
PLAIN = StrawberryGraphQLCoreExecutionContext.execute_fields

MY_TASKS = """{ myTasks(first: 50) { edges { node { id enabledAt action { shortName }
  assignees { ... on User { login } } case { id state { shortName } workflowItem { id displayName } } } } } }"""
HISTORY = """query($id: ID!) { node(id: $id) { ... on Project { history(first: 100) { edges { node {
  id seq at kind action comment hash prevHash actor { login } } } } } } }"""
CASE_LOG = """query($id: ID!) { node(id: $id) { ... on WorkflowItem { case { log(first: 50) { edges { node {
  id seq kind action at actor { login } } } } } } } }"""
FILTERED = """{ projects(first: 10, filter: {search: "P"}) { edges { node { id displayName
  subprojects(first: 10) { edges { node { displayName workflowItems(first: 20) { edges { node {
    id displayName status case { state { shortName } } } } } } } } } } } }"""
PAYLOAD = """mutation($item: ID!) { executeAction(input: {workflowItemId: $item, action: "comment",
  comment: "bench"}) { case { version state { shortName } enabledActions { action { shortName } }
  workflowItem { id displayName } } userErrors { code } } }"""


def scenarios(data: dict[str, Any]) -> dict[str, tuple[bool, list[dict[str, Any]]]]:
    """name -> (the planner on, request bodies); a body with "dev" is sent as bench-dev, who
    holds the bench cases' tasks."""
    bodies = queries.bodies(data)
    return {
        "R1 (planner off)": (False, bodies["R1"]),
        "R2 (planner off)": (False, bodies["R2"]),
        "R4 (planner off)": (False, bodies["R4"]),
        "myTasks": (True, [{"query": MY_TASKS, "dev": True}]),
        "Project.history": (True, [{"query": HISTORY, "variables": {"id": data["projects"][0]}}]),
        "filtered projects": (True, [{"query": FILTERED}]),
        "executeAction payload": (True, [{"query": PAYLOAD, "variables": {"item": i}} for i in data["items"]]),
        "Case.log": (True, [{"query": CASE_LOG, "variables": {"id": data["items"][0]}}]),
        "R1 (planner on)": (True, bodies["R1"]),
    }


async def _dev_token(url: str) -> str:
    db = Database(url)
    try:
        async with db.transaction() as s:
            dev = await s.scalar(select(User).where(User.login == "bench-dev"))
            return await identity.create_token(s, user_id=dev.id, ttl_seconds=3600)
    finally:
        await db.dispose()


async def measure(url: str, *, requests: int, rounds: int, tune_gc: bool = True) -> dict[str, tuple[float, float]]:
    """name -> (fast, graphql-core's) ms of this process's CPU per request."""
    if tune_gc:
        tune_garbage_collector()  # as the server's start-up does
    data = await seed.driver_data(url)
    headers = {"Authorization": f"Bearer {data['token']}"}
    dev_headers = {"Authorization": f"Bearer {await _dev_token(url)}"}
    found: dict[str, tuple[float, float]] = {}
    try:
        for compiled in (False, True):
            db = Database(url)
            app = create_app(Settings(database_url=url, compiled_reads=compiled), db=db)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:

                async def one(bodies: list[dict[str, Any]], i: int) -> None:
                    body = dict(bodies[i % len(bodies)])
                    sent = await client.post(
                        "/graphql", json=body, headers=dev_headers if body.pop("dev", False) else headers
                    )
                    if sent.status_code != 200 or b'"errors":' in sent.content or b'"userErrors":[{' in sent.content:
                        raise SystemExit(f"request failed: {sent.content[:400]!r}")

                for name, (planner, bodies) in scenarios(data).items():
                    if planner != compiled:
                        continue
                    best = {FAST: float("inf"), PLAIN: float("inf")}
                    for _ in range(rounds):
                        for way in best:
                            CasewayExecutor.execute_fields = way  # type: ignore[method-assign]
                            for i in range(3):  # warm: plans, statements, caches
                                await one(bodies, i)
                            started = time.process_time()
                            for i in range(requests):
                                await one(bodies, i)
                            best[way] = min(best[way], (time.process_time() - started) / requests * 1000)
                    found[name] = (best[FAST], best[PLAIN])
                    print(f"{name:24s} fast {best[FAST]:7.2f} ms, graphql-core's {best[PLAIN]:7.2f} ms", flush=True)
            await db.dispose()
    finally:
        CasewayExecutor.execute_fields = FAST  # type: ignore[method-assign]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--requests", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(measure(args.database_url, requests=args.requests, rounds=args.rounds))


if __name__ == "__main__":
    main()
