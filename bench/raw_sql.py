"""W2: the state change of one executeAction ("comment" on a bug case) as hand-written SQL
over asyncpg: lock the case, complete the enabled instance, enable the next one, bump the
version, append the hash-chained log entry with the engine's locks (the chain's, then the log's
taken by the insert itself). The physical limit here."""

import asyncio
import hashlib
import json
import time
import uuid
from datetime import UTC, datetime

import asyncpg

LOG_LOCK_KEY, CHAIN_LOCK_CLASS = 7_305_224_417, 730_522  # engine/activity.py


async def _one(conn: asyncpg.Connection, item_id: str, actor_id: str) -> None:
    async with conn.transaction():
        case = await conn.fetchrow("SELECT id, version FROM workflow_case WHERE object_id = $1 FOR UPDATE", item_id)
        instance = await conn.fetchval(
            "SELECT id FROM enabled_action WHERE case_id = $1 AND action = 'comment' AND status = 'ENABLED' "
            "ORDER BY enabled_at, id LIMIT 1",
            case["id"],
        )
        now = datetime.now(UTC)
        await conn.execute(
            "UPDATE enabled_action SET status = 'COMPLETED', completed_at = $2 WHERE id = $1", instance, now
        )
        await conn.execute(
            "INSERT INTO enabled_action (id, case_id, action, scope, trigger, status, enabled_at) "
            "VALUES ($1, $2, 'comment', '', 'user', 'ENABLED', $3)",
            f"ea_{uuid.uuid4().hex}",
            case["id"],
            now,
        )
        await conn.execute("UPDATE workflow_case SET version = version + 1 WHERE id = $1", case["id"])
        await conn.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", CHAIN_LOCK_CLASS, item_id)
        prev = await conn.fetchval("SELECT hash FROM activity WHERE chain = $1 ORDER BY seq DESC LIMIT 1", item_id)
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
