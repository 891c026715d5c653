"""Bench R4i (bench/pages_inherited.py) runs: on a tiny seed of the benchmark's own kind, both
viewers read the wide subproject's page in one statement, the one whose view reaches down from
the project as many items as the one with a grant per item, and the report says the verdict."""

import pytest

from bench import pages_inherited, seed
from tests.fixtures.database import BACKEND


@pytest.mark.skipif(BACKEND != "postgres", reason="the benchmark's bulk seed uses PostgreSQL COPY")
async def test_r4i_reads_the_page_for_both_viewers_on_a_tiny_seed(db):
    await seed.seed(db.url, 1, 1, 30, bulk=True)
    rows = await pages_inherited.measure(db.url, rounds=1)
    assert [(r["viewer"], r["page"], r["total"]) for r in rows] == [
        ("a grant per item (R4)", "first", 30),
        ("a grant per item (R4)", "middle", 30),
        ("view reaching down from the project", "first", 30),
        ("view reaching down from the project", "middle", 30),
    ]
    assert all(r["postgres_ms"] > 0 for r in rows)
    lines = pages_inherited.report_lines(rows, 1)
    assert lines[0] == pages_inherited.BEGIN and lines[-1] == pages_inherited.END
    assert "| view reaching down from the project | middle | 30 |" in "\n".join(lines)


def test_r4i_says_whether_the_goal_is_met():
    row = {"viewer": "view reaching down from the project", "page": "first", "total": 1, "request_ms": 9.0}
    met = "\n".join(pages_inherited.report_lines([{**row, "postgres_ms": 4.9}], 3))
    missed = "\n".join(pages_inherited.report_lines([{**row, "postgres_ms": 5.1}], 3))
    assert "**met** (4.90 ms at most)" in met and "**missed** (5.10 ms at most)" in missed
