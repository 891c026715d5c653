"""Repeated fields (issue 47, finding 1): a 7 KB document of 495 copies of `viewer { login }`
passed every cheap check and held a process 1 to 2.6 s in graphql-core's overlap check, which
compares every pair; a new operation name made each copy new to the caches. Now the copies of
one field in one selection set are counted in the walk that measures depth and cost, and the
overlap check runs under a work bound Caseway sets."""

import asyncio
import time
import uuid

import httpx
import pytest

from schema.limits import extension
from server.app import create_app
from server.settings import Settings


def codes(body: dict) -> list[str]:
    return [e.get("extensions", {}).get("code") for e in body.get("errors", [])]


def repeated(copies: int, name: str = "Q") -> str:
    return f"query {name} {{ " + "viewer { login } " * copies + "}"


async def test_a_field_repeated_495_times_is_refused_at_once_by_a_limit(app_client, count_statements):
    """Ten distinct documents (a new operation name each) sent at once: each refused with the
    limit's code in milliseconds, before any SQL, and a neighbour's `{ __typename }` answered."""

    async def send(query: str) -> tuple[dict, float]:
        started = time.perf_counter()
        body = (await app_client.post("/graphql", json={"query": query})).json()
        return body, time.perf_counter() - started

    with count_statements() as sql:
        answers = await asyncio.gather(*(send(repeated(495, f"Q{n}")) for n in range(10)), send("{ __typename }"))
    for body, _ in answers[:-1]:
        assert codes(body) == ["TOO_MANY_REPEATED_FIELDS"], body
        assert body["data"] is None
        assert body["errors"][0]["message"] == (
            "The query asks for `viewer` 495 times in one selection set (fragments merged in); at most 20 copies"
            " of one field are allowed: ask for it once."
        )
    assert answers[-1][0]["data"] == {"__typename": "Query"}
    assert sql.count == 0
    assert max(elapsed for _, elapsed in answers) < 1.0, answers  # ten took 20.8 s; generous for a loaded machine


async def test_copies_are_counted_through_fragments_and_inline_fragments(gql, make_user):
    _, token = await make_user("alice")
    fragments = " ".join(f"fragment F{i} on Query {{ viewer {{ login }} }}" for i in range(10))
    spreads = " ".join(f"...F{i}" for i in range(10))
    inline = "... on Query { viewer { login } } " * 10
    body = await gql.raw(f"{{ {spreads} {inline} viewer {{ login }} }} {fragments}", token=token)
    assert codes(body) == ["TOO_MANY_REPEATED_FIELDS"], body
    assert "`viewer` 21 times" in body["errors"][0]["message"]
    # A fragment spread twice in one selection set is collected once, as graphql-core does.
    twice = await gql(f"{{ {spreads} {spreads} {inline} }} {fragments}", token=token)
    assert twice == {"viewer": {"login": "alice"}}
    # Nested: the copies inside one `viewer` are counted in its own selection set.
    body = await gql.raw("{ viewer { " + "login " * 21 + "} }", token=token)
    assert codes(body) == ["TOO_MANY_REPEATED_FIELDS"] and "`login` 21 times" in body["errors"][0]["message"]


async def test_twenty_copies_are_answered_and_the_setting_moves_the_limit(gql, make_user, db):
    _, token = await make_user("alice")
    assert await gql(repeated(20), token=token) == {"viewer": {"login": "alice"}}
    app = create_app(Settings(database_url=db.url, max_repeated_fields=5), db=db)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test") as client:
        body = (await client.post("/graphql", json={"query": repeated(6)})).json()
    assert codes(body) == ["TOO_MANY_REPEATED_FIELDS"] and "at most 5 copies" in body["errors"][0]["message"]


async def test_the_overlap_check_stops_at_caseways_work_bound(app_client):
    """Within the repeat limit at every level (20 `viewer`, 19 `login` in each) yet 145,000 steps
    of comparisons under graphql-core's own bound: stopped at Caseway's, with a code of its own."""
    query = "{ " + ("viewer { " + "login " * 19 + "} ") * 20 + "}"
    started = time.perf_counter()
    body = (await app_client.post("/graphql", json={"query": query})).json()
    elapsed = time.perf_counter() - started
    assert codes(body) == ["QUERY_TOO_COMPLEX"], body
    assert f"at most {extension.VALIDATION_WORK} steps" in body["errors"][0]["message"]
    assert elapsed < 0.5, elapsed


@pytest.mark.parametrize("query", [repeated(495, "R"), "{ " + ("viewer { " + "login " * 19 + "} ") * 20 + "}"])
async def test_a_refused_document_is_not_kept_parsed(app_client, query):
    """A parsed 7 KB document is about 0.9 MB of syntax tree: only valid documents are kept."""
    kept = len(extension._documents)
    body = (await app_client.post("/graphql", json={"query": query})).json()
    assert body["data"] is None
    assert len(extension._documents) == kept
    await app_client.post("/graphql", json={"query": f"query Kept{uuid.uuid4().hex} {{ __typename }}"})
    assert len(extension._documents) in (kept + 1, extension._documents.max_entries)
