"""Bench M1 (bench/migration.py) must keep measuring what it says: every bulk-loaded case is
looked at by the dry run and moved by the real run (checked in the database, not taken from the
counts it reports), and its section of the report is written in place."""

from pathlib import Path

import pytest

from bench import migration
from tests.fixtures.database import BACKEND

COUNT = 40


@pytest.mark.skipif(BACKEND != "postgres", reason="M1 bulk-loads with PostgreSQL COPY")
async def test_m1_at_a_tiny_size_moves_every_case_and_reports_it(tmp_path: Path):
    dry, real, problems, _ = await migration.scenario(COUNT)
    assert (dry.cases, dry.moved) == (COUNT, 0) and (real.cases, real.moved) == (COUNT, COUNT)
    assert problems == []  # every case on version 2 in `checking`, logged, its task indexed
    report = tmp_path / "REPORT.md"
    report.write_text("# Report\n\n<!-- M1 -->\nold\n<!-- /M1 -->\n\n## Profile findings\n")
    lines = migration.section(dry, real, problems, 1.0)
    migration.sections.replace(report, lines, begin=migration.BEGIN, end=migration.END)
    text = report.read_text()
    assert "old" not in text and text.count("<!-- M1 -->") == 1 and "| real run | 40 |" in text
    assert text.index("<!-- /M1 -->") < text.index("## Profile findings")
