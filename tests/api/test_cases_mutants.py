"""Idempotent executeAction (engine/cases/execution.py): the same request replays whatever the key order
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


async def _refusal(gql, token, item_id, action):
    body = await gql(EXECUTE, {"input": {"workflowItemId": item_id, "action": action}}, token=token)
    return body["executeAction"]["userErrors"]


async def test_an_action_not_enabled_now_is_named_with_its_field(gql, make_user):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    item = await bug_item(gql, sam, dev_id)
    assert await _refusal(gql, dev, item["id"], "close") == [
        {"code": "ACTION_NOT_ENABLED", "message": "'close' is not enabled in this case now.", "field": ["action"]}
    ]


async def test_an_unknown_action_is_shown_whole_up_to_the_name_limit(gql, make_user):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    item = await bug_item(gql, sam, dev_id)
    whole, cut = "x" * 64, "y" * 65
    [shown] = await _refusal(gql, dev, item["id"], whole)
    assert shown["code"] == "UNKNOWN_ACTION" and shown["field"] == ["action"]
    assert f"has no action '{whole}';" in shown["message"]
    [truncated] = await _refusal(gql, dev, item["id"], cut)
    assert f"has no action '{'y' * 64}…';" in truncated["message"]
