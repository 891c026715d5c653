"""Idempotent executeAction (engine/cases.py): the same request replays whatever the key order
of its data, and a different one under the same key is refused with a code, a sentence and the
field. Written for mutants that survived `make mutants` (bench/MUTANTS.md)."""

from tests.fixtures.builders import bug_item
from tests.fixtures.documents import EXECUTE


async def test_an_idempotency_key_replays_the_same_request_and_refuses_another(gql, make_user):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    item = await bug_item(gql, sam, dev_id)
    first = {"workflowItemId": item["id"], "action": "comment", "comment": "hi", "idempotencyKey": "k-1"}
    done = (await gql(EXECUTE, {"input": {**first, "data": {"a": 1, "b": 2}}}, token=dev))["executeAction"]
    assert done["userErrors"] == [] and done["replayed"] is False

    same = (await gql(EXECUTE, {"input": {**first, "data": {"b": 2, "a": 1}}}, token=dev))["executeAction"]
    assert same["userErrors"] == []
    assert same["replayed"] is True
    assert same["activity"]["seq"] == done["activity"]["seq"]

    other = (await gql(EXECUTE, {"input": {**first, "comment": "bye"}}, token=dev))["executeAction"]
    assert other["userErrors"] == [
        {
            "code": "IDEMPOTENCY_KEY_REUSED",
            "message": "This idempotency key was already used for a different request.",
            "field": ["idempotencyKey"],
        }
    ]
