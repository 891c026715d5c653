"""Introspection inside the cost limit (issue 40, finding 1): 50 aliases of a `__schema` fragment
held the server for seconds; now each introspection's nodes are counted over the schema and at
most one full introspection is answered, which GraphiQL's own query still gets."""

from graphql import build_client_schema, get_introspection_query, graphql_sync, print_schema

from schema import schema

SCHEMA_FRAGMENT = (
    "fragment S on __Schema { types { name fields { name args { name type { name ofType { name } } } "
    "type { name ofType { name ofType { name } } } } } }"
)


def aliases_of_schema(count: int) -> str:
    return "{ " + " ".join(f"a{i}: __schema {{ ...S }}" for i in range(count)) + " } " + SCHEMA_FRAGMENT


def codes(body: dict) -> list[str]:
    return [e.get("extensions", {}).get("code") for e in body.get("errors", [])]


async def test_fifty_aliases_of_a_schema_fragment_are_refused_before_anything_runs(app_client):
    body = (await app_client.post("/graphql", json={"query": aliases_of_schema(50)})).json()

    assert body["data"] is None and codes(body) == ["QUERY_TOO_COSTLY"], body
    message = body["errors"][0]["message"]
    assert message.startswith("The query's introspection asks for more than the whole schema (at most ")
    assert message.endswith("one full introspection, are allowed); ask for it once.")
    assert len(body["errors"]) == 1


async def test_aliases_of_descriptions_are_refused_by_the_bytes_they_would_answer(app_client):
    """Issue 47, finding 5: bounded in objects alone, ten aliases of `description` on every type
    and field answered 313 KB (49: 1.5 MB), more than the whole schema's introspection (226 KB)
    with no more objects; the walk now counts the answer's bytes too."""
    descriptions = " ".join(f"d{i}: description" for i in range(10))
    body = (
        await app_client.post(
            "/graphql",
            json={"query": f"{{ __schema {{ types {{ name {descriptions} fields {{ name {descriptions} }} }} }} }}"},
        )
    ).json()
    assert body["data"] is None and codes(body) == ["QUERY_TOO_COSTLY"], str(body)[:500]
    assert " bytes, one full introspection, are allowed" in body["errors"][0]["message"]
    one = "{ __schema { types { name description fields { name description } } } }"
    answered = (await app_client.post("/graphql", json={"query": one})).json()
    assert "errors" not in answered and len(answered["data"]["__schema"]["types"]) > 50


async def test_the_full_introspection_is_answered_as_graphql_core_answers_it_and_again_the_same(app_client):
    """GraphiQL's query (graphql-core's with every option is a superset of it), twice: the
    second answer comes from the cache and must be the first one. graphql-core executing it on
    the bare schema is the reference."""
    options = {"specified_by_url": True, "directive_is_repeatable": True, "input_value_deprecation": True}
    query = get_introspection_query(descriptions=True, schema_description=True, **options)
    first = (await app_client.post("/graphql", json={"query": query})).json()
    again = (await app_client.post("/graphql", json={"query": query})).json()

    assert "errors" not in first, first
    assert first["data"] == graphql_sync(schema._schema, query).data
    assert print_schema(build_client_schema(first["data"])) == print_schema(schema._schema)
    assert again == first
    assert 0 < first["extensions"]["cost"]["requested"] < first["extensions"]["cost"]["limit"]


async def test_introspection_nodes_count_in_the_reported_cost(app_client):
    body = (await app_client.post("/graphql", json={"query": "{ __schema { types { name } } }"})).json()

    types = body["data"]["__schema"]["types"]
    assert len(types) > 50
    assert body["extensions"]["cost"]["requested"] == 1 + len(types)  # the schema object and each type


async def test_two_full_schemas_in_one_request_are_refused_but_small_introspections_are_answered(app_client):
    two = "{ a: __schema { types { name fields { name } } } b: __schema { types { name fields { name } } } }"
    one = "{ a: __schema { types { name fields { name } } } }"
    small = "{ " + " ".join(f'a{i}: __type(name: "Query") {{ name }}' for i in range(20)) + " }"

    assert codes((await app_client.post("/graphql", json={"query": one})).json()) == []
    assert codes((await app_client.post("/graphql", json={"query": two})).json()) == []  # names only: small
    refused = (await app_client.post("/graphql", json={"query": aliases_of_schema(2)})).json()
    answered = (await app_client.post("/graphql", json={"query": small})).json()

    assert codes(refused) == ["QUERY_TOO_COSTLY"]
    assert answered["data"] == {f"a{i}": {"name": "Query"} for i in range(20)}


async def test_a_cached_answer_is_kept_per_variables(app_client):
    """`__type(name: $n)` answers for the type asked for, not the one asked first."""
    query = "query Kind($n: String!) { __type(name: $n) { name kind fields { name } } }"
    answers = {}
    for name in ("Query", "Mutation", "Query", "UserError"):
        body = (await app_client.post("/graphql", json={"query": query, "variables": {"n": name}})).json()
        answers.setdefault(name, []).append(body)

    assert [b["data"]["__type"]["name"] for b in answers["Query"]] == ["Query", "Query"]
    assert answers["Mutation"][0]["data"]["__type"]["name"] == "Mutation"
    assert answers["Query"][0]["data"]["__type"]["fields"] != answers["Mutation"][0]["data"]["__type"]["fields"]
    mutation_fields = len(answers["Mutation"][0]["data"]["__type"]["fields"])
    assert answers["Mutation"][0]["extensions"]["cost"]["requested"] == 1 + mutation_fields
    assert answers["UserError"][0]["data"]["__type"]["kind"] == "OBJECT"


async def test_an_introspection_beside_other_fields_is_answered_for_its_viewer(gql, make_user):
    """Only an operation of introspection fields alone is served from the cache."""
    _, alice = await make_user("alice")
    _, bob = await make_user("bob")
    query = '{ __type(name: "Query") { name } viewer { login } }'

    assert (await gql(query, token=alice))["viewer"]["login"] == "alice"
    assert (await gql(query, token=bob))["viewer"]["login"] == "bob"
