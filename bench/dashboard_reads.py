"""Bench R6: every read document the dashboard sends, at 1M items, as the owner and as a user with
a million tasks.

    python -m bench.dashboard_reads --url postgresql://…/db [--rounds 5] [--requests 5] [--report PATH | --no-report]

The documents are read from web/src/api/documents.js itself: each exported constant whose text is
a query (its fragments and `${…}` parts put in), so a document added to the dashboard is timed
without anyone adding it here. Its variables: an ``$id`` is a node of the type its
``node(id: $id) { ... on Type }`` asks for (the first, when several), in the first project of
the data; ``$first`` the dashboard's first page (the board: 40); ``$query`` a search word every
item holds; ``$spec`` the bug workflow's spec; nullable variables are left out, as the dashboard
sends them on its first screen. A required variable of another name stops the run with a
sentence saying where to add it (``VALUES``).

Each document is read in-process through the whole app (one client, no network: bench/pages.py's
way), as ``bench`` (the owner of everything, no task) and ``bench-dev`` (every item's assignee: a
million tasks); warmed twice, then ``--rounds`` rounds of ``--requests`` reads; its time is the
median. Target (issue 52): every document within 50 ms for both users. `make bench SIZE=large`
runs it after R5 on the same data (bench/run.py); alone, on a database seeded with
``python -m bench.seed --size large --bulk``, then VACUUM ANALYZE.
"""

import argparse
import asyncio
import datetime
import json
import os
import re
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from graphql import InlineFragmentNode, OperationDefinitionNode, OperationType, parse
from graphql.language import FieldNode, NonNullTypeNode

from bench import sections
from bench.pages_seed import asyncpg_dsn
from bench.server import ROOT
from engine.people import identity
from models import Database
from server.app import create_app, tune_garbage_collector
from server.settings import Settings

BEGIN, END = "<!-- R6 -->", "<!-- /R6 -->"
DOCUMENTS = ROOT / "web" / "src" / "api" / "documents.js"
LIMIT_MS = 50.0
USERS = ("bench", "bench-dev")
FIRST = {"Board": 40}  # ``$first`` of a document whose dashboard page sends it (web/src/views/Board.jsx)
VALUES: dict[str, Any] = {"query": "item"}  # required variables by name, besides $id, $first and $spec

_CONSTANT = re.compile(r"^(?:export )?const (\w+) = (`(?:[^`\\]|\\.)*`|'[^']*');", re.M | re.S)
_PART = re.compile(r"\$\{(\w+)\}")


def documents(path: Path = DOCUMENTS) -> dict[str, str]:
    """Every read document of ``path`` by its constant's name: the query's text, its parts in."""
    raw = {name: text[1:-1] for name, text in _CONSTANT.findall(path.read_text())}

    def expand(text: str) -> str:
        return _PART.sub(lambda m: expand(raw[m.group(1)]), text)

    found = {}
    for name, text in raw.items():
        if not re.match(r"\s*(query|mutation|subscription|fragment)\b", text):
            continue  # a part of documents (``ERRORS``), not one
        document = parse(expand(text))
        operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
        if operations and operations[0].operation == OperationType.QUERY:
            found[name] = expand(text)
    return found


def _node_type(operation: OperationDefinitionNode) -> str | None:
    """The type of the first ``... on Type`` under the operation's ``node`` field, if any."""
    for selection in operation.selection_set.selections:
        if isinstance(selection, FieldNode) and selection.name.value == "node" and selection.selection_set:
            for inner in selection.selection_set.selections:
                if isinstance(inner, InlineFragmentNode) and inner.type_condition is not None:
                    return inner.type_condition.name.value
    return None


