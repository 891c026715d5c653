"""GraphQL over HTTP's media types (issue 24 point 7): `application/graphql-response+json` when
the client prefers it, with status 400 and no `data` for a request error (parse, validation,
variable coercion); `application/json` keeps 200 and `data: null` (the legacy rules)."""

import pytest

NEW = "application/graphql-response+json"
QUERY_WITH_VARIABLE = "query($f: Int) { projects(first: $f) { totalCount } }"

REQUEST_ERRORS = {
    "parse": ({"query": "{"}, "GRAPHQL_PARSE_FAILED"),
    "validation": ({"query": "{ nope }"}, "GRAPHQL_VALIDATION_FAILED"),
    "variable coercion": ({"query": QUERY_WITH_VARIABLE, "variables": {"f": "ten"}}, "BAD_USER_INPUT"),
}


@pytest.mark.parametrize("kind", REQUEST_ERRORS)
async def test_a_request_error_is_400_without_data_under_the_new_media_type(app_client, kind):
    body, code = REQUEST_ERRORS[kind]
    response = await app_client.post("/graphql", json=body, headers={"Accept": NEW})
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith(NEW)
    answer = response.json()
    assert "data" not in answer and answer["errors"][0]["extensions"]["code"] == code


@pytest.mark.parametrize("kind", REQUEST_ERRORS)
async def test_a_request_error_is_200_with_null_data_under_application_json(app_client, kind):
    body, code = REQUEST_ERRORS[kind]
    for accept in ("application/json", None, "*/*"):
        response = await app_client.post("/graphql", json=body, headers={"Accept": accept} if accept else {})
        assert response.status_code == 200, (accept, response.text)
        assert response.headers["content-type"] == "application/json"
        answer = response.json()
        assert answer["data"] is None and answer["errors"][0]["extensions"]["code"] == code


async def test_a_field_error_is_200_with_data_under_the_new_media_type(app_client):
    """Executed: not authenticated is a field error, with a path, and `data: null` is its answer."""
    response = await app_client.post("/graphql", json={"query": "{ viewer { login } }"}, headers={"Accept": NEW})
    assert response.status_code == 200 and response.headers["content-type"].startswith(NEW)
    answer = response.json()
    assert answer["data"] is None and answer["errors"][0]["path"] == ["viewer"]


async def test_a_success_answers_in_the_preferred_media_type(app_client, make_user):
    _, token = await make_user("ada")
    auth = {"Authorization": f"Bearer {token}"}
    cases = {
        NEW: NEW,
        f"application/json;q=0.5, {NEW}": NEW,
        f"{NEW};q=0.4, application/json": "application/json",
        f"application/json, {NEW}": "application/json",  # equal q: the first named
        "text/html": "application/json",
    }
    for accept, expected in cases.items():
        response = await app_client.post(
            "/graphql", json={"query": "{ viewer { login } }"}, headers={**auth, "Accept": accept}
        )
        assert response.status_code == 200 and response.json()["data"] == {"viewer": {"login": "ada"}}
        assert response.headers["content-type"].split(";")[0] == expected, accept
