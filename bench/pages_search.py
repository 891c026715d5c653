"""Search at scale (R5's search rows): the statement a `search` page runs, as resolvers/search.py
builds it for a viewer, under EXPLAIN (ANALYZE, BUFFERS) on a PostgreSQL database seeded with
`python -m bench.seed --size large` (1M items).

    python -m bench.pages_search --database-url postgresql://…/db [--login bench-dev] [--runs 5]
    python -m bench.pages_search --database-url postgresql://…/db --in-process 20

Per query shape (a rare word, a word of about 100,000 items, a word of every item; a first
page and the page after it) it prints the median execution time the plan reports, the shared
buffers it hit and read, and the machine's load average: the number to compare with the 50 ms
budget is the database's own time, which the loaded machine's Python does not blur.
"""

import argparse
import asyncio
import os
import statistics
import time
import types

import asyncpg
import httpx
from sqlalchemy import select
from sqlalchemy.dialects import postgresql

from engine.people import identity
from engine.people.actors import Actor
from models import Database, User
from resolvers import search as searching
from server.app import create_app
from server.settings import Settings

# (name, query): the bench data's names are "Project p", "Subproject p.m", "Item p.m.k"
# (500 x 40 x 50); their words are "item" (every item), numbers, and a word seed_words adds.
SHAPES = (
    ("rare word (10 items)", "zebra"),
    ("four common words (item 7.13.4)", "item 7.13.4"),
    ("word of ~100k items (tenth)", "tenth"),
    ("word of every item", "item"),
)


async def seed_words(conn: asyncpg.Connection) -> None:
    """Give about a tenth of the items the word "tenth" in their description (3 of the 32 last
    characters of an id: ~94,000 of 1M), ten items "zebra crossing", and bench-user-00002 a
    grant on 300 items, once."""
    if await conn.fetchval("SELECT count(*) FROM workflow_item WHERE description = 'tenth'"):
        return
    await conn.execute("UPDATE workflow_item SET description = 'tenth' WHERE right(id, 1) IN ('0', 'A', 'K')")
    await conn.execute(
        "UPDATE workflow_item SET description = 'zebra crossing' "
        "WHERE id IN (SELECT id FROM workflow_item ORDER BY id LIMIT 10 OFFSET 500000)"
    )
    # A user who may see 300 items (one in 3,333), a tenth of them "tenth": what they find of a
    # common word is their own, not the newest matches of everyone's.
    await conn.execute(
        "INSERT INTO permission (resource_id, intent, party_id) "
        "SELECT i.id, 'workflowItem.view', u.id FROM (SELECT id, row_number() OVER (ORDER BY id) AS n "
        "FROM workflow_item) i, \"user\" u WHERE u.login = 'bench-user-00002' AND i.n % 3333 = 0"
    )
    await conn.execute("VACUUM ANALYZE workflow_item")
    await conn.execute("ANALYZE permission")


def sql(viewer: Actor, query: str, first: int, after: str | None) -> str:
    statement = searching.page_statement(
        viewer,
        sqlite=False,
        found=searching.words(query),
        cursor=searching.parse_cursor(after),
        limit=first,
        counted=True,
    )
    return str(statement.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))