def variables(text: str, nodes: dict[str, str], spec: Any) -> dict[str, Any]:
    """The variables the dashboard's first screen sends with ``text`` (see the docstring)."""
    (operation,) = [d for d in parse(text).definitions if isinstance(d, OperationDefinitionNode)]
    name = operation.name.value if operation.name else "?"
    values: dict[str, Any] = {}
    for definition in operation.variable_definitions or ():
        variable = definition.variable.name.value
        if variable == "id":
            values["id"] = nodes[_node_type(operation) or "?"]
        elif variable == "first":
            values["first"] = FIRST.get(name, 20)
        elif variable == "spec":
            values["spec"] = spec
        elif variable == "userId":  # the user whose page it is (API tokens): the owner
            values["userId"] = nodes["User"]
        elif variable in VALUES:
            values[variable] = VALUES[variable]
        elif isinstance(definition.type, NonNullTypeNode):
            raise SystemExit(f"R6: {name} needs ${variable}: give it a value in bench/dashboard_reads.py's VALUES")
    return values


@dataclass
class Read:
    name: str
    text: str
    values: dict[str, Any]


async def reads_of(dsn: str) -> tuple[list[Read], dict[str, str]]:
    """Every read document with its variables over the seeded data; tokens of both users."""
    conn = await asyncpg.connect(asyncpg_dsn(dsn))
    try:
        project = await conn.fetchval("SELECT min(id) FROM project")
        nodes = {
            "Project": project,
            "Subproject": await conn.fetchval("SELECT min(id) FROM subproject WHERE project_id = $1", project),
            "WorkflowItem": await conn.fetchval(
                "SELECT min(workflow_item_id) FROM activity WHERE project_id = $1 AND action = 'comment'", project
            ),
            "Workflow": await conn.fetchval("SELECT id FROM workflow WHERE short_name = 'bug' ORDER BY version DESC"),
            # a user's own page (their API tokens): the owner's
            "User": await conn.fetchval('SELECT id FROM "user" WHERE login = $1', USERS[0]),
        }
        spec = await conn.fetchval("SELECT spec::text FROM workflow WHERE id = $1", nodes["Workflow"])
        users = {login: await conn.fetchval('SELECT id FROM "user" WHERE login = $1', login) for login in USERS}
    finally:
        await conn.close()
    spec = json.loads(spec)
    reads = [Read(name, text, variables(text, nodes, spec)) for name, text in documents().items()]
    db = Database(dsn)
    async with db.transaction() as s:
        tokens = {login: await identity.create_token(s, user_id=uid, ttl_seconds=3600) for login, uid in users.items()}
    await db.dispose()
    return reads, tokens


async def measure(dsn: str, *, rounds: int, requests: int) -> list[dict[str, Any]]:
    reads, tokens = await reads_of(dsn)
    db = Database(dsn)
    app = create_app(Settings(database_url=dsn), db=db)
    times: dict[tuple[str, str], list[float]] = {}
    failed: dict[tuple[str, str], str] = {}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench") as client:

        async def read(item: Read, login: str) -> float:
            started = time.perf_counter()
            response = await client.post(
                "/graphql",
                json={"query": item.text, "variables": item.values},
                headers={"Authorization": f"Bearer {tokens[login]}"},
            )
            elapsed = (time.perf_counter() - started) * 1000
            errors = response.json().get("errors") if response.status_code == 200 else [response.text[:200]]
            if errors:
                failed[(item.name, login)] = json.dumps(errors)[:200]
            return elapsed

        for item in reads:  # warm: specs, parsed documents, prepared statements, the buffer cache
            for login in USERS:
                for _ in range(2):
                    await read(item, login)
        for n in range(rounds):
            print(f"R6 round {n + 1}/{rounds}...", flush=True)
            for item in reads:
                for login in USERS:
                    times.setdefault((item.name, login), []).extend([await read(item, login) for _ in range(requests)])
    await db.dispose()
    return [
        {
            "document": item.name,
            "operation": (re.search(r"query (\w+)", item.text) or [None, "?"])[1],
            "variables": ", ".join(f"${k}" for k in item.values) or "-",
            "ms": {login: statistics.median(times[(item.name, login)]) for login in USERS},
            "errors": {login: failed.get((item.name, login)) for login in USERS},
        }
        for item in reads
    ]


