"""Bounded work per request (issue 19, findings 1, 2 and 6): every abusive document, body or
operation is refused with a clear error and a code, before it costs the server anything."""

import asyncio
import json
import time
from collections.abc import AsyncIterator

import httpx
import pytest
import websockets
from graphql import parse
from sqlalchemy import select, text

from engine.spec import workflows
from models import Database, Project
from server.app import create_app
from server.request_limits import MAX_JSON_NESTING
from server.settings import Settings
from tests.fixtures.builders import build_tree
from tests.fixtures.documents import CREATE_PROJECT, DEFINE, UPDATE_PROJECT


@pytest.fixture
def app_with(db: Database):  # type: ignore[no-untyped-def]
    """An HTTP client on an app with some settings changed."""

    async def make(**changes: object) -> httpx.AsyncClient:
        app = create_app(Settings(database_url=db.url, **changes), db=db)
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test")

    return make


def fragment_chain(n: int) -> str:
    """Each fragment spreads the next twice: 2^n copies of `viewer { login }` once expanded."""
    fragments = " ".join(f"fragment F{i} on Query {{ viewer {{ login }} ...F{i + 1} ...F{i + 1} }}" for i in range(n))
    return "{ ...F0 } " + fragments + f" fragment F{n} on Query {{ viewer {{ login }} }}"


def codes(body: dict) -> list[str]:
    return [e.get("extensions", {}).get("code") for e in body.get("errors", [])]


async def test_a_fragment_chain_is_refused_at_once_and_the_server_keeps_answering(app_client, count_statements):
    """Finding 1: 30 fragments, each spreading the next twice, hung the server in the depth rule."""
    with count_statements() as sql:
        started = time.perf_counter()
        refused = (await app_client.post("/graphql", json={"query": fragment_chain(30)})).json()
        elapsed = time.perf_counter() - started
    assert codes(refused) == ["QUERY_TOO_COSTLY"], refused
    assert refused["data"] is None and refused["errors"][0]["extensions"]["cost"] > 2**30
    assert sql.count == 0
    assert elapsed < 1.0, elapsed  # a generous bound for a loaded machine: it took forever
    health = (await app_client.post("/graphql", json={"query": "{ __typename }"})).json()
    assert health == {"data": {"__typename": "Query"}, "extensions": {"cost": {"requested": 0, "limit": 50000}}}


async def test_a_deep_document_is_refused_by_depth_counting_fragments(gql, make_user):
    _, token = await make_user("alice")
    # node > subprojects > edges > node > project > subprojects > ... : 1 + 4 levels a step + id
    step = "subprojects(first: 1) { edges { node { project { "

    def through_a_fragment(steps: int) -> str:
        inner = step * steps + "id" + " } } } }" * steps
        return "query($id: ID!) { node(id: $id) { ...P } } fragment P on Project { " + inner + " }"

    body = await gql.raw(through_a_fragment(4), {"id": "prj_x"}, token=token)
    assert codes(body) == ["QUERY_TOO_DEEP"], body
    assert body["errors"][0]["message"] == "The query is 18 fields deep; at most 15 are allowed."
    assert await gql(through_a_fragment(3), {"id": "prj_x"}, token=token) == {"node": None}  # 14 deep


async def test_aliases_are_counted_at_every_use_of_their_fragment(gql, make_user):
    _, token = await make_user("alice")
    aliases = " ".join(f"a{i}: login" for i in range(26))
    body = await gql.raw(
        f"{{ viewer {{ ...U }} me: viewer {{ ...U }} }} fragment U on User {{ {aliases} }}", token=token
    )
    assert codes(body) == ["TOO_MANY_ALIASES"], body
    assert body["errors"][0]["message"].startswith("The query has 53 aliases")
    fine = await gql(f"{{ viewer {{ ...U }} }} fragment U on User {{ {aliases} }}", token=token)
    assert fine["viewer"]["a25"] == "alice"


async def test_too_many_tokens_are_refused_while_parsing(app_with):
    async with await app_with(max_query_tokens=100, max_repeated_fields=100) as client:
        body = (await client.post("/graphql", json={"query": "{ " + "__typename " * 120 + "}"})).json()
        assert codes(body) == ["TOO_MANY_TOKENS"], body
        assert "more than 100 tokens" in body["errors"][0]["message"]
        assert (await client.post("/graphql", json={"query": "{ " + "__typename " * 90 + "}"})).json()["data"]


