"""Hostile input never reaches an unexpected error (issue 19, findings 6 and 7).

Four parts, all through HTTP on the ASGI app:
1. a fixed regression list: the exact inputs of issue 19's findings 6 and 7, each refused with a
   400 (413 for an oversized body) or an INVALID_INPUT / INVALID_SPEC answer, changing nothing;
2. hypothesis-graphql over the exported schema, with real ids, names and JSON fed into the
   arguments so that resolvers run deep, as an admin, as a plain user and unauthenticated;
3. a hand-made generator of hostile HTTP bodies and variables against real operations;
4. a generator of hostile workflow specs: each is a workflow or INVALID_SPEC, and an accepted
   spec runs (an item can be created in a subproject that uses it, and its actions executed).

The property everywhere: no HTTP 5xx and no "Unexpected error." anywhere in an answer. Every
run is the same run (``derandomize``), bounded by ``max_examples``, and writes no example
database. A failure message names the server-side exception and the project frame it came from.

Set ``CASEWAY_FUZZ_COLLECT=1`` to go on after a failure and list every distinct one (by
exception and frame) when the test ends; the test still fails if there was any.
"""

import json
import os
import re
import string
import traceback
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import graphql
import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis_graphql import from_schema, nodes
from sqlalchemy import text
from sqlmodel import SQLModel

from engine.people import identity
from engine.spec import workflows
from models import Database
from server.app import create_app
from server.settings import Settings
from tests.fixtures.documents import CREATE_ITEM, CREATE_PROJECT, CREATE_SUBPROJECT, DEFINE, EXECUTE, LOGIN, REORDER

ROOT = Path(__file__).resolve().parents[2]
SDL = (ROOT / "schema" / "schema.graphql").read_text()
COLLECT = bool(os.environ.get("CASEWAY_FUZZ_COLLECT"))

# One seed per test (derandomize), no example database in the work tree, no deadline: a request
# on PostgreSQL on a busy 2-core machine varies too much for one. function_scoped_fixture is
# suppressed on purpose: the seeded tree and the HTTP client are built once per test and shared
# by its examples, which is what a fuzzer of one server wants (state accumulates like in use).
FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)

UNEXPECTED = "Unexpected error."

# Hypothesis warns when a drawn value's repr is large (a document holding a 50,000-character
# string is, on purpose); the suite turns warnings into errors.
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

# ---------------------------------------------------------------------------------------------
# Sending and judging
# ---------------------------------------------------------------------------------------------


class Raw:
    """JSON text placed as is: what json.dumps refuses or rewrites (NaN, 1e400, 4,301 digits)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Raw({self.text[:40]!r}{'…' if len(self.text) > 40 else ''} len={len(self.text)})"


def dump(value: Any) -> str:
    """JSON text of ``value``, with Raw pieces inserted verbatim; lone surrogates become \\udxxx."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k))}:{dump(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(dump(v) for v in value) + "]"
    return json.dumps(value)


def short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


@dataclass
class Answer:
    status: int
    text: str
    body: Any  # the decoded JSON, or None
    sent: str
    crashes: list[str]  # server-side exceptions, each as "Type: message @ file:function:line"

    def payload(self, name: str) -> Any:
        data = (self.body or {}).get("data") if isinstance(self.body, dict) else None
        return (data or {}).get(name)

    def errors(self) -> list[dict[str, Any]]:
        return (self.body or {}).get("errors") or [] if isinstance(self.body, dict) else []

    def describe(self) -> str:
        where = "; ".join(self.crashes) or "no server exception seen"
        return f"HTTP {self.status} [{where}]\n  sent: {short(self.sent)}\n  answer: {short(self.text)}"


def project_frame(exc: BaseException) -> str:
    """Where ``exc`` came from: the innermost frame of this project (not .venv, not tests), and
    the innermost frame of all when that one is in a library."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if f.filename.startswith(str(ROOT)) and "/.venv/" not in f.filename]
    ours = [f for f in ours if "/tests/" not in f.filename]
    place = f"{Path(ours[-1].filename).relative_to(ROOT)}:{ours[-1].name}:{ours[-1].lineno}" if ours else "?"
    if frames and (not ours or frames[-1] is not ours[-1]):
        lib = frames[-1]
        place += f" (raised in {'/'.join(Path(lib.filename).parts[-2:])}:{lib.name}:{lib.lineno})"
    return f"{type(exc).__name__}: {short(str(exc), 120)} @ {place}"


class Crashes:
    """Collects exceptions raised inside the server during one request: ASGI-level ones (the
    500s) from a wrapper around the app, resolver-level ones ("Unexpected error.") from the
    masking extension's log records."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def wrap(self, app: Any) -> Any:
        async def wrapped(scope: Any, receive: Any, send: Any) -> None:
            try:
                await app(scope, receive, send)
            except Exception as exc:
                self.seen.append(project_frame(exc))
                raise

        return wrapped


