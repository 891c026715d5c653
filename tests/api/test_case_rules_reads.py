"""A condition is evaluated over what it reads alone (engine/spec/rule_tree.py's members_read,
engine/cases/case_rules.py): routes that read different fields, the case and the actor's roles
each see what they name, and an enabled_when too; and a new version of the workflow gets its own
patterns and conditions (they are compiled with it), through the public API (issue 48)."""

import copy

from tests.api.test_case_fields_api import EXECUTE_WITH_FIELDS, PURCHASE, run
from tests.fixtures.builders import build_tree
from tests.fixtures.documents import CREATE_ITEM, DEFINE

SPEC = copy.deepcopy(PURCHASE)
SPEC["actions"]["submit"]["routes"] = [
    {"when": "actor.roles.exists(r, r == 'requester') && fields.quantity > 50", "to": "cfo_review"},
    {
        "when": "case.state == 'draft' && case.status == 'ACTIVE'"
        " && fields.vendor.startsWith('Z') && has(fields.express)",
        "to": "approved",
    },
    {"to": "review"},
]
SPEC["actions"]["expedite"]["enabled_when"] = "fields.urgency == 'high' && case.state == 'review'"


async def test_each_route_and_enabled_when_reads_the_fields_case_and_roles_it_names(gql, make_user):
    _, admin = await make_user("root", admin=True)
    _, alice = await make_user("alice")
    assert (await gql(DEFINE, {"spec": SPEC}, token=admin))["defineWorkflow"]["userErrors"] == []
    _, sub, _ = await build_tree(gql, alice, items=0, workflow="purchase")
    base = {"amount": 2500, "vendor": "Acme", "quantity": 3, "urgency": "high"}
    cases = [
        ({**base, "quantity": 60}, "cfo_review", 1),  # the role and a field the other routes do not read
        ({**base, "vendor": "Zeta", "express": False}, "approved", 2),  # the case, and two fields more
        (base, "review", 3),
    ]
    for fields, state, route in cases:
        made = await gql(CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": state}}, token=alice)
        item = made["createWorkflowItem"]["workflowItem"]
        done = (await gql(EXECUTE_WITH_FIELDS, run(item, "submit", fields=fields), token=alice))["executeAction"]
        assert done["userErrors"] == [], fields
        assert (done["case"]["state"]["shortName"], done["activity"]["data"]["route"]) == (state, route)
        enabled = [a["action"]["shortName"] for a in done["case"]["enabledActions"]]
        assert ("expedite" in enabled) == (state == "review"), enabled


async def test_a_new_version_checks_and_routes_by_its_own_pattern_and_conditions(gql, make_user):
    """Patterns and conditions are compiled with their spec's version: a case of the first version
    keeps its rules after a second is defined, and a case of the second gets the second's."""
    _, admin = await make_user("root", admin=True)
    _, alice = await make_user("alice")
    assert (await gql(DEFINE, {"spec": PURCHASE}, token=admin))["defineWorkflow"]["userErrors"] == []

    async def item(name):  # in a subproject of its own, on the workflow's newest version
        _, sub, _ = await build_tree(gql, alice, items=0, workflow="purchase")
        made = await gql(CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": name}}, token=alice)
        return made["createWorkflowItem"]["workflowItem"]

    first = await item("first")
    second_spec = copy.deepcopy(PURCHASE)
    second_spec["fields"]["vendor"]["pattern"] = "[A-Za-z0-9 ]+"
    second_spec["actions"]["submit"]["routes"][0]["when"] = "fields.amount > 100.0"
    assert (await gql(DEFINE, {"spec": second_spec}, token=admin))["defineWorkflow"]["userErrors"] == []
    second = await item("second")
    values = {"amount": 2500, "vendor": "Acme 2", "quantity": 3}
    refused = (await gql(EXECUTE_WITH_FIELDS, run(first, "submit", fields=values), token=alice))["executeAction"]
    assert refused["userErrors"] == [
        {"code": "INVALID_FIELD", "message": "Vendor must match the pattern [A-Za-z ]+.", "field": ["fields", "vendor"]}
    ]
    done = (await gql(EXECUTE_WITH_FIELDS, run(second, "submit", fields=values), token=alice))["executeAction"]
    assert done["userErrors"] == [] and done["case"]["state"]["shortName"] == "cfo_review"
    done = (await gql(EXECUTE_WITH_FIELDS, run(first, "submit", fields={**values, "vendor": "Acme"}), token=alice))[
        "executeAction"
    ]
    assert done["userErrors"] == [] and done["case"]["state"]["shortName"] == "review"  # 2500 is under 10000
