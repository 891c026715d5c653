"""What bench R5's list pages read beyond the bulk seed's items (bench/bulk.py), in proportion
to the items, so each page is as full at 1M items as a real server's would be:

- users: one per 100 items (10,000 at 1M), the commenters below;
- comments: one item in ten gets a comment from one of those users, half an hour after it was
  opened, appended to its hash chain (history then has a fourth kind, actors other than the
  bench user, and dates spread over the items' two years);
- notifications: one per comment, for `bench` (its submitter), the older half read;
- jobs: one finished `webhook` job per comment (nine in ten COMPLETED, the rest FAILED: none
  is due, so a server started on the data has nothing to run);
- tags: every fifth project also carries the tag `pilot` (a tag filter that leaves some out);
- an ordering: the first project's first subproject lists its items newest first.

PostgreSQL only (COPY, as bench/bulk.py). `python -m bench.seed --bulk` (and `--size large`)
runs it after the items; alone, on a database seeded before: `python -m bench.pages_seed
--database-url …`. Not inside `bench.seed.seed`: tests/test_bench_seed.py compares bulk rows
with engine rows, which an ordering or a comment would tell apart.
"""

import argparse
import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from bench.bulk import Batch
from engine.people.passwords import hash_password
from models import new_id

ITEMS_PER_USER = 100
ITEMS_PER_COMMENT = 10
PROJECTS_PER_PILOT = 5
CHUNK = 20_000  # comments (and their notifications and jobs) written per COPY
PILOT_TAG = "pilot"


# The subproject whose items R5 reads with an ordering: the first project's first subproject.
ORDERED_SUBPROJECT = (
    "SELECT s.id FROM subproject s WHERE s.project_id = (SELECT min(id) FROM project) ORDER BY s.id LIMIT 1"
)


def asyncpg_dsn(url: str) -> str:
    """A database URL as asyncpg takes it (SQLAlchemy's names its driver)."""
    return url.replace("postgresql+asyncpg://", "postgresql://")


def user_login(n: int) -> str:
    return f"bench-user-{n:05d}"


async def seed_pages(dsn: str, *, owner: str, password: str) -> dict[str, int]:
    """Add the rows above to a bulk-seeded database; returns how many of each it wrote."""
    conn = await asyncpg.connect(asyncpg_dsn(dsn))
    try:
        items = await conn.fetchval("SELECT count(*) FROM workflow_item")
        users = await _users(conn, max(1, items // ITEMS_PER_USER), password)
        comments = await _comments(conn, owner=owner, users=users)
        await conn.execute(
            "UPDATE project SET tags = $1::json WHERE id IN "
            "(SELECT id FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM project) p WHERE n % $2 = 1)",
            json.dumps(["bench", PILOT_TAG]),
            PROJECTS_PER_PILOT,
        )
        first_sub = await conn.fetchval(ORDERED_SUBPROJECT)
        if first_sub is not None:
            listed = [
                r[0]
                for r in await conn.fetch(
                    "SELECT id FROM workflow_item WHERE subproject_id = $1 ORDER BY id DESC", first_sub
                )
            ]
            await conn.execute(
                "UPDATE subproject SET workflow_item_ordering = $1::json WHERE id = $2", json.dumps(listed), first_sub
            )
        return {"users": len(users), "comments": comments}
    finally:
        await conn.close()


async def _users(conn: asyncpg.Connection, count: int, password: str) -> list[str]:
    digest = hash_password(password)  # one hash for all: hashing 10,000 would take minutes
    now = datetime.now(UTC)
    known = await conn.fetchval("SELECT count(*) FROM \"user\" WHERE login LIKE 'bench-user-%'")
    rows = [
        (new_id("usr"), user_login(n), f"Bench User {n}", "", digest, False, False, now)
        for n in range(known, known + count)
    ]
    await conn.copy_records_to_table(
        "user",
        records=rows,
        columns=["id", "login", "display_name", "organization", "password_hash", "is_admin", "disabled", "created_at"],
    )
    return [r[0] for r in rows]


async def _comments(conn: asyncpg.Connection, *, owner: str, users: list[str]) -> int:
    """A comment on every ITEMS_PER_COMMENT-th item, with its notification and job."""
    targets = await conn.fetch(
        """SELECT i.id, i.project_id, i.subproject_id, c.id AS case_id, i.created_at,
                  (SELECT a.hash FROM activity a WHERE a.chain = i.id ORDER BY a.seq DESC LIMIT 1) AS head
           FROM (SELECT id, project_id, subproject_id, created_at, row_number() OVER (ORDER BY id) AS n
                 FROM workflow_item) i
           JOIN workflow_case c ON c.object_id = i.id
           WHERE i.n % $1 = 0 ORDER BY i.id""",
        ITEMS_PER_COMMENT,
    )
    for start in range(0, len(targets), CHUNK):
        batch = Batch()
        extra: dict[str, list[tuple[Any, ...]]] = {"notification": [], "job": []}
        heads = {}
        for n, t in enumerate(targets[start : start + CHUNK], start):
            at = t["created_at"] + timedelta(minutes=30)
            heads[t["id"]] = t["head"]
            batch.log(
                chain=t["id"],
                kind="action_executed",
                actor_id=users[n % len(users)],
                at=at,
                project_id=t["project_id"],
                subproject_id=t["subproject_id"],
                workflow_item_id=t["id"],
                case_id=t["case_id"],
                action="comment",
                comment=f"Comment {n}",
                data={"from": "open", "to": "open"},
            )
            entry = batch.rows["activity"][-1]["id"]
            read_at = at + timedelta(hours=1) if n < len(targets) // 2 else None
            extra["notification"].append((new_id("ntf"), owner, entry, "ROLE", at, read_at))
            state, error = (
                ("FAILED", json.dumps({"message": "endpoint answered 500"})) if n % 10 == 9 else ("COMPLETED", None)
            )
            job = new_id("job")
            extra["job"].append(
                (
                    job,
                    "webhook",
                    t["case_id"],
                    t["id"],
                    entry,
                    state,
                    "",
                    1,
                    None,
                    json.dumps({"endpoint": "bench"}),
                    "{}",
                    error,
                    job,
                    job,
                    at,
                    at,
                )
            )
        await batch.copy(conn, heads=heads)
        await conn.copy_records_to_table(
            "notification",
            records=extra["notification"],
            columns=["id", "recipient_id", "activity_id", "level", "created_at", "read_at"],
        )
        await conn.copy_records_to_table(
            "job",
            records=extra["job"],
            columns=[
                "id",
                "kind",
                "case_id",
                "workflow_item_id",
                "activity_id",
                "state",
                "step",
                "attempts",
                "next_attempt_at",
                "input",
                "progress",
                "error",
                "idempotency_key",
                "serialization_key",
                "created_at",
                "updated_at",
            ],
        )
    return len(targets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True)
    args = parser.parse_args()
    from bench.seed import PASSWORD

    async def run() -> dict[str, int]:
        conn = await asyncpg.connect(args.database_url)
        owner = await conn.fetchval("SELECT id FROM \"user\" WHERE login = 'bench'")
        await conn.close()
        return await seed_pages(args.database_url, owner=owner, password=PASSWORD)

    print(asyncio.run(run()))


if __name__ == "__main__":
    main()
