"""W2: the transaction of one executeAction ("comment" on a bug case) as hand-written SQL over
asyncpg, the physical limit here. It makes the reads Caseway's decision needs, as Caseway
makes them: the case locked with its item and subproject, then in one statement its enabled
instances, states, role players (who may act) and notification subscribers (who hears of it).
Then it completes the instance, enables the next one, bumps the version and appends the
hash-chained log entry under the engine's locks (the chain's with its head, then the log's
taken by the insert itself)."""

import asyncio
import hashlib
import json
import time
import uuid
from datetime import UTC, datetime

import asyncpg

LOG_LOCK_KEY = 7_305_224_417  # engine/history/activity.py

CASE = (
    "SELECT c.id, c.version, c.workflow_id, i.subproject_id FROM workflow_case c "
    "JOIN workflow_item i ON i.id = c.object_id JOIN subproject s ON s.id = i.subproject_id "
    "WHERE c.object_id = $1 FOR UPDATE OF c"
)
CASE_ROWS = (
    "SELECT id, action, enabled_at, NULL AS kind, NULL AS key, NULL AS value FROM enabled_action "
    "WHERE case_id = $1 AND status = 'ENABLED' "
    "UNION ALL SELECT NULL, NULL, NULL, 'state', scope, state FROM case_state WHERE case_id = $1 "
    "UNION ALL SELECT NULL, NULL, NULL, 'role', role, party_id FROM case_role_party WHERE case_id = $1 "
    "UNION ALL SELECT NULL, NULL, NULL, 'news', level, user_id FROM notification_subscription "
    "WHERE (level = 'ROLE' AND target_id = '') OR (level = 'CASE' AND target_id IN ($1, $2)) "
    "OR (level = 'WORKFLOW' AND target_id IN ($3, $4))"
)


async def _one(conn: asyncpg.Connection, item_id: str, actor_id: str) -> None:
    async with conn.transaction():
        await transaction_body(conn, item_id, actor_id)


async def transaction_body(conn: asyncpg.Connection, item_id: str, actor_id: str) -> tuple[str, int]:
    """The transaction's statements, in the caller's transaction; returns the case's id and new
    version (W0, bench/floor.py, and W1e, bench/engineless.py, answer with them)."""
    case = await conn.fetchrow(CASE, item_id)
    rows = await conn.fetch(CASE_ROWS, case["id"], item_id, case["subproject_id"], case["workflow_id"])
    enabled = [(r["enabled_at"], r["id"]) for r in rows if r["action"] == "comment"]
    if not enabled:  # say which item, rather than min()'s "empty sequence"
        raise LookupError(f"item {item_id} has no ENABLED comment instance (is it a bug case of bench.seed?)")
    instance = min(enabled)[1]
    now = datetime.now(UTC)
    await conn.execute("UPDATE enabled_action SET status = 'COMPLETED', completed_at = $2 WHERE id = $1", instance, now)
    await conn.execute(
        "INSERT INTO enabled_action (id, case_id, action, scope, trigger, status, enabled_at) "
        "VALUES ($1, $2, 'comment', '', 'user', 'ENABLED', $3)",
        f"ea_{uuid.uuid4().hex}",
        case["id"],
        now,
    )
    version = await conn.fetchval(
        "UPDATE workflow_case SET version = version + 1 WHERE id = $1 RETURNING version", case["id"]
    )
    prev = await conn.fetchval("SELECT caseway_chain_head($1)", item_id)
    entry_id = f"act_{uuid.uuid4().hex}"
    digest = hashlib.sha256(json.dumps([prev, entry_id, "comment"]).encode()).hexdigest()
    await conn.execute(
        "INSERT INTO activity (id, workflow_item_id, case_id, kind, action, actor_id, at, comment, data, chain, "
        "prev_hash, hash) SELECT $1, $2, $3, 'action_executed', 'comment', $4, $5, 'bench', '{}', $2, $6, $7 "
        "FROM pg_advisory_xact_lock($8)",
        entry_id,
        item_id,
        case["id"],
        actor_id,
        now,
        prev,
        digest,
        LOG_LOCK_KEY,
    )
    return case["id"], version


async def statements(dsn: str, item_id: str, actor_id: str) -> int:
    """The statements one transaction sends, BEGIN and COMMIT aside (as Caseway's are counted)."""
    conn = await asyncpg.connect(dsn)
    sent: list[str] = []
    conn.add_query_logger(lambda record: sent.append(record.query))
    await _one(conn, item_id, actor_id)
    await conn.close()
    return sum(1 for query in sent if query.strip().upper() not in ("BEGIN", "COMMIT", "BEGIN;", "COMMIT;"))


async def run(dsn: str, item_ids: list[str], actor_id: str, *, clients: int = 32, seconds: float = 10) -> dict:
    """Run the transaction on distinct cases from ``clients`` connections; returns tx/s and latencies."""
    conns = [await asyncpg.connect(dsn) for _ in range(clients)]
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    counter = 0

    async def worker(conn: asyncpg.Connection) -> None:
        nonlocal counter
        while time.perf_counter() < deadline:
            counter += 1
            started = time.perf_counter()
            await _one(conn, item_ids[counter % len(item_ids)], actor_id)
            latencies.append((time.perf_counter() - started) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*[worker(c) for c in conns])
    elapsed = time.perf_counter() - started
    for conn in conns:
        await conn.close()
    latencies.sort()
    return {
        "tps": len(latencies) / elapsed,
        "p50_ms": latencies[len(latencies) // 2],
        "p99_ms": latencies[int(len(latencies) * 0.99)],
        "transactions": len(latencies),
        "statements": await statements(dsn, item_ids[0], actor_id),
    }