def problems(row: dict[str, Any]) -> list[str]:
    found = []
    for login in USERS:
        if row["errors"][login]:
            found.append(f"{login}: error {row['errors'][login]}")
        if row["ms"][login] > LIMIT_MS:
            found.append(f"{login} over {LIMIT_MS:g} ms")
    return found


# What the reads issue 52 found unbounded read now (kept with the table: a run rewrites both).
WHAT_THEY_READ = """What the reads that were unbounded at 1M (issue 52) read now:
- ITEM's `Role.pickList`: the 500 newest other cases of the workflow (a backward range of
  `ix_workflow_case_workflow_id_id` per version), each case's players of the role by their key and
  its visibility probed; not every case of the workflow (past 10 s).
- TASKS (`myTasks(first: 100, orderBy: DUE_DATE) { totalCount }`): per party of the viewer (and
  of those they stand in for), a page of `ix_task_assignment_party_due` (party, due date, instance):
  the dated tasks they may see by due date, then, only when those end before the page does, the
  undated ones and the dated ones they may not see, by id; the handful is sorted. `totalCount`: the
  party's row of `task_count`, kept by the statement that settles the task index (counted only
  when two of the viewer's parties have tasks). Before: every task sorted (past 10 s), counted (1.4 s).
- PROJECTS: each project's subprojects are probed for the viewer's grant one by one (a fenced
  EXISTS) instead of merged with the viewer's whole range of subproject grants once per project
  (20,000 grants at 1M; that merge was two thirds of the page). The page itself still builds 100
  projects of 40 subprojects each (4,000 nodes): what is left is that JSON.
- NOTIFICATIONS' `unreadCount`: the newest 1,000 unread of the viewer, a range of
  `ix_notification_unread` (recipient, id where unread and in-app), each one's entry checked;
  before, a scan of the table until 1,000 unread turned up (50,000 rows at 1M)."""


def section(rows: list[dict[str, Any]], *, rounds: int, requests: int, reads: str = WHAT_THEY_READ) -> list[str]:
    lines = [
        BEGIN,
        f"## R6: the dashboard's read documents at 1M items (`bench/dashboard_reads.py`, "
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d}, at `{sections.commit()}`)",
        "",
        "Every query exported by web/src/api/documents.js (found by parsing it), with the variables the dashboard's "
        "first screen sends (nodes of the first project), read in-process through the whole app on the `large` data "
        "(1,000,000 items, vacuumed and analyzed, random_page_cost 1.1) as `bench` (the owner, no task) and "
        f"`bench-dev` (every item's assignee: 1,000,000 tasks). Median of {rounds} rounds of {requests} reads. "
        f"Target (issue 52): every document <= {LIMIT_MS:g} ms for both. The machine's load average at the end "
        f"of the run: {' / '.join(f'{n:.1f}' for n in os.getloadavg())} (1 / 5 / 15 min; {os.cpu_count()} cores): "
        "a shared machine's other work slows every row alike.",
        "",
        "| document | operation | variables | bench ms | bench-dev ms | verdict |",
        "| --- | --- | --- | ---: | ---: | --- |",
    ]
    for row in rows:
        lines.append(
            f"| {row['document']} | {row['operation']} | {row['variables']} | {row['ms']['bench']:.1f} | "
            f"{row['ms']['bench-dev']:.1f} | {sections.verdict(problems(row))} |"
        )
    if reads:
        lines += ["", reads]
    lines.append(END)
    return lines


def replace_section(report: Any, lines: list[str]) -> None:
    sections.replace(report, lines, begin=BEGIN, end=END, after="<!-- /R5 -->")


async def run(dsn: str, *, rounds: int = 5, requests: int = 5) -> list[str]:
    tune_garbage_collector()  # as the server's start-up does (the ASGI transport runs no lifespan)
    rows = await measure(dsn, rounds=rounds, requests=requests)
    return section(rows, rounds=rounds, requests=requests)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=5)
    sections.add_arguments(parser)
    args = parser.parse_args()
    lines = asyncio.run(run(args.url, rounds=args.rounds, requests=args.requests))
    sections.publish(lines, args, name="R6", write=replace_section)


if __name__ == "__main__":
    main()
