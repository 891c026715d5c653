"""An item's money fields refused in words a person reads in the item form (issue 50 point 5):
the sentence names the amount types as the form does, never "amountType is N/A", and keeps the
code and the field the form shows it at. A refused item is not created."""

import pytest

from tests.fixtures.documents import CREATE_ITEM, CREATE_PROJECT, CREATE_SUBPROJECT, ITEMS

NO_AMOUNT = "leave it empty, or choose the amount type Allocated or Disbursed."


@pytest.mark.parametrize(
    ("given", "field", "message"),
    [
        ({"amount": "10"}, "amount", f"An item with no amount has no amount: {NO_AMOUNT}"),
        ({"currency": "EUR"}, "currency", f"An item with no amount has no currency: {NO_AMOUNT}"),
        ({"exchangeRate": "1.1"}, "exchangeRate", f"An item with no amount has no exchange rate: {NO_AMOUNT}"),
        ({"billingDate": "2030-01-01"}, "billingDate", f"An item with no amount has no billing date: {NO_AMOUNT}"),
        ({"amountType": "DISBURSED"}, "amount", "Give the amount: the item's amount type is Disbursed."),
        (
            {"amountType": "PAID", "amount": "1"},
            "amountType",
            "The amount type is N/A (no amount), ALLOCATED (allocated) or DISBURSED (disbursed).",
        ),
    ],
)
async def test_money_fields_are_refused_in_words_at_their_field(gql, make_user, given, field, message):
    _, alice = await make_user("alice")
    project = (await gql(CREATE_PROJECT, {"input": {"displayName": "Roof"}}, token=alice))["createProject"]
    sub = (
        await gql(
            CREATE_SUBPROJECT,
            {"input": {"projectId": project["project"]["id"], "displayName": "Tiles", "currency": "EUR"}},
            token=alice,
        )
    )["createSubproject"]["subproject"]
    answer = await gql(
        CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": "Ridge", **given}}, token=alice
    )
    refused = answer["createWorkflowItem"]
    assert refused["workflowItem"] is None
    assert refused["userErrors"] == [{"code": "INVALID_INPUT", "message": message, "field": [field]}]
    assert (await gql(ITEMS, {"s": sub["id"]}, token=alice))["node"]["workflowItems"]["totalCount"] == 0
