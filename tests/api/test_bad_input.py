"""Bad input gets INVALID_INPUT, never "Unexpected error." (issue 19, finding 7).

Each request goes through HTTP as a client would send it (some bodies are written by hand:
httpx cannot encode NaN or a lone surrogate), and each refusal is checked to change nothing.
"""

import json
from typing import Any

import pytest

from tests.fixtures.builders import build_tree
from tests.fixtures.documents import CREATE_ITEM, CREATE_PROJECT, DEFINE, EXECUTE, HISTORY, LOGIN, MARK_READ, REORDER

PROJECTS_PAGE = """query($first: Int, $after: String, $filter: ProjectFilter) {
  projects(first: $first, after: $after, filter: $filter) { totalCount edges { node { displayName } } } }"""
REASSIGN_PARTIES = """mutation($item: ID!, $ids: [ID!]!) { reassignRole(input: {workflowItemId: $item,
  role: "assignee", partyIds: $ids}) { userErrors { code message field } } }"""
LOG_COUNT = """query($id: ID!) { node(id: $id) { ... on WorkflowItem { case { version log { totalCount } } } } }"""


async def post(app_client, body: str | dict[str, Any], token: str | None = None) -> dict[str, Any]:
    """POST a body (a dict, or JSON text written by hand) and return the answer, which must be
    a 200 with no "Unexpected error."."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if isinstance(body, dict):
        response = await app_client.post("/graphql", json=body, headers=headers)
    else:
        response = await app_client.post(
            "/graphql", content=body.encode(), headers={**headers, "content-type": "application/json"}
        )
    assert response.status_code == 200, response.text
    answer = response.json()
    assert "Unexpected error." not in response.text, answer
    return answer


def by_hand(query: str, variables: str) -> str:
    """A body whose variables are JSON text written by hand."""
    return '{"query": ' + json.dumps(query) + ', "variables": ' + variables + "}"


def refused(answer: dict[str, Any], field: list[str] | None = None) -> str:
    """The answer is one INVALID_INPUT GraphQL error (about ``field``) and no data; its message."""
    assert answer.get("data") is None, answer
    [error] = answer["errors"]
    assert error["extensions"]["code"] == "INVALID_INPUT", error
    if field is not None:
        assert error["extensions"]["field"] == field, error
    return error["message"]


def user_error(payload: dict[str, Any], field: list[str], code: str = "INVALID_INPUT") -> str:
    [error] = payload["userErrors"]
    assert (error["code"], error["field"]) == (code, field), error
    return error["message"]


@pytest.fixture
async def tree(gql, make_user):
    _, admin = await make_user("root", admin=True)
    project, sub, ids = await build_tree(gql, admin, items=2)
    return {"token": admin, "project": project, "sub": sub, "items": ids}


async def test_nul_in_unauthenticated_login_is_refused_before_the_database(
    app_client, gql, make_user, count_statements
):
    await make_user("alice")
    with count_statements() as counter:
        answer = await post(app_client, {"query": LOGIN, "variables": {"login": "ali\x00ce", "password": "x"}})
    assert "NUL" in refused(answer, ["login"]) and counter.count == 0
    literal = 'mutation { login(input: {login: "ali\\u0000ce", password: "x"}) { token } }'
    assert "NUL" in refused(await post(app_client, {"query": literal}))
    ok = await gql(LOGIN, {"login": "alice", "password": "password123"})
    assert ok["login"]["token"]  # the throttle, if any, did not count the refused attempts as failures


@pytest.mark.parametrize(
    "raw_value",
    [r'"\ud800"', r'"a\udfffb"', r'"\ud83d"'],  # lone high, lone low, half of an emoji's pair
)
async def test_lone_surrogates_in_variables_are_refused(app_client, tree, raw_value):
    body = by_hand(CREATE_PROJECT, '{"input": {"displayName": ' + raw_value + "}}")
    assert "surrogate" in refused(await post(app_client, body, tree["token"]), ["input", "displayName"])
    # a proper pair (an emoji) is ordinary text
    good = by_hand(CREATE_PROJECT, r'{"input": {"displayName": "\ud83d\ude00"}}')
    created = (await post(app_client, good, tree["token"]))["data"]["createProject"]
    assert created["project"]["displayName"] == "\N{GRINNING FACE}"


async def test_lone_surrogate_in_a_literal_is_refused(app_client, tree):
    # Written raw into the document, or as a GraphQL escape: graphql-core's lexer refuses both
    # as a syntax error (a clear error before anything runs; the guard's rule is not reached).
    for literal in ("x\ud800", "x\\ud800"):
        query = 'mutation { createProject(input: {displayName: "' + literal + '"}) { project { id } } }'
        answer = await post(app_client, json.dumps({"query": query}), tree["token"])
        assert answer.get("data") is None and "Syntax Error" in answer["errors"][0]["message"]


async def test_nul_anywhere_is_refused_and_changes_nothing(app_client, gql, tree):
    item = tree["items"][0]
    inputs = [
        (CREATE_PROJECT, {"input": {"displayName": "ok", "description": "a\x00b"}}, ["input", "description"]),
        (CREATE_PROJECT, {"input": {"displayName": "ok", "tags": ["fine", "b\x00d"]}}, ["input", "tags", "1"]),
        (EXECUTE, {"input": {"workflowItemId": item, "action": "comment", "comment": "\x00"}}, ["input", "comment"]),
        (EXECUTE, {"input": {"workflowItemId": item, "action": "comment", "data": {"k": ["\x00"]}}}, None),
        (EXECUTE, {"input": {"workflowItemId": item, "action": "comment", "data": {"k\x00": 1}}}, None),
    ]
    for document, variables, field in inputs:
        refused(await post(app_client, {"query": document, "variables": variables}, tree["token"]), field)
    projects = await gql(PROJECTS_PAGE, token=tree["token"])
    assert projects["projects"]["totalCount"] == 1  # only build_tree's
    case = (await gql(LOG_COUNT, {"id": item}, token=tree["token"]))["node"]["case"]
    assert case["version"] == 0


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
async def test_json_data_refuses_non_finite_numbers(app_client, gql, tree, number):
    item = tree["items"][0]
    variables = '{"input": {"workflowItemId": "' + item + '", "action": "comment", "data": {"x": [1, ' + number + "]}}}"
    message = refused(await post(app_client, by_hand(EXECUTE, variables), tree["token"]))
    assert "input.data.x[1]" in message
    case = (await gql(LOG_COUNT, {"id": item}, token=tree["token"]))["node"]["case"]
    assert case["version"] == 0


async def test_json_literals_refuse_numbers_beyond_a_double(app_client, tree):
    query = (
        'mutation { executeAction(input: {workflowItemId: "%s", action: "comment", data: {x: 1e400}}) { replayed } }'
    )
    answer = await post(app_client, {"query": query % tree["items"][0]}, tree["token"])
    assert answer.get("data") is None and answer["errors"][0]["extensions"]["code"] == "INVALID_INPUT"


async def test_json_values_are_bounded_in_depth_and_size(app_client, tree):
    deep: Any = "leaf"
    for _ in range(25):
        deep = {"d": deep}
    item = tree["items"][0]
    answer = await post(
        app_client,
        {"query": EXECUTE, "variables": {"input": {"workflowItemId": item, "action": "comment", "data": deep}}},
        tree["token"],
    )
    assert "nested deeper than 20" in refused(answer, ["input", "data"])
    wide = {"rows": [[i, i] for i in range(8000)]}
    answer = await post(
        app_client,
        {"query": EXECUTE, "variables": {"input": {"workflowItemId": item, "action": "comment", "data": wide}}},
        tree["token"],
    )
    assert "more than 20000 values" in refused(answer, ["input", "data"])
    key = {"k" * 201: 1}
    answer = await post(
        app_client,
        {"query": EXECUTE, "variables": {"input": {"workflowItemId": item, "action": "comment", "data": key}}},
        tree["token"],
    )
    assert "A key of input.data is longer than 200" in refused(answer, ["input", "data"])


async def test_strings_ids_and_lists_have_ceilings(app_client, tree):
    token = tree["token"]
    huge = {"input": {"displayName": "x", "description": "d" * 10_001}}
    assert "longer than 10000" in refused(
        await post(app_client, {"query": CREATE_PROJECT, "variables": huge}, token), ["input", "description"]
    )
    long_id = {"input": {"displayName": "x", "assigneeId": "usr_" + "9" * 100}}
    assert "longer than 100" in refused(
        await post(app_client, {"query": CREATE_PROJECT, "variables": long_id}, token), ["input", "assigneeId"]
    )
    ordering = {"s": tree["sub"]["id"], "ordering": [f"wfi_{i}" for i in range(10_001)]}
    assert "more than 10000 items" in refused(
        await post(app_client, {"query": REORDER, "variables": ordering}, token), ["ordering"]
    )


async def test_verbs_bound_their_own_inputs(gql, tree):
    token, item = tree["token"], tree["items"][0]
    before = (await gql(LOG_COUNT, {"id": item}, token=token))["node"]["case"]
    key = {"input": {"workflowItemId": item, "action": "comment", "idempotencyKey": "k" * 201}}
    assert "200" in user_error((await gql(EXECUTE, key, token=token))["executeAction"], ["idempotencyKey"])
    blank = {"input": {"workflowItemId": item, "action": "comment", "idempotencyKey": " "}}
    user_error((await gql(EXECUTE, blank, token=token))["executeAction"], ["idempotencyKey"])
    comment = {"input": {"workflowItemId": item, "action": "comment", "comment": "c" * 5001}}
    assert "5000" in user_error((await gql(EXECUTE, comment, token=token))["executeAction"], ["comment"])
    ids = {"ids": [f"ntf_{i}" for i in range(1001)]}
    assert "1000" in user_error((await gql(MARK_READ, ids, token=token))["markNotificationsRead"], ["ids"])
    for amount in ["1e999999999", "NaN", "Infinity", "0x10", "1" * 41]:
        created = await gql(
            CREATE_ITEM,
            {
                "input": {
                    "subprojectId": tree["sub"]["id"],
                    "displayName": "Paid",
                    "amountType": "ALLOCATED",
                    "amount": amount,
                    "currency": "EUR",
                }
            },
            token=token,
        )
        user_error(created["createWorkflowItem"], ["amount"])
    case = (await gql(LOG_COUNT, {"id": item}, token=token))["node"]["case"]
    assert case == before


@pytest.mark.parametrize(
    ("after", "where"),
    [
        (str(2**63), "history"),
        ("99999999999999999999999", "history"),
        ("-1", "history"),
        (" 12", "history"),
        ("1_000", "history"),
        ("garbage", "projects"),
        ("prj_' OR 1=1 --", "projects"),
    ],
)
async def test_cursors_are_validated(app_client, tree, after, where):
    if where == "history":
        body = {"query": HISTORY, "variables": {"id": tree["project"]["id"], "after": after}}
    else:
        body = {"query": PROJECTS_PAGE, "variables": {"after": after}}
    answer = await post(app_client, body, tree["token"])
    [error] = answer["errors"]
    assert error["extensions"] == {"code": "INVALID_INPUT", "field": ["after"]}


async def test_a_real_history_cursor_still_pages(gql, tree):
    first = (await gql(HISTORY, {"id": tree["project"]["id"], "first": 1}, token=tree["token"]))["node"]["history"]
    cursor = first["pageInfo"]["endCursor"]
    rest = (await gql(HISTORY, {"id": tree["project"]["id"], "after": cursor}, token=tree["token"]))["node"]
    assert rest["history"]["totalCount"] == first["totalCount"] and rest["history"]["edges"]
    assert all(int(e["cursor"]) > int(cursor) for e in rest["history"]["edges"])


async def test_first_and_filters_are_bounded(app_client, tree):
    for first in (-1, 101):
        answer = await post(app_client, {"query": PROJECTS_PAGE, "variables": {"first": first}}, tree["token"])
        assert answer["errors"][0]["extensions"] == {"code": "INVALID_INPUT", "field": ["first"]}
    answer = await post(
        app_client, {"query": PROJECTS_PAGE, "variables": {"filter": {"search": "x" * 201}}}, tree["token"]
    )
    assert answer["errors"][0]["extensions"] == {"code": "INVALID_INPUT", "field": ["filter", "search"]}
    ok = await post(app_client, {"query": PROJECTS_PAGE, "variables": {"filter": {"search": "Sch"}}}, tree["token"])
    assert ok["data"]["projects"]["totalCount"] == 1


async def test_odd_values_get_clear_errors(app_client, gql, tree):
    token, item = tree["token"], tree["items"][0]
    answers = [
        await post(app_client, {"query": CREATE_PROJECT, "variables": {"input": {"displayName": ""}}}, token),
        await post(
            app_client,
            {
                "query": EXECUTE,
                "variables": {"input": {"workflowItemId": item, "action": "", "expectedVersion": 2**31}},
            },
            token,
        ),
        await post(
            app_client,
            {
                "query": CREATE_ITEM,
                "variables": {
                    "input": {"subprojectId": tree["sub"]["id"], "displayName": "x", "dueDate": "10000-01-01"}
                },
            },
            token,
        ),
        await post(app_client, {"query": REASSIGN_PARTIES, "variables": {"item": item, "ids": [""]}}, token),
        await post(app_client, {"query": DEFINE, "variables": {"spec": "not an object"}}, token),
    ]
    for answer in answers:  # `post` already asserted: a 200 and no "Unexpected error."
        assert answer.get("errors") or any(
            payload.get("userErrors") for payload in (answer.get("data") or {}).values() if payload
        ), answer


@pytest.mark.parametrize(
    ("bound", "value"), [("from", "0001-01-01T00:00:00+14:00"), ("to", "9999-12-31T23:59:59-14:00")]
)
async def test_history_filter_instants_outside_utc_years_are_refused(app_client, gql, tree, bound, value):
    variables = {"id": tree["project"]["id"], "filter": {bound: value}}
    answer = await post(app_client, {"query": HISTORY, "variables": variables}, tree["token"])
    assert answer["errors"][0]["extensions"] == {"code": "INVALID_INPUT", "field": ["filter", bound]}
    # the same instant written in UTC, and an ordinary offset, still filter
    around = {"from": "2000-01-01T05:00:00+05:00", "to": "9999-12-31T23:59:59+00:00"}
    page = (await gql(HISTORY, {"id": tree["project"]["id"], "filter": around}, token=tree["token"]))["node"]
    assert page["history"]["totalCount"] > 0
