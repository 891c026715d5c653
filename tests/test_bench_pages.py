"""Bench R5 (bench/pages.py) runs: every list page it reads answers, on data seeded as the
benchmark seeds it (bench/bulk.py, bench/pages_seed.py), with the pages it means to read."""

import pytest
from sqlalchemy import select

from bench import pages, seed
from bench.pages_seed import seed_pages
from tests.fixtures.database import BACKEND


@pytest.mark.skipif(BACKEND != "postgres", reason="the benchmark's bulk seed uses PostgreSQL COPY")
async def test_r5_reads_every_list_page_on_a_tiny_seed(db):
    from engine.history.history import verify_history
    from models import Activity

    seeded = await seed.seed(db.url, 2, 2, 12, bulk=True)  # 48 items: 4 comments, notifications, jobs
    assert await seed_pages(db.url, owner=seeded["owner"], password=seed.PASSWORD) == {"users": 1, "comments": 4}
    rows = await pages.measure(db.url, db.url, rounds=1, requests=1)  # the same database as both sizes

    edges = {(r["page"], r["which"]): r["edges"][0] for r in rows}
    assert edges == {
        ("projects", "first"): 2,
        ("projects", "middle"): 0,  # after the second of two
        ("projects, search 'project 1'", "first"): 1,
        ("projects, tag 'pilot'", "first"): 1,
        ("subprojects", "first"): 2,
        ("subprojects", "middle"): 0,
        ("workflowItems", "first"): 12,
        ("workflowItems", "middle"): 5,
        ("workflowItems, ordered", "first"): 12,
        ("workflowItems, ordered", "middle"): 5,
        ("history", "first"): 20,
        ("history", "middle"): 20,
        ("history, kind", "first"): 20,
        ("history, kind", "middle"): 12,  # 24 opened and 2 comments: after the 13th
        ("history, actor bench", "first"): 20,
        ("history, actor bench", "middle"): 20,
        ("history, actor a commenter", "first"): 2,  # the one commenter's two comments
        ("history, actor a commenter", "middle"): 0,
        ("history, from/to", "first"): 20,
        ("history, from/to", "middle"): 20,
        ("Case.log", "first"): 2,
        ("Case.log", "middle"): 2,
        ("notifications", "first"): 4,
        ("notifications", "middle"): 1,
        ("notifications, unreadCount alone", "first"): 0,
        ("users", "first"): 3,
        ("search 'item'", "first"): 20,  # each of the 48 items
        ("search 'project 1'", "first"): 1,
        ("users", "middle"): 1,
        ("jobs", "first"): 4,
        ("jobs", "middle"): 1,
        ("myTasks, bench-dev (every item's task)", "first"): 20,
        ("myTasks, bench-dev (every item's task)", "middle"): 20,
        ("myTasks, bench (no task)", "first"): 0,
    }
    section = pages.section(rows, rounds=1, requests=1)
    assert section[0] == pages.BEGIN and section[-1] == pages.END
    assert sum(line.startswith("| myTasks") for line in section) == 3
    async with db.session() as s:  # the comments extend their items' hash chains
        commented = (await s.scalars(select(Activity.workflow_item_id).where(Activity.action == "comment"))).all()
        assert len(commented) == 4
        for item_id in commented:
            assert (await verify_history(s, resource_id=item_id, secret_key="")).intact
