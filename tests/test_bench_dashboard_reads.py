"""Bench R6 (bench/dashboard_reads.py) times what the dashboard sends: every query of
web/src/api/documents.js, found by parsing it (a document added there is timed without anyone
adding it to the bench), answered without an error for both users on data seeded as the
benchmark seeds it."""

import pytest

from bench import dashboard_reads, seed
from bench.pages_seed import seed_pages
from tests.fixtures.database import BACKEND

EXTRA = """
export const EXTRA = `query Extra($id: ID!) { node(id: $id) { ... on Subproject { id ...Named } } }
${NAMED}`;
const NAMED = `fragment Named on Subproject { displayName }`;
export const SAVE = `mutation Save { logout { revokedTokens } }`;
export const ODD = `query Odd($word: String!) { viewer { id } }`;
"""


def test_r6_times_every_query_of_the_dashboard_and_only_queries(tmp_path):
    path = tmp_path / "documents.js"
    path.write_text(dashboard_reads.DOCUMENTS.read_text() + EXTRA)
    found = dashboard_reads.documents(path)
    assert {"PROJECTS", "BOARD", "ITEM", "TASKS", "NOTIFICATIONS", "EXTRA", "ODD"} <= set(found)
    assert "SAVE" not in found and "LOGIN" not in found and "LIVE_ACTIVITY" not in found  # no mutation nor subscription
    assert "fragment Named on Subproject" in found["EXTRA"]  # its parts put in
    nodes = {"Subproject": "sub_1", "WorkflowItem": "wfi_1"}
    assert dashboard_reads.variables(found["EXTRA"], nodes, spec={}) == {"id": "sub_1"}
    assert dashboard_reads.variables(found["BOARD"], nodes, spec={}) == {"id": "sub_1", "first": 40}
    with pytest.raises(SystemExit, match=r"Odd needs \$word"):  # no value for it: a sentence, not a guess
        dashboard_reads.variables(found["ODD"], nodes, spec={})


@pytest.mark.skipif(BACKEND != "postgres", reason="the benchmark's bulk seed uses PostgreSQL COPY")
async def test_r6_reads_every_document_without_an_error_for_both_users(db):
    seeded = await seed.seed(db.url, 2, 2, 12, bulk=True)
    await seed_pages(db.url, owner=seeded["owner"], password=seed.PASSWORD)
    rows = await dashboard_reads.measure(db.url, rounds=1, requests=1)
    assert {row["document"] for row in rows} == set(dashboard_reads.documents())
    for row in rows:
        assert row["errors"] == {"bench": None, "bench-dev": None}, row
    lines = dashboard_reads.section(rows, rounds=1, requests=1)
    assert lines[0] == dashboard_reads.BEGIN and lines[-1] == dashboard_reads.END
    assert sum(line.startswith("| ") for line in lines) == len(rows) + 2  # the head, its rule and a row each