class _CrashLog:
    """A logging handler that turns records carrying an exception into Crashes entries."""

    def __init__(self, crashes: Crashes) -> None:
        import logging

        class Handler(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                exc = record.exc_info[1] if record.exc_info else None
                if exc is None and isinstance(record.msg, BaseException):
                    exc = getattr(record.msg, "original_error", None) or record.msg
                if exc is not None:
                    original = getattr(exc, "original_error", None) or exc
                    crashes.seen.append(project_frame(original))

        self.handler = Handler(level=logging.ERROR)
        self.logging = logging

    def __enter__(self) -> None:
        self.logging.getLogger().addHandler(self.handler)

    def __exit__(self, *_: object) -> None:
        self.logging.getLogger().removeHandler(self.handler)


@dataclass
class Client:
    http: httpx.AsyncClient
    crashes: Crashes

    async def post(
        self, body: str | bytes, *, token: str | None = None, content_type: str = "application/json"
    ) -> Answer:
        headers = {"content-type": content_type}
        if token:
            headers["authorization"] = f"Bearer {token}"
        self.crashes.seen = []
        with _CrashLog(self.crashes):
            response = await self.http.post("/graphql", content=body, headers=headers)
        try:
            decoded = response.json()
        except ValueError:
            decoded = None
        sent = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        return Answer(response.status_code, response.text, decoded, sent, list(self.crashes.seen))

    async def gql(self, query: str, variables: Any = None, *, token: str | None = None) -> Answer:
        body = "{" + f'"query":{json.dumps(query)}' + (f',"variables":{dump(variables)}' if variables else "") + "}"
        return await self.post(body, token=token)

    async def data(self, query: str, variables: Any = None, *, token: str | None = None) -> dict[str, Any]:
        """For set-up and checks: the answer's data, failing on any error."""
        answer = await self.gql(query, variables, token=token)
        assert answer.status == 200 and not answer.errors(), answer.describe()
        return answer.body["data"]


@dataclass
class Findings:
    """Fails at the first broken answer, or (CASEWAY_FUZZ_COLLECT) lists every distinct one."""

    distinct: dict[str, str] = field(default_factory=dict)

    def check(self, answer: Answer, what: str = "") -> None:
        problem = None
        if answer.status >= 500:
            problem = f"HTTP {answer.status}"
        elif UNEXPECTED in answer.text:
            problem = UNEXPECTED
        if problem is None:
            return
        message = f"{problem} {what}: {answer.describe()}"
        if not COLLECT:
            raise AssertionError(message)
        places = sorted({re.sub(r": .*? @ ", " @ ", c, flags=re.S) for c in answer.crashes})
        key = f"{problem} | {'; '.join(places) or short(answer.text, 120)}"
        self.distinct.setdefault(key, message)

    def require(self, ok: bool, message: str) -> None:
        if ok:
            return
        if not COLLECT:
            raise AssertionError(message)
        self.distinct.setdefault(message.split("\n")[0][:200], message)


# ---------------------------------------------------------------------------------------------
# Fixtures: one app (500s as answers, not raised), a small seeded tree with real ids
# ---------------------------------------------------------------------------------------------


@asynccontextmanager
async def open_client(db: Database) -> AsyncIterator[Client]:
    # Failed logins must not slow the fuzzer down (TOO_MANY_ATTEMPTS is a fine answer; waiting
    # 2 s per wrong password is not what this file measures).
    app_settings = Settings(database_url=db.url, login_max_delay=0.0, login_free_failures=10**6)
    crashes = Crashes()
    app = crashes.wrap(create_app(app_settings, db=db))
    # raise_app_exceptions=False: a crash is an HTTP 500 answer to judge, as a client sees it.
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://caseway.test", timeout=60) as http:
        yield Client(http, crashes)


@pytest.fixture
async def client(db: Database) -> AsyncIterator[Client]:
    async with open_client(db) as made:
        yield made


async def make_user_in(db: Database, login: str, *, admin: bool = False) -> tuple[str, str]:
    """tests/fixtures/api.py's make_user, callable outside a function-scoped test."""
    async with db.transaction() as s:
        user = await identity.create_user(s, actor=None, login=login, password="password123", admin=admin)
        token = await identity.create_token(s, user_id=user.id, ttl_seconds=3600)
    return user.id, token


@pytest.fixture
def findings() -> Findings:
    found = Findings()
    yield found
    if found.distinct:
        pytest.fail(f"{len(found.distinct)} distinct failures:\n\n" + "\n\n".join(found.distinct.values()))


@dataclass
class Tree:
    admin: str  # tokens
    bob: str
    admin_id: str
    bob_id: str
    group_id: str
    project: str
    subproject: str
    items: list[str]
    cases: list[str]
    enabled_actions: list[str]
    activities: list[str]
    notifications: list[str]
    workflows: list[str]
    cursors: list[str]

    @property
    def ids(self) -> list[str]:
        return [
            self.admin_id,
            self.bob_id,
            self.group_id,
            self.project,
            self.subproject,
            *self.items,
            *self.cases,
            *self.enabled_actions,
            *self.activities,
            *self.notifications,
            *self.workflows,
        ]


SEED_READ = """query($i: ID!) { node(id: $i) { ... on WorkflowItem { case { id enabledActions { id } }
  history { edges { cursor node { id } } } } } workflows { edges { node { id } } } }"""


@pytest.fixture
async def tree(client: Client, db: Database) -> Tree:
    return await seed_tree(client, db)


@pytest.fixture(scope="module")
async def shared(database: Database) -> AsyncIterator[tuple[Client, Tree]]:
    """One seeded tree for the whole regression list: each of its tests checks that it changed
    nothing, so they can share it, and the list runs in a second instead of a second per input.
    The tables are emptied first, as the `db` fixture does (the tests after this module's
    regression list use `db`, which empties them again)."""
    async with database.engine.begin() as conn:
        for table in reversed(SQLModel.metadata.sorted_tables):
            await conn.execute(text(f'DELETE FROM "{table.name}"'))
    async with database.transaction() as session:
        await workflows.sync_spec_files(session, workflows.BUILTIN_DIR)
    async with open_client(database) as made:
        yield made, await seed_tree(made, database)


async def seed_tree(client: Client, db: Database) -> Tree:
    """A project (bob assigned) with a subproject on `simple`, two items assigned to bob (one
    commented, with data) and a group with bob: every kind of id the schema takes, for real."""
    admin_id, admin = await make_user_in(db, "root", admin=True)
    bob_id, bob = await make_user_in(db, "bob")
    group = await client.data(
        'mutation { createGroup(input: {name: "crew"}) { group { id } userErrors { code } } }', token=admin
    )
    group_id = group["createGroup"]["group"]["id"]
    await client.data(
        "mutation($g: ID!, $u: ID!) { addGroupMember(input: {groupId: $g, userId: $u}) { userErrors { code } } }",
        {"g": group_id, "u": bob_id},
        token=admin,
    )
    project = await client.data(
        CREATE_PROJECT,
        {"input": {"displayName": "Roads", "assigneeId": bob_id, "tags": ["east"], "additionalData": {"k": 1}}},
        token=admin,
    )
    project_id = project["createProject"]["project"]["id"]
    sub = await client.data(
        CREATE_SUBPROJECT,
        {"input": {"projectId": project_id, "displayName": "Bridges", "currency": "EUR", "assigneeId": bob_id}},
        token=admin,
    )
    sub_id = sub["createSubproject"]["subproject"]["id"]
    items, cases = [], []
    for name in ("Pillar", "Deck"):
        made = await client.data(
            CREATE_ITEM, {"input": {"subprojectId": sub_id, "displayName": name, "assigneeId": bob_id}}, token=admin
        )
        items.append(made["createWorkflowItem"]["workflowItem"]["id"])
        cases.append(made["createWorkflowItem"]["workflowItem"]["case"]["id"])
    await client.data(
        EXECUTE,
        {"input": {"workflowItemId": items[0], "action": "comment", "comment": "hi", "data": {"n": 1}}},
        token=bob,
    )
    read = await client.data(SEED_READ, {"i": items[0]}, token=admin)
    node = read["node"]
    notes = await client.data("{ notifications { edges { cursor node { id } } } }", token=bob)
    return Tree(
        admin=admin,
        bob=bob,
        admin_id=admin_id,
        bob_id=bob_id,
        group_id=group_id,
        project=project_id,
        subproject=sub_id,
        items=items,
        cases=cases,
        enabled_actions=[e["id"] for e in node["case"]["enabledActions"]],
        activities=[e["node"]["id"] for e in node["history"]["edges"]],
        notifications=[e["node"]["id"] for e in notes["notifications"]["edges"]],
        workflows=[e["node"]["id"] for e in read["workflows"]["edges"]],
        cursors=[e["cursor"] for e in node["history"]["edges"]]
        + [e["cursor"] for e in notes["notifications"]["edges"]],
    )


FINGERPRINT = """query($s: ID!, $i: ID!) {
  projects(first: 100) { totalCount } workflows(first: 100) { totalCount } users(first: 100) { totalCount }
  s: node(id: $s) { ... on Subproject { workflowItemOrdering workflowItems { totalCount } } }
  i: node(id: $i) { ... on WorkflowItem { case { version } history { totalCount } } } }"""


async def fingerprint(client: Client, tree: Tree) -> dict[str, Any]:
    """What a refused request must leave as it was: counts, the ordering, a case's version, and
    bob's unread notifications."""
    seen = await client.data(FINGERPRINT, {"s": tree.subproject, "i": tree.items[0]}, token=tree.admin)
    unread = await client.data("{ notifications { unreadCount } }", token=tree.bob)
    return {**seen, "unread": unread["notifications"]["unreadCount"]}


# ---------------------------------------------------------------------------------------------
# 1. Regression list: issue 19's findings 6 and 7, exactly
# ---------------------------------------------------------------------------------------------

PROJECTS_FILTERED = """query($after: String, $filter: ProjectFilter) {
  projects(after: $after, filter: $filter) { totalCount edges { node { id } } } }"""
HISTORY_AFTER = """query($id: ID!, $after: String) { node(id: $id) { ... on Project {
  history(after: $after) { totalCount edges { cursor } } } } }"""
CASE_LOG_AFTER = """query($id: ID!, $after: String) { node(id: $id) { ... on Case {
  log(after: $after) { totalCount edges { cursor } } } } }"""
MARK_READ_INPUT = """mutation($input: MarkNotificationsReadInput!) {
  markNotificationsRead(input: $input) { unreadCount userErrors { code message field } } }"""


def nested(depth: int) -> Raw:
    return Raw('{"a":' * depth + "1" + "}" * depth)


def made_up_ids(prefix: str, n: int) -> list[str]:
    """Distinct ids of the right shape that name nothing."""
    return [f"{prefix}_{i:026d}" for i in range(n)]


def ok_spec(**action_extra: Any) -> dict[str, Any]:
    """A small valid spec; keyword arguments add keys to its `work` action."""
    return {
        "short_name": "fz_regress",
        "roles": {"doer": {"pretty_name": "Doer", "callbacks": ["item_assignee"]}},
        "states": {"todo": {}, "done": {"terminal": True}},
        "actions": {
            "start": {"trigger": "init", "new_state": "todo"},
            "work": {"assigned_role": "doer", "assigned_states": ["todo"], "new_state": "done", **action_extra},
        },
    }


def spec_with_static_parties(parties: list[str]) -> dict[str, Any]:
    spec = ok_spec()
    spec["roles"]["doer"].update(callbacks=["static"], static_parties=parties)
    return spec


# (id, build(tree) -> (query, variables, token), payload field, accepted userError codes)
Case_ = tuple[str, Callable[[Tree], tuple[str, Any, str | None]], str, set[str]]
INPUT = {"INVALID_INPUT"}
SPEC = {"INVALID_SPEC", "INVALID_INPUT"}


def _execute(tree: Tree, **extra: Any) -> tuple[str, Any, str | None]:
    return EXECUTE, {"input": {"workflowItemId": tree.items[1], "action": "comment", **extra}}, tree.bob


def _project(**extra: Any) -> Callable[[Tree], tuple[str, Any, str | None]]:
    return lambda t: (CREATE_PROJECT, {"input": {"displayName": "P", **extra}}, t.admin)


def _define(spec: dict[str, Any]) -> Callable[[Tree], tuple[str, Any, str | None]]:
    return lambda t: (DEFINE, {"spec": spec}, t.admin)


REGRESSIONS: list[Case_] = [
    ("nested-variables-1000", _project(additionalData=nested(1000)), "createProject", INPUT),
    ("int-4301-digits-json", _project(additionalData={"n": Raw("9" * 4301)}), "createProject", INPUT),
    ("int-4301-digits-Int", lambda t: _execute(t, expectedVersion=Raw("9" * 4301)), "executeAction", INPUT),
    ("nul-login", lambda t: (LOGIN, {"login": "bob\x00", "password": "password123"}, None), "login", INPUT),
    ("nul-display-name", _project(displayName="P\x00Q"), "createProject", INPUT),
    ("lone-surrogate", _project(displayName=Raw('"P\\ud800"')), "createProject", INPUT),
    ("nan-data", lambda t: _execute(t, data={"x": Raw("NaN")}), "executeAction", INPUT),
    ("infinity-data", lambda t: _execute(t, data={"x": Raw("Infinity")}), "executeAction", INPUT),
    ("1e400-data", lambda t: _execute(t, data={"x": Raw("1e400")}), "executeAction", INPUT),
    ("idempotency-key-1mb", lambda t: _execute(t, idempotencyKey="k" * 1_048_576), "executeAction", INPUT),
    (
        "reorder-100000-ids",
        lambda t: (REORDER, {"s": t.subproject, "ordering": [*t.items, *made_up_ids("wit", 100_000)]}, t.admin),
        "reorderWorkflowItems",
        INPUT,
    ),
    (
        "mark-read-100000-ids",
        lambda t: (MARK_READ_INPUT, {"input": {"ids": [*t.notifications, *made_up_ids("ntf", 100_000)]}}, t.bob),
        "markNotificationsRead",
        INPUT,
    ),
    ("cursor-above-2^63", lambda t: (HISTORY_AFTER, {"id": t.project, "after": str(2**63)}, t.admin), "node", INPUT),
    (
        "case-log-cursor-above-2^63",
        lambda t: (CASE_LOG_AFTER, {"id": t.cases[0], "after": str(2**63)}, t.admin),
        "node",
        INPUT,
    ),
    ("search-50000", lambda t: (PROJECTS_FILTERED, {"filter": {"search": "x" * 50_000}}, t.admin), "projects", INPUT),
    ("spec-assigned-role-list", _define(ok_spec(assigned_role=["doer"])), "defineWorkflow", SPEC),
    ("spec-depends-on-int", _define(ok_spec(depends_on={"start": 5})), "defineWorkflow", SPEC),
    ("spec-timeout-10^12", _define(ok_spec(timeout_seconds=10**12)), "defineWorkflow", SPEC),
    ("spec-static-parties-unknown", _define(spec_with_static_parties(["usr_nope"])), "defineWorkflow", SPEC),
]


def assert_refused(answer: Answer, name: str, codes: set[str]) -> None:
    """A 400/413 with a GraphQL error, or a 200 whose answer refuses the operation: its payload
    null with a top-level error that is not the masked one, or userErrors with the given codes
    and no object made."""
    assert answer.status < 500 and UNEXPECTED not in answer.text, answer.describe()
    if answer.status in (400, 413):
        assert answer.errors() and all(e.get("message") for e in answer.errors()), answer.describe()
        return
    assert answer.status == 200, answer.describe()
    payload = answer.payload(name)
    if answer.errors():
        # A query may answer its field empty with the error beside it (a bad cursor); a
        # mutation refused before running has no payload.
        assert all(e.get("message") for e in answer.errors()), answer.describe()
        return
    assert isinstance(payload, dict), f"{name} was not refused: {answer.describe()}"
    codes_seen = {e["code"] for e in payload.get("userErrors") or []}
    assert codes_seen and codes_seen <= codes, f"{name} not refused with {codes}: {answer.describe()}"
    made = {k: v for k, v in payload.items() if k not in ("userErrors", "unreadCount")}
    assert not any(made.values()), f"{name} refused but made {made}: {answer.describe()}"


@pytest.mark.parametrize("body", ["null", '"str"', "123", "true", "[]", "{", "\x00", '{"query": 5}'])
async def test_a_body_that_is_not_a_graphql_request_object_is_a_400(shared: tuple[Client, Tree], body: str) -> None:
    client, tree = shared
    before = await fingerprint(client, tree)
    answer = await client.post(body, token=tree.admin)
    assert answer.status == 400, answer.describe()
    assert answer.errors() and answer.errors()[0].get("message"), answer.describe()
    assert await fingerprint(client, tree) == before


@pytest.mark.parametrize(("name", "build", "field", "codes"), REGRESSIONS, ids=[r[0] for r in REGRESSIONS])
async def test_issue_19_bad_inputs_are_refused_and_change_nothing(
    shared: tuple[Client, Tree], name: str, build: Callable[[Tree], Any], field: str, codes: set[str]
) -> None:
    client, tree = shared
    before = await fingerprint(client, tree)
    query, variables, token = build(tree)
    answer = await client.gql(query, variables, token=token)
    assert_refused(answer, field, codes)
    assert await fingerprint(client, tree) == before


async def test_a_refused_spec_value_is_refused_on_its_own_field(shared: tuple[Client, Tree]) -> None:
    client, tree = shared
    """The spec errors name the key at fault, so a client can fix its spec."""
    answer = await client.gql(DEFINE, {"spec": ok_spec(timeout_seconds=10**12)}, token=tree.admin)
    errors = (answer.payload("defineWorkflow") or {}).get("userErrors") or []
    assert ["spec", "actions", "work", "timeout_seconds"] in [e["field"] for e in errors], answer.describe()


# ---------------------------------------------------------------------------------------------
# Value strategies shared by the generators
# ---------------------------------------------------------------------------------------------

HUGE_INT = "9" * 4301
NAMES = [
    # workflows, actions, roles, states, intents, currencies, amount types: real names make
    # resolvers go past their first lookup
    "simple",
    "bug",
    "approval",
    "comment",
    "close",
    "create",
    "resolve",
    "assignee",
    "validator",
    "submitter",
    "open",
    "closed",
    "project.view",
    "project.viewHistory",
    "subproject.createWorkflowItem",
    "workflowItem.view",
    "global.createProject",
    "EUR",
    "N/A",
    "ALLOCATED",
    "12.50",
    "2024-02-29",
    "2024-01-01T00:00:00+00:00",
    "crew",
    "bob",
    "password123",
]
short_hostile_text = st.one_of(
    st.sampled_from(
        ["", " ", "\x00", "a\x00b", "\ud800", "x\udfffy", "\ufeff", "'; DROP TABLE project; --", "%", "_", "\\"]
    ),
    st.just("x" * 50_000),
    st.text(st.characters(codec=None, exclude_categories=()), max_size=20),
    st.text(max_size=30),
)
hostile_text = st.one_of(
    st.sampled_from(
        ["", " ", "\x00", "a\x00b", "\ud800", "x\udfffy", "\ufeff", "'; DROP TABLE project; --", "%", "_", "\\"]
    ),
    st.sampled_from([1_000, 10_000, 100_000]).map(lambda n: "x" * n),
    st.text(st.characters(codec=None, exclude_categories=()), max_size=20),
    st.text(max_size=30),
)
bogus_cursors = st.sampled_from(
    [
        str(2**63),
        str(2**63 - 1),
        str(2**64),
        "-1",
        str(-(2**63) - 1),
        "99999999999999999999999999999",
        HUGE_INT[:4000],
        "YXJyYXljb25uZWN0aW9uOjEw",
        "!!!",
        "",
        " 1",
        "1_000",
        "0x10",
        "\u0661\u0662",
        "1e5",
        "nan",
        "\x00",
    ]
)
raw_numbers = st.sampled_from(
    [Raw("NaN"), Raw("Infinity"), Raw("-Infinity"), Raw("1e400"), Raw("-1e400"), Raw(HUGE_INT), Raw("-" + HUGE_INT)]
)
edge_ints = st.sampled_from([2**31, -(2**31) - 1, 2**53 + 1, 2**63, -(2**63) - 1, 2**64, 10**30, -1, 0])
deep = st.sampled_from([100, 1_000, 10_000]).flatmap(
    lambda n: st.sampled_from([Raw("[" * n + "]" * n), nested(n), Raw('{"a":[' * n + "1" + "]}" * n)])
)
plain_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


def hostile_values(ids: list[str]) -> st.SearchStrategy[Any]:
    """Any value a careless or hostile client might put where the server expects another."""
    bogus_ids = ["", "prj_nope", "usr_nope", "global", "x" * 5_000, "prj_\x00", "act_" + "9" * 30, "wit_\ud800"]
    id_values = st.sampled_from(ids + bogus_ids)
    return st.one_of(
        hostile_text,
        bogus_cursors,
        raw_numbers,
        edge_ints,
        deep,
        plain_json,
        st.sampled_from([None, True, False, 0, 1.5, [], {}, ["x"], {"a": 1}, [[]], [None]]),
        st.sampled_from([1_000, 20_000, 100_000]).flatmap(lambda n: id_values.map(lambda i: [i] * n)),
        st.lists(id_values, max_size=5),
        id_values,
        st.sampled_from(NAMES),
    )


# ---------------------------------------------------------------------------------------------
# 2. hypothesis-graphql over the exported schema
# ---------------------------------------------------------------------------------------------


def json_nodes() -> st.SearchStrategy[graphql.ValueNode]:
    leaves = st.one_of(
        st.integers().map(nodes.Int),
        st.sampled_from(["1e400", "-1e400", "1" + "0" * 400, "1.5"]).map(lambda v: graphql.FloatValueNode(value=v)),
        st.sampled_from([HUGE_INT]).map(lambda v: graphql.IntValueNode(value=v)),
        st.booleans().map(nodes.Boolean),
        st.just(graphql.NullValueNode()),
        short_hostile_text.map(nodes.String),
    )
    return st.recursive(
        leaves,
        lambda inner: (
            st.lists(inner, max_size=3).map(nodes.List)
            | st.lists(
                st.tuples(st.text(string.ascii_letters, min_size=1, max_size=6), inner),
                max_size=3,
                unique_by=lambda p: p[0],
            ).map(
                lambda pairs: nodes.Object(
                    [graphql.ObjectFieldNode(name=graphql.NameNode(value=k), value=v) for k, v in pairs]
                )
            )
        ),
        max_leaves=8,
    )


def schema_operations(tree: Tree) -> st.SearchStrategy[str]:
    """Queries and mutations from the SDL with real ids, names, dates and JSON in the arguments."""
    ids = st.sampled_from([*tree.ids, "global", "prj_nope", "", str(2**63)])
    text = st.one_of(st.sampled_from(NAMES), short_hostile_text, bogus_cursors, st.sampled_from(tree.cursors))
    scalars = {
        "ID": ids.map(nodes.String),
        "String": text.map(nodes.String),
        "JSON": json_nodes(),
        "Date": st.one_of(st.dates().map(nodes.String), text.map(nodes.String)),
        "DateTime": st.one_of(st.datetimes().map(lambda d: nodes.String(d.isoformat())), text.map(nodes.String)),
        "Int": st.one_of(st.integers(-5, 120), edge_ints).map(nodes.Int),
        # A file can only come as a multipart part; in a document it is text (refused as input).
        "Upload": text.map(nodes.String),
    }
    return from_schema(SDL, custom_scalars=scalars)


@pytest.mark.slow
@settings(FUZZ, max_examples=100)
@given(data=st.data())
async def test_schema_operations_never_fail_unexpectedly(
    client: Client, tree: Tree, findings: Findings, data: st.DataObject
) -> None:
    document = data.draw(schema_operations(tree), label="document")
    token = data.draw(st.sampled_from([tree.admin, tree.admin, tree.bob, None]), label="token")
    answer = await client.gql(document, token=token)
    event("answer with errors" if answer.errors() else "answer without errors")
    findings.check(answer, f"(token={'admin' if token == tree.admin else 'bob' if token else 'none'})")


# ---------------------------------------------------------------------------------------------
# 3. Hostile bodies and variables against real operations
# ---------------------------------------------------------------------------------------------

ASSIGN_ROLE = """mutation($input: ReassignRoleInput!) { reassignRole(input: $input) { case { version }
  userErrors { code message field } } }"""
UPDATE_ITEM_INPUT = """mutation($input: UpdateWorkflowItemInput!) { updateWorkflowItem(input: $input) {
  workflowItem { id dueDate amount tags additionalData } userErrors { code message field } } }"""
NOTIFICATIONS_AFTER = """query($first: Int, $after: String) { notifications(first: $first, after: $after) {
  totalCount edges { cursor } } }"""


def operations(tree: Tree) -> list[tuple[str, dict[str, Any], str | None]]:
    """Real operations with valid variables, as their users would send them."""
    item, sub = tree.items[1], tree.subproject
    return [
        (LOGIN, {"login": "bob", "password": "wrong-password"}, None),
        (CREATE_PROJECT, {"input": {"displayName": "Fz", "tags": ["a"], "additionalData": {"k": [1]}}}, tree.admin),
        (EXECUTE, {"input": {"workflowItemId": item, "action": "comment", "comment": "c", "data": {"a": 1}}}, tree.bob),
        (
            EXECUTE,
            {"input": {"caseId": tree.cases[1], "action": "close", "idempotencyKey": "k1", "dryRun": True}},
            tree.bob,
        ),
        (REORDER, {"s": sub, "ordering": list(reversed(tree.items))}, tree.admin),
        (MARK_READ_INPUT, {"input": {"ids": tree.notifications, "all": False}}, tree.bob),
        (
            PROJECTS_FILTERED,
            {"after": tree.project, "filter": {"search": "Ro", "tag": "east", "status": "OPEN"}},
            tree.bob,
        ),
        (HISTORY_AFTER, {"id": tree.project, "after": tree.cursors[0]}, tree.admin),
        (CASE_LOG_AFTER, {"id": tree.cases[0], "after": tree.cursors[0]}, tree.bob),
        (NOTIFICATIONS_AFTER, {"first": 5, "after": tree.cursors[-1]}, tree.bob),
        (DEFINE, {"spec": ok_spec()}, tree.admin),
        (ASSIGN_ROLE, {"input": {"workflowItemId": item, "role": "assignee", "partyIds": [tree.group_id]}}, tree.admin),
        (
            UPDATE_ITEM_INPUT,
            {"input": {"id": item, "dueDate": "2030-01-01", "amount": "1.5", "tags": ["t"]}},
            tree.admin,
        ),
    ]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a variables tree where a value could be swapped (or a key added)."""
    found = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            found += paths(v, (*prefix, k))
        found.append((*prefix, "unknownKey"))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += paths(v, (*prefix, i))
    return found


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: replaced(value.get(head), rest, new)}
    if isinstance(value, list):
        return [replaced(v, rest, new) if i == head else v for i, v in enumerate(value)]
    return value


WHOLE_BODIES = st.one_of(
    st.sampled_from(
        [
            "null",
            '"str"',
            "123",
            "true",
            "[]",
            "[{}]",
            "{}",
            '{"query": null}',
            '{"query": 5}',
            '{"query": ["{ __typename }"]}',
            '{"query": "{ __typename }", "variables": "x"}',
            '{"query": "{ __typename }", "variables": [1]}',
            '{"query": "{ __typename }", "operationName": 5}',
            '{"query": "{ __typename }", "extensions": 5}',
            '{"query": "{ __typename }", "extensions": {"persistedQuery": 1}}',
            '{"query": "{ __typename }"',
            '{"query": "{ __typename }", "query": "{ viewer { login } }"}',
            "\ufeff{}",
            "NaN",
            "1e400",
            HUGE_INT,
            '"\\ud800"',
            '{"query": "\\u0000"}',
            '{"query": "{ __typename }", "variables": {"a": ' + "[" * 5000 + "]" * 5000 + "}}",
            "[" * 100_000,
        ]
    ),
    st.text(max_size=50),
    st.binary(max_size=50),
)


@st.composite
def hostile_requests(draw: st.DrawFn, tree: Tree) -> tuple[str | bytes, str | None, str]:
    """A whole body, or a real operation whose variables were damaged in one or two places."""
    content_type = draw(
        st.sampled_from(["application/json"] * 6 + ["text/plain", "application/graphql", "multipart/form-data"])
    )
    if draw(st.integers(0, 4)) == 0:
        return draw(WHOLE_BODIES), draw(st.sampled_from([tree.admin, None])), content_type
    query, variables, token = draw(st.sampled_from(operations(tree)))
    values = hostile_values(tree.ids)
    for _ in range(draw(st.integers(1, 2))):
        path = draw(st.sampled_from(paths(variables)))
        variables = replaced(variables, path, draw(values))
    body = "{" + f'"query":{json.dumps(query)},"variables":{dump(variables)}' + "}"
    return body, token, content_type


@pytest.mark.slow
@settings(FUZZ, max_examples=150)
@given(data=st.data())
async def test_hostile_bodies_and_variables_never_fail_unexpectedly(
    client: Client, tree: Tree, findings: Findings, data: st.DataObject
) -> None:
    body, token, content_type = data.draw(hostile_requests(tree), label="request")
    answer = await client.post(body, token=token, content_type=content_type)
    findings.check(answer)


# ---------------------------------------------------------------------------------------------
# 4. Hostile workflow specs
# ---------------------------------------------------------------------------------------------


def rich_spec(tree: Tree) -> dict[str, Any]:
    """Every key of the spec format (docs/workflows.md), with valid values, to be damaged one key at a time."""
    return {
        "short_name": "fz_spec",
        "pretty_name": "Fuzzed",
        "description": "Every key once",
        "roles": {
            "lead": {"pretty_name": "Lead", "callbacks": ["item_assignee", "creation_user"], "assignable_by": ["lead"]},
            "crew": {
                "pretty_name": "Crew",
                "callbacks": ["static"],
                "allowed_parties": [tree.bob_id, tree.group_id],
                "static_parties": [tree.bob_id],
            },
        },
        "states": {
            "draft": {"pretty_name": "Draft", "hidden_fields": ["amount"]},
            "vote": {"pretty_name": "Vote"},
            "done": {"pretty_name": "Done", "terminal": True},
        },
        "actions": {
            "make": {"pretty_name": "Make", "pretty_past_tense": "Made", "trigger": "init", "new_state": "draft"},
            "help": {"assigned_role": "crew", "assigned_states": ["draft"], "timeout_seconds": 60},
            "note": {"allowed_roles": ["lead", "crew"], "always_enabled": True, "side_effects": ["capture_resolution"]},
            "submit": {
                "assigned_role": "lead",
                "assigned_states": ["draft"],
                "enabled_states": ["vote"],
                "privileges": ["workflowItem.update"],
                "outputs": {"ok": "vote", "back": "draft"},  # the output decides: no new_state beside it
            },
            # a child workflow per crew member (issue 21), decided by a quorum: damaging its keys
            # must give a refused spec or one that runs
            "poll": {
                "trigger": "dynamic",
                "enabled_states": ["draft"],
                "for_each": {"role": "crew", "mapping": "per_user"},
                "states": {"polling": {}, "aye": {"terminal": True}},
                "children": {
                    "open_poll": {"trigger": "init", "new_state": "polling"},
                    "yes": {"assigned_role": "crew", "assigned_states": ["polling"], "new_state": "aye"},
                },
                "complete_when": {"carried": {"state": "aye", "at_least": "1/2"}},
                "outputs": {"carried": "vote"},
            },
            "expire": {"trigger": "time", "enabled_states": ["vote"], "timeout_seconds": 3600, "new_state": "done"},
            "finish": {
                "assigned_role": "lead",
                "assigned_states": ["vote"],
                "new_state": "done",
                "depends_on": {"submit": {"min": 1, "max": 3}},
                "resolutions": {"shipped": "Shipped", "dropped": "Dropped"},
                "enable_conditions": ["item_has_assignee"],
            },
        },
    }


SPEC_KEYS = [
    # (path in rich_spec, or under a new action/role/state) — every key of §3, and the ones §3
    # names that the validator may not know (for_each, complete_when, resolutions, enable_conditions)
    ("short_name",),
    ("pretty_name",),
    ("description",),
    ("roles",),
    ("states",),
    ("actions",),
    ("side_effects",),
    ("roles", "lead"),
    ("roles", "lead", "pretty_name"),
    ("roles", "lead", "callbacks"),
    ("roles", "crew", "allowed_parties"),
    ("roles", "crew", "static_parties"),
    ("roles", "lead", "assignable_by"),
    ("states", "draft"),
    ("states", "draft", "pretty_name"),
    ("states", "done", "terminal"),
    ("states", "draft", "hidden_fields"),
    ("actions", "make"),
    ("actions", "make", "new_state"),
    ("actions", "make", "trigger"),
    ("actions", "note", "pretty_name"),
    ("actions", "note", "pretty_past_tense"),
    ("actions", "note", "allowed_roles"),
    ("actions", "note", "always_enabled"),
    ("actions", "note", "side_effects"),
    ("actions", "submit", "assigned_role"),
    ("actions", "submit", "assigned_states"),
    ("actions", "submit", "enabled_states"),
    ("actions", "submit", "privileges"),
    ("actions", "submit", "new_state"),
    ("actions", "submit", "outputs"),
    ("actions", "submit", "outputs", "ok"),
    ("actions", "submit", "resolutions"),
    ("actions", "submit", "enable_conditions"),
    ("actions", "submit", "trigger"),
    ("actions", "poll", "trigger"),
    ("actions", "poll", "children"),
    ("actions", "poll", "children", "yes"),
    ("actions", "poll", "children", "yes", "assigned_role"),
    ("actions", "poll", "states"),
    ("actions", "poll", "for_each"),
    ("actions", "poll", "complete_when"),
    ("actions", "expire", "timeout_seconds"),
    ("actions", "note", "timeout_seconds"),
    ("actions", "help", "timeout_seconds"),
    ("actions", "help", "assigned_role"),
    ("actions", "finish", "depends_on"),
    ("actions", "finish", "depends_on", "submit"),
    ("actions", "finish", "depends_on", "submit", "min"),
    ("actions", "finish", "depends_on", "submit", "max"),
]


def spec_values(tree: Tree) -> st.SearchStrategy[Any]:
    """Values of the wrong type, of the right type but absurd, or plausible but unknown."""
    names = st.sampled_from(["lead", "crew", "draft", "vote", "done", "make", "submit", "nope", "", "\x00"])
    return st.one_of(
        st.sampled_from([None, True, False, 0, -1, 1.5, "", "x", [], {}, ["x"], {"x": 1}, [["lead"]], [{}]]),
        st.sampled_from([10**12, 10**30, 2**63, -(2**63) - 1, 366 * 24 * 3600, 0, Raw("NaN"), Raw("1e400")]),
        st.sampled_from([Raw(HUGE_INT), nested(500), Raw("[" * 2000 + "]" * 2000)]),
        st.sampled_from(["user", "auto", "init", "time", "workflow", "parallel", "dynamic", "USER"]),
        st.sampled_from(["usr_nope", tree.bob_id, tree.group_id, "grp_nope"]).map(lambda p: [p]),
        st.lists(names, max_size=3),
        st.dictionaries(names, st.one_of(names, st.integers(-3, 3), st.none(), st.just({})), max_size=3),
        st.dictionaries(
            names, st.fixed_dictionaries({"min": st.integers(-2, 3), "max": st.integers(-2, 3)}), max_size=2
        ),
        st.fixed_dictionaries({"role": names, "mapping": st.sampled_from(["per_role", "per_member", "x", 1])}),
        st.fixed_dictionaries(
            {"ok": st.fixed_dictionaries({"state": names, "at_least": st.sampled_from([1, "2/3", "x/0", -1])})}
        ),
        hostile_text,
        st.sampled_from([200, 2_000]).map(lambda n: {f"s{i}": {} for i in range(n)}),
        st.sampled_from([500, 2_000]).map(lambda n: ["lead"] * n),
    )


def damaged_spec(spec: Any, path: tuple[str, ...], new: Any) -> Any:
    """``spec`` with the value at ``path`` set to ``new`` (missing dicts on the way are made)."""
    if not path:
        return new
    if not isinstance(spec, dict):
        return spec
    head, rest = path[0], path[1:]
    return {**spec, head: damaged_spec(spec.get(head, {}), rest, new)}


def plausible_values(tree: Tree, key: str) -> st.SearchStrategy[Any] | None:
    """Values of the right type that a validator might wave through but the engine cannot run:
    what an accepted spec must survive."""
    parties = st.lists(st.sampled_from([tree.bob_id, tree.group_id, tree.admin_id, "usr_nope", "grp_nope", ""]))
    states = st.lists(st.sampled_from(["draft", "vote", "done"]), max_size=3)
    choices = {
        "timeout_seconds": st.sampled_from([0, 1, 59, 366 * 24 * 3600, 10**9, 10**12, 2**62, 2**63 - 1]),
        "static_parties": parties,
        "allowed_parties": parties,
        "callbacks": st.lists(st.sampled_from(["static", "item_assignee", "creation_user", "subproject_validator"])),
        "min": st.integers(0, 3) | st.sampled_from([10**12, 2**63]),
        "max": st.integers(0, 3) | st.sampled_from([10**12, 2**63]),
        "terminal": st.booleans(),
        "always_enabled": st.booleans(),
        "trigger": st.sampled_from(["user", "auto", "time", "parallel", "dynamic", "workflow"]),
        "pretty_name": hostile_text,
        "pretty_past_tense": hostile_text,
        "description": hostile_text,
        "hidden_fields": st.lists(hostile_text, max_size=3),
        "enabled_states": states,
        "assigned_states": states,
        "privileges": st.lists(st.sampled_from(["workflowItem.update", "nope", "\x00"]), max_size=2),
        "new_state": st.sampled_from(["draft", "vote", "done"]),
        "side_effects": st.lists(st.sampled_from(["capture_resolution"]), max_size=3),
    }
    return choices.get(key)


@st.composite
def hostile_specs(draw: st.DrawFn, tree: Tree) -> Any:
    spec: Any = rich_spec(tree)
    plausible = draw(st.booleans())
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(SPEC_KEYS))
        values = plausible_values(tree, path[-1]) if plausible else None
        spec = damaged_spec(spec, path, draw(values if values is not None else spec_values(tree)))
    if draw(st.booleans()) and isinstance(spec, dict):
        spec = {**spec, "short_name": draw(st.sampled_from(["fz_a", "fz_b", "simple"]))}
    return spec


SPEC_NAME = """query($id: ID!) { node(id: $id) { ... on Workflow { shortName } } }"""
ENABLED = """query($id: ID!) { node(id: $id) { ... on WorkflowItem { case { status enabledActions { id action {
  shortName } } } } } }"""


async def run_accepted_spec(client: Client, tree: Tree, findings: Findings, workflow_id: str) -> None:
    """An accepted spec must run: an item is created in a subproject using it, and each of its
    enabled actions executes without an unexpected error."""
    name = (await client.data(SPEC_NAME, {"id": workflow_id}, token=tree.admin))["node"]["shortName"]
    sub = await client.gql(
        CREATE_SUBPROJECT,
        {"input": {"projectId": tree.project, "displayName": "Fz", "currency": "EUR", "workflow": name}},
        token=tree.admin,
    )
    findings.check(sub, f"(createSubproject on accepted workflow {name})")
    sub_id = ((sub.payload("createSubproject") or {}).get("subproject") or {}).get("id")
    findings.require(sub_id is not None, f"accepted workflow {name} cannot be used: {sub.describe()}")
    if sub_id is None:
        return
    item = await client.gql(
        CREATE_ITEM,
        {"input": {"subprojectId": sub_id, "displayName": "Fz", "assigneeId": tree.bob_id}},
        token=tree.admin,
    )
    findings.check(item, f"(createWorkflowItem on accepted workflow {name})")
    made = (item.payload("createWorkflowItem") or {}).get("workflowItem")
    findings.require(made is not None, f"accepted workflow {name} cannot start an item: {item.describe()}")
    if made is None:
        return
    read = await client.gql(ENABLED, {"id": made["id"]}, token=tree.admin)
    findings.check(read, f"(reading an item of accepted workflow {name})")
    case = ((read.payload("node") or {}).get("case")) or {}
    for enabled in case.get("enabledActions") or []:
        answer = await client.gql(
            EXECUTE,
            {
                "input": {
                    "workflowItemId": made["id"],
                    "action": enabled["action"]["shortName"],
                    "enabledActionId": enabled["id"],
                }
            },
            token=tree.admin,
        )
        findings.check(answer, f"(executing {enabled['action']['shortName']} of accepted workflow {name})")


@pytest.mark.slow
@settings(FUZZ, max_examples=100)
@given(data=st.data())
async def test_hostile_specs_are_refused_or_run(
    client: Client, tree: Tree, findings: Findings, data: st.DataObject
) -> None:
    spec = data.draw(hostile_specs(tree), label="spec")
    answer = await client.gql(DEFINE, {"spec": spec}, token=tree.admin)
    findings.check(answer, "(defineWorkflow)")
    if answer.status >= 500 or UNEXPECTED in answer.text:
        return
    if answer.status != 200 or answer.errors():
        findings.require(
            answer.status in (400, 413) or answer.payload("defineWorkflow") is None,
            f"defineWorkflow answered an error beside a payload: {answer.describe()}",
        )
        return
    payload = answer.payload("defineWorkflow")
    codes = {e["code"] for e in payload["userErrors"]}
    findings.require(
        codes <= {"INVALID_SPEC", "INVALID_INPUT", "ALREADY_EXISTS"},
        f"defineWorkflow refused a spec with {codes}: {answer.describe()}",
    )
    event("spec accepted" if payload["workflow"] is not None else "spec refused")
    if payload["workflow"] is not None:
        await run_accepted_spec(client, tree, findings, payload["workflow"]["id"])


async def test_the_undamaged_rich_spec_is_accepted_and_runs(client: Client, tree: Tree, findings: Findings) -> None:
    """The hostile specs are this spec damaged one key at a time: it must itself be accepted,
    or every damaged one would be refused and the path that runs accepted specs never taken."""
    answer = await client.gql(DEFINE, {"spec": rich_spec(tree)}, token=tree.admin)
    payload = answer.payload("defineWorkflow")
    assert payload["userErrors"] == [] and payload["workflow"] is not None, answer.describe()
    await run_accepted_spec(client, tree, findings, payload["workflow"]["id"])
