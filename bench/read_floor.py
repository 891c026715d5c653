"""R1f: R1's tree as one hand-written SQL statement that builds the finished JSON inside
PostgreSQL, driven over asyncpg from 32 connections: what the database itself can serve of this
read on these cores, the floor R1 is compared with (issue 36: R1 / R1f, goal >= 0.5).

The statement answers what Caseway answers for R1 (``tests/test_bench_read_floor.py`` compares
the two on seeded data), with the visibility rule inline as Caseway's is: the viewer's parties
(the user and their groups) hold ``project.view``, ``subproject.view`` and ``workflowItem.view``
grants, or play a role in the item's case. It leaves out what the bench data never holds, so
that the floor is a floor: deputyships, and a subproject's own item order (``reorderWorkflowItems``;
the bench's subprojects have none, so items come in id order as Caseway lists them then).

    python -m bench.read_floor --database-url postgresql://…/db [--clients 32] [--seconds 10]

on a database `python -m bench.seed` has seeded.
"""

import argparse
import asyncio
import json
import time
from typing import Any

import asyncpg

from bench import seed

VISIBLE_TO = "party_id = ANY($2::varchar[])"

R1F = f"""
SELECT json_build_object('node', json_build_object(
  'displayName', p.display_name,
  'subprojects', json_build_object('edges', coalesce((
    SELECT json_agg(json_build_object('node', json_build_object(
      'displayName', s.display_name,
      'workflowItems', json_build_object('edges', coalesce((
        SELECT json_agg(json_build_object('node', json_build_object(
          'id', i.id,
          'displayName', i.display_name,
          'case', (
            SELECT json_build_object(
              'state', (SELECT json_build_object('shortName', cs.state) FROM case_state cs
                        WHERE cs.case_id = c.id AND cs.scope = ''),
              'enabledActions', coalesce((
                SELECT json_agg(json_build_object('action', json_build_object('shortName', ea.action))
                                ORDER BY ea.enabled_at, ea.id)
                FROM enabled_action ea
                WHERE ea.case_id = c.id AND ea.status = 'ENABLED' AND ea.trigger = 'user'), '[]'::json),
              'roles', coalesce((
                SELECT json_agg(json_build_object(
                  'role', json_build_object('shortName', r.key),
                  'assignees', coalesce((
                    SELECT json_agg(json_build_object('login', u.login) ORDER BY crp.party_id)
                    FROM case_role_party crp JOIN "user" u ON u.id = crp.party_id
                    WHERE crp.case_id = c.id AND crp.role = r.key), '[]'::json)) ORDER BY r.place)
                FROM json_each(w.spec -> 'roles') WITH ORDINALITY AS r(key, value, place)), '[]'::json))
            FROM workflow_case c JOIN workflow w ON w.id = c.workflow_id
            WHERE c.object_id = i.id))) ORDER BY i.id)
        FROM (
          SELECT i.id, i.display_name FROM workflow_item i
          WHERE i.subproject_id = s.id AND (
            EXISTS (SELECT 1 FROM permission g WHERE g.resource_id = i.id
                    AND g.intent = 'workflowItem.view' AND g.{VISIBLE_TO})
            OR EXISTS (SELECT 1 FROM workflow_case rc JOIN case_role_party rp ON rp.case_id = rc.id
                       WHERE rc.object_id = i.id AND rp.{VISIBLE_TO}))
          ORDER BY i.id LIMIT 20) i), '[]'::json)))) ORDER BY s.id)
    FROM (
      SELECT s.id, s.display_name FROM subproject s
      WHERE s.project_id = p.id AND EXISTS (SELECT 1 FROM permission g WHERE g.resource_id = s.id
                                            AND g.intent = 'subproject.view' AND g.{VISIBLE_TO})
      ORDER BY s.id LIMIT 10) s), '[]'::json))))
FROM project p
WHERE p.id = $1 AND EXISTS (SELECT 1 FROM permission g WHERE g.resource_id = p.id
                            AND g.intent = 'project.view' AND g.{VISIBLE_TO})
"""


def _asyncpg(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


async def viewer_parties(conn: asyncpg.Connection, login: str = "bench") -> list[str]:
    """The parties a user acts as: the user and their groups."""
    user_id = await conn.fetchval('SELECT id FROM "user" WHERE login = $1', login)
    groups = await conn.fetch("SELECT group_id FROM group_member WHERE user_id = $1", user_id)
    return [user_id, *(row["group_id"] for row in groups)]


async def answer(dsn: str, project_id: str) -> dict[str, Any] | None:
    """R1f's answer for the bench user: the ``data`` Caseway's R1 returns."""
    conn = await asyncpg.connect(_asyncpg(dsn))
    try:
        value = await conn.fetchval(R1F, project_id, await viewer_parties(conn))
    finally:
        await conn.close()
    return {"node": None} if value is None else json.loads(value)


async def run(dsn: str, project_id: str, *, clients: int = 32, seconds: float = 10) -> dict[str, Any]:
    """The statement from ``clients`` connections for ``seconds``, each prepared once; returns
    statements/s and latencies (ms)."""
    conns = [await asyncpg.connect(_asyncpg(dsn)) for _ in range(clients)]
    parties = await viewer_parties(conns[0])
    latencies: list[float] = []
    try:
        prepared = [await conn.prepare(R1F) for conn in conns]
        deadline = time.perf_counter() + seconds

        async def worker(statement: Any) -> None:
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                await statement.fetchval(project_id, parties)
                latencies.append((time.perf_counter() - started) * 1000)

        started = time.perf_counter()
        await asyncio.gather(*(worker(statement) for statement in prepared))
        elapsed = time.perf_counter() - started
    finally:
        for conn in conns:
            await conn.close()
    latencies.sort()
    return {
        "sps": len(latencies) / elapsed,
        "p50_ms": latencies[len(latencies) // 2],
        "p99_ms": latencies[int(len(latencies) * 0.99)],
        "statements": len(latencies),
    }


async def main_async(args: argparse.Namespace) -> None:
    data = await seed.driver_data(args.database_url)
    result = await run(args.database_url, data["projects"][0], clients=args.clients, seconds=args.seconds)
    print(
        f"R1f: {result['sps']:,.0f} statements/s, p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms"
        f" ({args.clients} clients, {args.seconds:g} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=10)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
