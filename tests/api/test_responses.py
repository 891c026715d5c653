"""Responses: encoded with orjson (json for what orjson refuses), unexpected errors masked."""

from datetime import UTC, datetime, timedelta

from resolvers import compiled, queries
from tests.fixtures.documents import CREATE_PROJECT

READ_DATA = """query($id: ID!) { node(id: $id) { ... on Project { additionalData tags } } }"""


async def test_json_fields_round_trip_even_beyond_64_bit_integers(gql, make_user) -> None:
    _, token = await make_user("alice")
    data = {"budget": {"lines": [1, 2.5, None, True]}, "huge": 2**70, "text": "Grüße ✓", "nested": [[], {}]}
    created = await gql(
        CREATE_PROJECT, {"input": {"displayName": "P", "additionalData": data, "tags": ["ä"]}}, token=token
    )
    project_id = created["createProject"]["project"]["id"]
    read = await gql(READ_DATA, {"id": project_id}, token=token)
    assert read["node"] == {"additionalData": data, "tags": ["ä"]}


async def test_an_unexpected_failure_is_masked_and_changes_nothing_else(gql, make_user, monkeypatch, caplog) -> None:
    """A bug inside a resolver (or the read planner that answers for it) reaches the client as
    "Unexpected error." at its path, never as the exception's text or a traceback; client
    errors keep their message and code."""
    _, token = await make_user("alice")
    created = await gql(CREATE_PROJECT, {"input": {"displayName": "P"}}, token=token)
    project_id = created["createProject"]["project"]["id"]

    async def broken(*_: object, **__: object) -> None:
        raise RuntimeError("connection string postgresql://secret@db")

    monkeypatch.setattr(queries, "node", broken)
    monkeypatch.setattr(compiled, "_run", broken)
    body = await gql.raw("query($id: ID!) { viewer { login } node(id: $id) { id } }", {"id": project_id}, token=token)
    assert body["data"] == {"viewer": {"login": "alice"}, "node": None}
    assert [(e["message"], e["path"]) for e in body["errors"]] == [("Unexpected error.", ["node"])]
    assert "secret" not in str(body) and "Traceback" not in str(body)
    assert "connection string postgresql://secret@db" in caplog.text  # the operator still sees it

    caplog.clear()
    refused = await gql.raw("{ viewer { login } }")  # a client error: told as it is, and not logged
    assert refused["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    search = "query($q: String) { projects(filter: {search: $q}) { totalCount } }"
    nul = await gql.raw(search, {"q": "a\x00"}, token=token)
    assert nul["errors"][0]["extensions"]["code"] == "INVALID_INPUT"
    assert caplog.text == ""  # a guesser or a fuzzer cannot fill the server's log


async def test_timestamps_read_back_as_utc_with_their_zone(gql, make_user) -> None:
    """Every DateTime reads back in UTC with its offset, on either database (SQLite drops the
    zone on the way in; PostgreSQL's driver returns it, and nothing converts it again)."""
    _, token = await make_user("alice")
    before = datetime.now(UTC)
    created = await gql(CREATE_PROJECT, {"input": {"displayName": "P"}}, token=token)
    project_id = created["createProject"]["project"]["id"]
    read = await gql(
        """query($id: ID!) { node(id: $id) { ... on Project { history(first: 1) { edges { node { at } } } } } }""",
        {"id": project_id},
        token=token,
    )
    at = read["node"]["history"]["edges"][0]["node"]["at"]
    assert at.endswith("+00:00"), at
    assert before - timedelta(seconds=1) <= datetime.fromisoformat(at) <= datetime.now(UTC)
