"""The checks at definition over GraphQL (issue 37): validateWorkflow reports every finding
without defining anything; defineWorkflow refuses a spec with an ERROR (INVALID_SPEC in
userErrors, every finding in diagnostics) and defines one with warnings only, returning them.
Each check's own cases are in tests/engine/test_spec_analysis.py."""

import copy

from tests.fixtures.documents import VIEWER

VALIDATE_WORKFLOW = """query($spec: JSON!) { validateWorkflow(spec: $spec) {
  diagnostics { code severity path message hint } userErrors { code message field } } }"""
DEFINE_WITH_DIAGNOSTICS = """mutation($spec: JSON!) { defineWorkflow(input: {spec: $spec}) {
  workflow { shortName version } diagnostics { code severity path message hint }
  userErrors { code message field } } }"""
WORKFLOW_NAMES = """{ workflows(first: 100) { edges { node { shortName version } } } }"""

EXPENSE = {
    "short_name": "expense",
    "roles": {"clerk": {"callbacks": ["creation_user"]}, "boss": {"callbacks": ["subproject_validator"]}},
    "states": {"open": {}, "review": {}, "paid": {"terminal": True}},
    "actions": {
        "start": {"trigger": "init", "new_state": "open"},
        "submit": {"assigned_role": "clerk", "assigned_states": ["open"], "new_state": "review"},
        "pay": {"assigned_role": "boss", "assigned_states": ["review"], "new_state": "paid"},
    },
}


def expense(**changes: dict) -> dict:
    spec = copy.deepcopy(EXPENSE)
    for key, entries in changes.items():
        spec[key].update(entries)
    return spec


# An archived state nothing leads to (an error) and a reminder that starts over (a warning).
BROKEN = expense(
    states={"archived": {"terminal": True}},
    actions={"remind": {"trigger": "time", "timeout_seconds": 3600, "enabled_states": ["review"]}},
)
CAPPED = expense(
    actions={"remind": {"trigger": "time", "timeout_seconds": 3600, "enabled_states": ["review"], "new_state": "paid"}}
)


def codes(diagnostics: list[dict]) -> list[tuple[str, str, list[str]]]:
    return [(d["code"], d["severity"], d["path"]) for d in diagnostics]


async def names(gql, token) -> list[tuple[str, int]]:
    edges = (await gql(WORKFLOW_NAMES, token=token))["workflows"]["edges"]
    return [(e["node"]["shortName"], e["node"]["version"]) for e in edges]


async def test_validate_reports_every_finding_and_defines_nothing(gql, make_user):
    _, admin = await make_user("root", admin=True)
    before = await names(gql, admin)
    answer = (await gql(VALIDATE_WORKFLOW, {"spec": BROKEN}, token=admin))["validateWorkflow"]
    assert answer["userErrors"] == []
    assert codes(answer["diagnostics"]) == [
        ("UNREACHABLE_STATE", "ERROR", ["states", "archived"]),
        ("TIMER_REPEATS", "WARNING", ["actions", "remind"]),
    ]
    unreachable = answer["diagnostics"][0]
    assert unreachable["message"] == (
        "State 'archived' is never reached: no action leads there from 'open', where a case starts."
    )
    assert "'archived'" in unreachable["hint"]
    assert await names(gql, admin) == before  # nothing defined

    clean = (await gql(VALIDATE_WORKFLOW, {"spec": EXPENSE}, token=admin))["validateWorkflow"]
    assert clean == {"diagnostics": [], "userErrors": []}


async def test_validate_reports_key_by_key_mistakes_and_missing_parties_in_the_same_shape(gql, make_user):
    _, admin = await make_user("root", admin=True)
    typo = expense(actions={"pay": {"assigned_role": "boss", "assigned_states": ["review"], "new_state": "payd"}})
    answer = (await gql(VALIDATE_WORKFLOW, {"spec": typo}, token=admin))["validateWorkflow"]
    assert [(d["code"], d["path"], d["message"]) for d in answer["diagnostics"]] == [
        ("INVALID_SPEC", ["actions", "pay", "new_state"], "Action 'pay' names unknown state 'payd'.")
    ]
    nobody = expense(roles={"auditors": {"static_parties": ["usr_gone"]}})
    answer = (await gql(VALIDATE_WORKFLOW, {"spec": nobody}, token=admin))["validateWorkflow"]
    assert codes(answer["diagnostics"]) == [("INVALID_SPEC", "ERROR", ["roles", "auditors", "static_parties"])]


async def test_validate_needs_the_right_to_define_workflows(gql, make_user):
    _, alice = await make_user("alice")
    assert (await gql(VIEWER, token=alice))["viewer"]["login"] == "alice"
    answer = (await gql(VALIDATE_WORKFLOW, {"spec": BROKEN}, token=alice))["validateWorkflow"]
    assert answer["diagnostics"] == []
    assert [e["code"] for e in answer["userErrors"]] == ["NOT_ALLOWED"]


async def test_define_refuses_an_error_with_every_finding_and_returns_warnings_with_the_workflow(gql, make_user):
    _, admin = await make_user("root", admin=True)
    refused = (await gql(DEFINE_WITH_DIAGNOSTICS, {"spec": BROKEN}, token=admin))["defineWorkflow"]
    assert refused["workflow"] is None
    assert [(e["code"], e["field"]) for e in refused["userErrors"]] == [
        ("INVALID_SPEC", ["spec", "states", "archived"])  # the errors only
    ]
    assert codes(refused["diagnostics"]) == [
        ("UNREACHABLE_STATE", "ERROR", ["states", "archived"]),
        ("TIMER_REPEATS", "WARNING", ["actions", "remind"]),
    ]
    assert ("expense", 1) not in await names(gql, admin)

    warned = expense(actions={"remind": {"trigger": "time", "timeout_seconds": 3600, "enabled_states": ["review"]}})
    defined = (await gql(DEFINE_WITH_DIAGNOSTICS, {"spec": warned}, token=admin))["defineWorkflow"]
    assert defined["userErrors"] == [] and defined["workflow"] == {"shortName": "expense", "version": 1}
    assert codes(defined["diagnostics"]) == [("TIMER_REPEATS", "WARNING", ["actions", "remind"])]

    fixed = (await gql(DEFINE_WITH_DIAGNOSTICS, {"spec": CAPPED}, token=admin))["defineWorkflow"]
    assert fixed["workflow"] == {"shortName": "expense", "version": 2} and fixed["diagnostics"] == []