NESTED_LOGS = """{ projects { edges { node { subprojects { edges { node { workflowItems { edges { node {
  case { log { edges { node { comment data } } } } } } } } } } } } } }"""


async def test_three_hundred_nested_aliases_are_refused_by_cost_before_any_sql(
    app_with, gql, make_user, count_statements
):
    """Finding 2: 300 aliases of a nested tree down to each case's log made a 2.38 GB answer.
    Its cost (20 projects x 20 subprojects x 20 items x 20 entries, 300 times) is refused
    before a statement is sent: the token is remembered from the first request."""
    _, token = await make_user("alice")
    await build_tree(gql, token, items=2, workflow="bug")
    one = await gql.raw(NESTED_LOGS, token=token)  # one alias alone is already too costly
    assert codes(one) == ["QUERY_TOO_COSTLY"] and one["errors"][0]["extensions"]["cost"] == 176_420
    query = "{ " + " ".join(f"a{i}: " + NESTED_LOGS[2:-2] for i in range(300)) + " }"
    # More aliases and tokens than the defaults allow, so that only the cost is left to refuse it.
    async with await app_with(max_aliases=1_000, max_query_tokens=100_000) as client:
        headers = {"Authorization": f"Bearer {token}"}
        assert (await client.post("/graphql", json={"query": "{ viewer { login } }"}, headers=headers)).json()["data"]
        with count_statements() as sql:
            body = (await client.post("/graphql", json={"query": query}, headers=headers)).json()
    assert codes(body) == ["QUERY_TOO_COSTLY"]
    assert body["errors"][0]["extensions"] == {"code": "QUERY_TOO_COSTLY", "cost": 300 * 176_420, "limit": 50_000}
    assert sql.count == 0, sql.statements


async def test_the_cost_follows_first_and_its_variables_and_is_reported(gql, make_user):
    _, token = await make_user("alice")
    await build_tree(gql, token, items=1)
    query = """query($n: Int, $m: Int = 7) { projects(first: $n) { edges { node {
      subprojects(first: $m) { edges { node { displayName } } } } } } }"""
    small = await gql.raw(query, {"n": 3}, token=token)
    assert small["extensions"]["cost"] == {"requested": 3 + 3 * 7, "limit": 50_000}
    assert small["data"]["projects"]["edges"][0]["node"]["subprojects"]["edges"] == [{"node": {"displayName": "Roof"}}]
    default = await gql.raw(query, {"m": 100}, token=token)  # the same document, other page sizes
    assert default["extensions"]["cost"]["requested"] == 20 + 20 * 100
    huge = await gql.raw(query, {"n": 5000}, token=token)  # counted as the most a page may be; refused when it runs
    assert codes(huge) == ["INVALID_INPUT"] and huge["extensions"]["cost"]["requested"] == 100 + 100 * 7