async def explain(conn: asyncpg.Connection, statement: str) -> tuple[float, str]:
    plan = await conn.fetchval(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {statement}")
    found = plan if isinstance(plan, list) else __import__("json").loads(plan)
    top = found[0]
    buffers = top["Plan"].get("Shared Hit Blocks", 0), top["Plan"].get("Shared Read Blocks", 0)
    return top["Planning Time"] + top["Execution Time"], (
        f"planning {top['Planning Time']:.1f} ms, buffers hit {buffers[0]} read {buffers[1]}"
    )


async def main_async(url: str, login: str, runs: int, first: int, show: bool) -> None:
    # As the server connects (models/db.py): without JIT compilation.
    conn = await asyncpg.connect(url, server_settings={"jit": "off"})
    try:
        await seed_words(conn)
        user = await conn.fetchrow('SELECT id, login, is_admin FROM "user" WHERE login = $1', login)
        groups = await conn.fetch("SELECT group_id FROM group_member WHERE user_id = $1", user["id"])
        viewer = Actor(
            user_id=user["id"],
            login=user["login"],
            is_admin=user["is_admin"],
            party_ids=frozenset([user["id"], *(g["group_id"] for g in groups)]),
        )
        print(f"viewer {login}, first {first}, load average {os.getloadavg()}")
        for name, query in SHAPES:
            after = None
            for page in ("first page", "next page"):
                statement = sql(viewer, query, first, after)
                times, buffers = [], ""
                for _ in range(runs):
                    took, buffers = await explain(conn, statement)
                    times.append(took)
                answer = await conn.fetch(statement)
                rows = [row for row in answer if row["id"] is not None]
                took = statistics.median(times)
                print(
                    f"{name:32} {page:10} planning + execution median {took:6.1f} ms  {buffers}  "
                    f"rows {len(rows)} of {answer[0]['total']}"
                )
                if show:
                    for line in await conn.fetch(f"EXPLAIN (ANALYZE, BUFFERS) {statement}"):
                        print("   ", line[0])
                if len(rows) <= first:
                    break
                last = rows[first - 1]
                after = searching.cursor_of(types.SimpleNamespace(**dict(last)))
        print(f"load average {os.getloadavg()}")
    finally:
        await conn.close()


PAGE = """query($q: String!, $after: String) { search(query: $q, first: 20, after: $after) {
  totalCount pageInfo { endCursor } edges { node { id ... on WorkflowItem { displayName status } } } } }"""


async def in_process(url: str, login: str, requests: int) -> None:
    """Each shape's first and next page through the whole server in this process (HTTP parsing
    aside): the median wall time and this process's CPU per request, the database included in
    the first and not in the second."""
    db = Database(url)
    async with db.transaction() as s:
        user = await s.scalar(select(User).where(User.login == login))
        token = await identity.create_token(s, user_id=user.id, ttl_seconds=3600)
    app = create_app(Settings(database_url=url), db=db)
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench")
    headers = {"Authorization": f"Bearer {token}"}

    async def page(query: str, after: str | None) -> dict:  # type: ignore[type-arg]
        answer = await client.post(
            "/graphql", json={"query": PAGE, "variables": {"q": query, "after": after}}, headers=headers
        )
        body = answer.json()
        assert "errors" not in body, body
        return body["data"]["search"]

    print(f"in process, viewer {login}, load average {os.getloadavg()}")
    async with client:  # no lifespan: no sweeper or job runner beside the reads (as bench/pages.py)
        for name, query in SHAPES:
            first = await page(query, None)
            for which, after in (("first page", None), ("next page", first["pageInfo"]["endCursor"])):
                walls, cpu = [], time.process_time()
                for _ in range(requests):
                    started = time.perf_counter()
                    await page(query, after)
                    walls.append((time.perf_counter() - started) * 1000)
                cpu = (time.process_time() - cpu) * 1000 / requests
                print(f"{name:32} {which:10} wall median {statistics.median(walls):6.1f} ms  Python CPU {cpu:5.1f} ms")
                if not first["pageInfo"]["endCursor"]:
                    break
    await db.dispose()
    print(f"load average {os.getloadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--login", default="bench-dev")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--first", type=int, default=20)
    parser.add_argument("--show", action="store_true", help="print each plan")
    parser.add_argument("--in-process", type=int, metavar="N", help="instead: N requests a page through the server")
    parser.add_argument("--ranked", type=int, default=searching.MAX_RANKED, help="matches ranked per kind")
    args = parser.parse_args()
    searching.MAX_RANKED = args.ranked
    if args.in_process:
        asyncio.run(in_process(args.database_url, args.login, args.in_process))
        return
    url = args.database_url.replace("postgresql+asyncpg://", "postgresql://")
    asyncio.run(main_async(url, args.login, args.runs, args.first, args.show))


if __name__ == "__main__":
    main()
