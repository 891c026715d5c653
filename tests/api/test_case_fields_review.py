"""Holes in case fields and rules found by review, each shown through the public API: a condition
whose cost multiplied, an enabled_when over an empty optional field that refused unrelated
actions, an empty title, an unbounded `fields`, and a log entry's hash that let a reader test
guesses of a hidden field's value."""

import copy
import json

from tests.api.test_case_fields_api import (
    CASE_FIELDS,
    DIAGNOSE,
    EXECUTE_WITH_FIELDS,
    GOOD,
    PURCHASE,
    purchase,
    run,
)

HASHES = """query($id: ID!) { node(id: $id) { ... on WorkflowItem { case {
  log { edges { node { action data hash prevHash } } } } } } }"""


async def test_conditions_whose_cost_multiplies_are_refused_at_definition(gql, make_user):
    _, admin = await make_user("root", admin=True)
    chained = "[[1,2,3,4,5,6,7,8]].map(a,a+a).map(a,a+a).map(a,a+a).exists(z, z.exists(y, y < 0))"
    cases = {
        chained: ".exists() runs over actor.roles or a list of plain values",
        "actor.roles.exists(r, actor.roles.exists(s, s == r))": "inside another list macro",
        "foo(fields.vendor)": "It calls foo()",
        "fields.vendor.matches('(')": "is not a valid regular expression",
        "(" * 12 + "fields.quantity > 1" + ")" * 12: "nested too deeply",
    }
    for condition, sentence in cases.items():
        spec = copy.deepcopy(PURCHASE)
        spec["actions"]["submit"]["routes"][0]["when"] = condition
        found = (await gql(DIAGNOSE, {"spec": spec}, token=admin))["defineWorkflow"]
        assert found["workflow"] is None, condition
        messages = [d["message"] for d in found["diagnostics"] if d["code"] == "INVALID_CONDITION"]
        assert any(sentence in m for m in messages), (condition, messages)
    spec = copy.deepcopy(PURCHASE)
    spec["actions"]["submit"]["routes"][0]["when"] = "actor.roles.exists(r, r == 'cfo') && fields.amount > 1.0"
    assert (await gql(DIAGNOSE, {"spec": spec}, token=admin))["defineWorkflow"]["workflow"] is not None


async def test_an_enabled_when_over_an_empty_optional_field_refuses_nothing_else(gql, make_user):
    """expedite asks fields.urgency, which submit leaves empty here: expedite is not enabled, and
    submit (which triggers the question) is not refused for it."""
    item, alice, _ = await purchase(gql, make_user)
    without_urgency = {key: value for key, value in GOOD.items() if key != "urgency"}
    done = (await gql(EXECUTE_WITH_FIELDS, run(item, "submit", fields=without_urgency), token=alice))["executeAction"]
    assert done["userErrors"] == []
    assert "expedite" not in [a["action"]["shortName"] for a in done["case"]["enabledActions"]]


async def test_a_title_that_renders_empty_reads_the_default_sentence(gql, make_user):
    spec = copy.deepcopy(PURCHASE)
    spec["fields"]["memo"] = {"type": "string", "label": "Memo"}
    spec["actions"]["approve"]["fields"] = ["memo"]
    spec["actions"]["approve"]["log_title"] = "{fields.memo}"
    item, alice, _ = await purchase(gql, make_user, spec)
    await gql(EXECUTE_WITH_FIELDS, run(item, "submit", fields=GOOD), token=alice)
    done = (await gql(EXECUTE_WITH_FIELDS, run(item, "approve", fields={"memo": ""}), token=alice))["executeAction"]
    assert done["activity"]["title"] == "Approved by alice"


async def test_fields_naming_more_than_a_hundred_is_one_refusal(gql, make_user):
    item, alice, _ = await purchase(gql, make_user)
    many = {f"f{n}": n for n in range(5000)}
    refused = (await gql(EXECUTE_WITH_FIELDS, run(item, "submit", fields=many), token=alice))["executeAction"]
    assert refused["userErrors"] == [
        {"code": "INVALID_FIELD", "message": "fields names at most 100 fields; this names 5,000.", "field": ["fields"]}
    ]


async def test_an_entry_recording_a_hidden_change_shows_its_hash_only_to_those_who_see_it(gql, make_user):
    """budget_note is hidden in review from all but admins and the CFO: alice sees submit's entry
    without its change, and without the hash that would let her test a guess of it."""
    item, alice, admin = await purchase(gql, make_user)
    await gql(EXECUTE_WITH_FIELDS, run(item, "submit", fields=GOOD), token=alice)
    mine = (await gql(HASHES, {"id": item["id"]}, token=alice))["node"]["case"]["log"]["edges"]
    theirs = (await gql(HASHES, {"id": item["id"]}, token=admin))["node"]["case"]["log"]["edges"]
    submitted = next(e["node"] for e in mine if e["node"]["action"] == "submit")
    seen = next(e["node"] for e in theirs if e["node"]["action"] == "submit")
    assert "budget_note" not in submitted["data"]["fields"] and (submitted["hash"], submitted["prevHash"]) == (
        None,
        None,
    )
    assert seen["data"]["fields"]["budget_note"] == {"from": None, "to": "from Q4"}
    assert len(seen["hash"]) == 64 and seen["prevHash"] is not None
    created = next(e["node"] for e in mine if e["node"]["action"] != "submit")
    assert created["hash"] is not None  # an entry without hidden changes keeps its hash for everyone
    case = (await gql(CASE_FIELDS, {"id": item["id"]}, token=alice))["node"]["case"]
    assert "budget_note" not in json.dumps(case) and "from Q4" not in json.dumps(case)