async def test_diagram_carries_a_weight_and_is_rendered_once(gql, make_user, monkeypatch):
    """20 aliases of the diagram of a big workflow kept the server busy for minutes: each
    costs its weight, and the text is rendered once per version and format."""
    _, admin = await make_user("root", admin=True)
    states = {f"s{i}": {"pretty_name": f"Step {i}"} for i in range(40)}
    states["s39"]["terminal"] = True
    actions = {
        "open": {"pretty_name": "Open", "pretty_past_tense": "Opened", "trigger": "init", "new_state": "s0"},
        **{
            f"a{i}": {
                "pretty_name": f"Go {i}",
                "pretty_past_tense": "Went",
                "enabled_states": [f"s{i}"],
                "new_state": f"s{i + 1}",
                "allowed_roles": ["r"],
            }
            for i in range(39)
        },
    }
    spec = {
        "short_name": "long",
        "pretty_name": "Long",
        "roles": {"r": {"pretty_name": "R"}},
        "states": states,
        "actions": actions,
    }
    defined = await gql(DEFINE, {"spec": spec}, token=admin)
    workflow_id = defined["defineWorkflow"]["workflow"]["id"]
    rendered = []
    real = workflows.spec_of

    def counting(row):  # type: ignore[no-untyped-def]
        rendered.append(row.id)
        return real(row)

    monkeypatch.setattr("schema.workflow.spec_of", counting)
    query = (
        "query($id: ID!) { node(id: $id) { ... on Workflow { "
        + " ".join(f"d{i}: diagram" for i in range(20))
        + " dot: diagram(format: DOT) } } }"
    )
    body = await gql.raw(query, {"id": workflow_id}, token=admin)
    assert "errors" not in body, body
    diagrams = body["data"]["node"]
    assert len({diagrams[f"d{i}"] for i in range(20)}) == 1 and "s38 --> s39: Go 38" in diagrams["d0"]
    assert diagrams["dot"].startswith('digraph "long"')
    assert body["extensions"]["cost"]["requested"] == 1 + 21 * 100
    again = await gql.raw(query, {"id": workflow_id}, token=admin)
    assert again["data"] == body["data"]
    assert rendered == [workflow_id, workflow_id]  # MERMAID once, DOT once, in all 42 fields
    many = "{ workflows(first: 100) { edges { node { " + " ".join(f"d{i}: diagram" for i in range(5)) + " } } } }"
    assert codes(await gql.raw(many, token=admin)) == ["QUERY_TOO_COSTLY"]


async def test_an_operation_past_its_time_limit_is_stopped_and_changes_nothing(app_with, db, gql, make_user):
    """Finding 2: no operation runs unbounded. Here an update waits for a lock the test holds
    (SQLite: the process's write lock; PostgreSQL: the project's row); it is stopped at the
    limit, answers TIMEOUT, and its change never lands."""
    _, token = await make_user("alice")
    created = await gql(CREATE_PROJECT, {"input": {"displayName": "Before"}}, token=token)
    project_id = created["createProject"]["project"]["id"]
    update = {"query": UPDATE_PROJECT, "variables": {"input": {"id": project_id, "displayName": "After"}}}
    headers = {"Authorization": f"Bearer {token}"}
    async with await app_with(operation_timeout=0.5) as client:
        async with db.transaction() as holding:
            if not db.is_sqlite:
                await holding.execute(text("SELECT id FROM project WHERE id = :id FOR UPDATE"), {"id": project_id})
            started = time.perf_counter()
            # (bounded here too, so that a missing time limit fails the test instead of hanging it)
            response = await asyncio.wait_for(client.post("/graphql", json=update, headers=headers), 10)
            elapsed = time.perf_counter() - started
        assert response.status_code == 200
        body = response.json()
        assert body["data"] is None and codes(body) == ["TIMEOUT"], body
        assert body["errors"][0]["message"] == "The operation took longer than 0.5 seconds and was stopped."
        assert 0.5 <= elapsed < 5, elapsed
        async with db.read_session() as session:
            assert (await session.execute(select(Project.display_name).where(Project.id == project_id))).scalar() == (
                "Before"
            )
        retried = (await client.post("/graphql", json=update, headers=headers)).json()
        assert retried["data"]["updateProject"]["project"]["displayName"] == "After"


# --- Bodies ------------------------------------------------------------------------------------


async def test_a_body_past_the_limit_is_refused_while_it_streams(app_with):
    sent = 0

    async def body(chunks: int) -> AsyncIterator[bytes]:
        nonlocal sent
        for _ in range(chunks):
            sent += 64 * 1024
            yield b" " * (64 * 1024)

    async with await app_with(max_body_bytes=100_000) as client:
        # No Content-Length (chunked): 50 MB offered, refused after the second chunk.
        response = await client.post("/graphql", content=body(800), headers={"Content-Type": "application/json"})
        assert response.status_code == 413
        assert response.json() == {
            "errors": [
                {
                    "message": "The request body is larger than 100000 bytes.",
                    "extensions": {"code": "REQUEST_TOO_LARGE"},
                }
            ]
        }
        assert sent <= 3 * 64 * 1024, sent
        # A Content-Length that lies (says 10 bytes, sends 50 MB): the bytes count, not the header.
        sent = 0
        lying = await client.post(
            "/graphql", content=body(800), headers={"Content-Type": "application/json", "Content-Length": "10"}
        )
        assert lying.status_code == 413 and sent <= 3 * 64 * 1024
        # An honest Content-Length past the limit: refused before a byte is read.
        sent = 0
        declared = await client.post(
            "/graphql", content=body(800), headers={"Content-Type": "application/json", "Content-Length": "52428800"}
        )
        assert declared.status_code == 413 and sent <= 64 * 1024
        within = await client.post("/graphql", json={"query": "{ __typename }", "variables": {"pad": "x" * 90_000}})
        assert within.status_code == 200 and within.json()["data"] == {"__typename": "Query"}


