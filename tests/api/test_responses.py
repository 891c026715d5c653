"""Responses are encoded with orjson, falling back to json for what orjson refuses."""

from tests.api.documents import CREATE_PROJECT

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
