"""Tag and name filters with the characters LIKE treats specially (resolvers/visibility.py):
a user filtering for "50%" or "a_b" gets the projects that say so, not every project that
matches the wildcard. Written for the mutants that survived `make mutants` (bench/MUTANTS.md)."""

import pytest

from tests.fixtures.documents import CREATE_PROJECT

FILTERED_NAMES = """query($f: ProjectFilter) { projects(filter: $f) { edges { node { displayName } } } }"""

# Each project's name and tags differ only in a character LIKE would treat as a wildcard.
PROJECTS = (
    ("Roof 50% done", ["50%", "a_b"]),
    ("Roof 50 items done", ["50x", "axb"]),
    ('Hall "west"', ['say "hi"']),
    ("Path a\\b", ["a\\b"]),
    ("Path axb", ["ab"]),
    ("Path a_b", ["c"]),
    ("Café terrace", ["café"]),
    ("Cafe terrace", ["cafe"]),
)


@pytest.fixture
async def names(gql, make_user):
    _, token = await make_user("alice")
    for name, tags in PROJECTS:
        await gql(CREATE_PROJECT, {"input": {"displayName": name, "tags": tags}}, token=token)

    async def names(f):
        edges = (await gql(FILTERED_NAMES, {"f": f}, token=token))["projects"]["edges"]
        return sorted(e["node"]["displayName"] for e in edges)

    return names


async def test_a_tag_with_percent_or_underscore_matches_only_itself(names):
    assert await names({"tag": "50%"}) == ["Roof 50% done"]
    assert await names({"tag": "a_b"}) == ["Roof 50% done"]
    assert await names({"tag": "%"}) == []
    assert await names({"tag": "_"}) == []


async def test_a_tag_with_a_quote_matches_only_itself(names):
    assert await names({"tag": 'say "hi"'}) == ['Hall "west"']
    assert await names({"tag": "hi"}) == []


async def test_a_tag_with_a_backslash_matches_no_other_tag(names):
    """Unescaped, the backslash would make "a\\b" match the tag "ab"."""
    assert "Path axb" not in await names({"tag": "a\\b"})


async def test_a_tag_with_a_backslash_matches_only_itself(names):
    """The tags' JSON text doubles a backslash: a LIKE pattern that escaped it only once never
    matched (found by a mutant of has_tag)."""
    assert await names({"tag": "a\\b"}) == ["Path a\\b"]


async def test_a_tag_beyond_ascii_matches_only_itself(names):
    assert await names({"tag": "café"}) == ["Café terrace"]
    assert await names({"tag": "cafe"}) == ["Cafe terrace"]


async def test_a_search_with_percent_underscore_or_backslash_is_literal(names):
    assert await names({"search": "50%"}) == ["Roof 50% done"]
    assert await names({"search": "0_d"}) == []
    assert await names({"search": "a_b"}) == ["Path a_b"]  # not "Path axb"
    assert await names({"search": "a\\b"}) == ["Path a\\b"]
    assert await names({"search": "\\"}) == ["Path a\\b"]
    assert await names({"search": "%"}) == ["Roof 50% done"]