@pytest.mark.parametrize("body", ["null", '"str"', "123", "true", "[]", "[1]", "{", "", '{"query": 5}'])
async def test_a_body_that_is_not_a_graphql_request_gets_400_with_a_graphql_error(app_client, body):
    """Finding 6: these were HTTP 500."""
    response = await app_client.post("/graphql", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    errors = response.json()["errors"]
    assert len(errors) == 1 and errors[0]["extensions"]["code"] == "BAD_REQUEST" and errors[0]["message"]


@pytest.mark.parametrize("levels", [98, 99, 1000, 20_000])
async def test_variables_nested_past_the_bound_get_400_whatever_the_parser_reads(app_client, levels):
    """The body nests at most MAX_JSON_NESTING levels (the body's object and the variables' one
    count): a fixed bound, not the interpreter's (3.11's json refused 1,000 levels by its
    recursion limit, 3.12's reads them). Within it, the document is answered as usual."""
    nested = "[" * levels + "]" * levels
    body = '{"query": "query($d: JSON) { __typename }", "variables": {"d": ' + nested + "}}"
    response = await app_client.post("/graphql", content=body, headers={"Content-Type": "application/json"})
    if levels + 2 <= MAX_JSON_NESTING:
        assert codes(response.json()) == ["GRAPHQL_VALIDATION_FAILED"], response.text  # $d is unused
        return
    assert response.status_code == 400, response.text
    assert response.json()["errors"] == [
        {"message": "The JSON is nested too deeply: at most 100 levels.", "extensions": {"code": "BAD_REQUEST"}}
    ]
    if levels == 1000:  # a GET's variables alike (the variables' object is their first level)
        params = {"query": "{ __typename }", "variables": '{"d": ' + nested + "}"}
        get = await app_client.get("/graphql", params=params)
        assert get.status_code == 400 and codes(get.json()) == ["BAD_REQUEST"], get.text


async def test_a_number_of_five_thousand_digits_gets_400_or_a_graphql_error(gql, make_user, app_client):
    _, token = await make_user("alice")
    digits = "7" * 5000
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    body = '{"query": "query($n: Int) { projects(first: $n) { totalCount } }", "variables": {"n": ' + digits + "}}"
    response = await app_client.post("/graphql", content=body, headers=headers)
    assert response.status_code == 400 and codes(response.json()) == ["BAD_REQUEST"], response.text
    assert "number too long" in response.json()["errors"][0]["message"]
    literal = await gql.raw(f"{{ projects(first: {digits}) {{ totalCount }} }}", token=token)
    assert literal["data"] is None and literal["errors"], literal
    assert "Unexpected error" not in str(literal)
    json_literal = await gql.raw(
        f"mutation {{ defineWorkflow(input: {{spec: {{n: {digits}}}}}) {{ userErrors {{ code }} }} }}", token=token
    )
    # Read, then refused by the input guard: a JSON number must fit a double (schema/input_guard.py).
    assert json_literal["data"] is None and codes(json_literal) == ["INVALID_INPUT"], json_literal


async def test_get_requests_get_the_same_errors(app_client):
    assert (await app_client.get("/graphql", params={"query": "{ __typename }"})).json()["data"] == {
        "__typename": "Query"
    }
    for variables in ("123", "{", "[1]", "null"):
        params = {"query": "{ __typename }", "variables": variables}
        response = await app_client.get("/graphql", params=params)
        assert response.status_code == 400, (params, response.text)
        assert codes(response.json()) == ["BAD_REQUEST"]
    mutation = await app_client.get(
        "/graphql", params={"query": 'mutation { login(input: {login: "a", password: "b"}) { token } }'}
    )
    assert mutation.status_code == 400 and codes(mutation.json()) == ["BAD_REQUEST"], mutation.text
    deep = await app_client.get("/graphql", params={"query": fragment_chain(30)})
    assert codes(deep.json()) == ["QUERY_TOO_COSTLY"]


async def test_refusals_are_fast_while_other_requests_keep_answering(app_client):
    """Every abusive document is refused in milliseconds, and `{ __typename }` sent meanwhile
    is answered: nothing blocks the event loop."""
    abusive = [fragment_chain(30), "{ " + " ".join(f"a{i}: viewer {{ login }}" for i in range(1000)) + " }"]

    async def refuse(query: str) -> float:
        started = time.perf_counter()
        body = (await app_client.post("/graphql", json={"query": query})).json()
        assert body["data"] is None and body["errors"]
        return time.perf_counter() - started

    async def ping() -> dict:
        return (await app_client.post("/graphql", json={"query": "{ __typename }"})).json()

    results = await asyncio.gather(*(refuse(q) for q in abusive), ping())
    assert results[-1]["data"] == {"__typename": "Query"}
    assert max(results[:-1]) < 1.0, results


# --- Validation errors and the measure cache -----------------------------------------------------


async def test_every_validation_error_carries_a_code_and_rules_keep_their_own(gql, make_user):
    """graphql-core's own errors ("Cannot query field …") came without `extensions.code`."""
    _, token = await make_user("alice")
    unknown = await gql.raw("{ viewer { nope } }", token=token)
    assert unknown["data"] is None and codes(unknown) == ["GRAPHQL_VALIDATION_FAILED"], unknown
    assert unknown["errors"][0]["message"] == "Cannot query field 'nope' on type 'User'."
    assert unknown["errors"][0]["locations"] == [{"line": 1, "column": 12}]
    several = await gql.raw("query($x: Int) { viewer { login(a: 1) } nope }", token=token)
    assert codes(several) == ["GRAPHQL_VALIDATION_FAILED"] * len(several["errors"]) and len(several["errors"]) >= 3
    nul = await gql.raw('{ node(id: "prj_\\u0000") { id } }', token=token)  # the input guard's rule
    assert codes(nul) == ["INVALID_INPUT"], nul
    logins = await gql.raw(
        'mutation { a: login(input: {login: "a", password: "b"}) { token } '
        'b: login(input: {login: "a", password: "b"}) { token } }'
    )
    assert codes(logins) == ["TOO_MANY_LOGINS"], logins


def test_the_cost_of_a_document_is_remembered_per_schema():
    """The measure cache keyed by document text alone: a second schema read the first's cost."""
    import strawberry

    from schema.limits import measure

    @strawberry.type
    class Thing:
        name: str

    @strawberry.type
    class Plain:
        @strawberry.field
        def things(self) -> list[Thing]:
            return []

    @strawberry.type
    class Paged:
        @strawberry.field
        def things(self, first: int | None = None) -> list[Thing]:
            return []

    document = parse("{ things(first: 30) { name } }")
    plain, paged = strawberry.Schema(query=Plain)._schema, strawberry.Schema(query=Paged)._schema
    assert measure(plain, document, None, {}).cost == 1  # (no `first` argument: counted once)
    assert measure(paged, document, None, {}).cost == 30
    assert measure(plain, document, None, {}).cost == 1


PICK_LISTS = """{ alias: node(id: "SUB") { ... on Subproject { workflowItems(first: FIRST) { edges { node {
  case { roles { role { shortName } pickList { ... on User { login } } } } } } } } } }"""


async def test_lists_without_first_count_their_longest_length(gql, make_user, count_statements):
    """`CaseRole.pickList` counted 1 however long: 40 aliases of pick lists over a page of 100
    items cost 16,040 and sent 1,606 statements. It now counts its bound (20 parties) and
    multiplies what it contains, as a connection of 20 would."""
    _, token = await make_user("alice")
    _, sub, _ = await build_tree(gql, token, items=2, workflow="bug")

    def document(aliases: int, first: int) -> str:
        one = PICK_LISTS.replace("SUB", sub["id"]).replace("FIRST", str(first))[2:-2]
        return "{ " + " ".join(one.replace("alias", f"a{i}") for i in range(aliases)) + " }"

    read = await gql.raw(document(1, 20), token=token)
    assert "errors" not in read, read
    # node 1 + 20 items + 20 x (case 1 + roles 1 + role 1 + pickList 20; a login, a scalar, is 0)
    assert read["extensions"]["cost"]["requested"] == 1 + 20 + 20 * (1 + 1 + 1 + 20)
    roles = read["data"]["a0"]["workflowItems"]["edges"][0]["node"]["case"]["roles"]
    assert roles and all("pickList" in r for r in roles)
    with count_statements() as sql:  # the reviewer's probe: 40 aliases over pages of 100 items
        refused = await gql.raw(document(40, 100), token=token)
    assert codes(refused) == ["QUERY_TOO_COSTLY"]
    assert refused["errors"][0]["extensions"]["cost"] == 40 * (1 + 100 + 100 * (1 + 1 + 1 + 20))
    assert sql.count == 0, sql.statements


async def test_the_nested_read_of_bench_r1_stays_within_the_default_cost(gql, make_user):
    from bench.queries import R1

    _, token = await make_user("alice")
    project, _, _ = await build_tree(gql, token, items=2, workflow="bug")
    body = await gql.raw(R1, {"id": project["id"]}, token=token)
    assert "errors" not in body and body["extensions"]["cost"] == {"requested": 1_611, "limit": 50_000}


async def test_a_document_of_a_990_kb_comment_is_refused_before_it_is_parsed(app_with):
    """Issue 40, finding 3: the parser reads every character of a comment (604 ms for 990 KB)."""
    client = await app_with(max_query_chars=1_000)
    async with client:
        long = (await client.post("/graphql", json={"query": "{ __typename }\n#" + "x" * 990_000})).json()
        fits = (await client.post("/graphql", json={"query": "{ __typename }\n#" + "x" * 900})).json()
        over = (await client.post("/graphql", json={"query": "{ __typename }\n#" + "x" * 1_000})).json()

    assert long["data"] is None and codes(long) == ["QUERY_TOO_LARGE"], long
    assert long["errors"][0]["message"] == (
        "The document is 990016 characters long (comments and whitespace included); at most 1000 are allowed."
    )
    assert fits["data"] == {"__typename": "Query"}
    assert codes(over) == ["QUERY_TOO_LARGE"]


async def test_a_body_that_is_not_utf_8_is_told_so(app_client):
    """Issue 40, finding 4: it got "The JSON has a number too long to read"."""
    latin1 = '{"query": "{ __typename }", "variables": {"name": "Müller"}}'.encode("latin-1")
    response = await app_client.post("/graphql", content=latin1, headers={"Content-Type": "application/json"})

    assert response.status_code == 400
    assert response.json() == {
        "errors": [{"message": "The body is not UTF-8 text, as JSON must be.", "extensions": {"code": "BAD_REQUEST"}}]
    }


async def test_a_websocket_message_nested_past_the_bound_closes_the_connection_saying_so(make_user, live_server):
    """As a body does (400), a graphql-transport-ws message nested past MAX_JSON_NESTING is
    refused: the connection closes with 4400 and the sentence (it failed the connection's
    handler, a traceback in the server's log and no close frame), and the server goes on."""
    _, token = await make_user("deep")
    for levels in (150, 5_000):
        nested = "[" * levels + "]" * levels
        async with websockets.connect(live_server.ws, subprotocols=["graphql-transport-ws"]) as socket:
            init = {"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}}
            await socket.send(json.dumps(init))
            assert json.loads(await asyncio.wait_for(socket.recv(), 10))["type"] == "connection_ack"
            await socket.send(
                '{"type": "subscribe", "id": "1", "payload": {"query": "subscription { __typename }", '
                '"variables": {"d": ' + nested + "}}}"
            )
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(socket.recv(), 10)
        assert closed.value.rcvd is not None, closed.value
        assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (
            4400,
            f"The JSON is nested too deeply: at most {MAX_JSON_NESTING} levels.",
        )
    assert (await live_server.gql("{ viewer { login } }", token=token))["viewer"] == {"login": "deep"}
