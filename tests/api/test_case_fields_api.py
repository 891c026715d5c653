"""Case fields, editable and required per action, hidden per state, CEL routes and enabled_when,
log titles and instance statuses, through the public API (issue 48)."""

import asyncio
import copy

import engine
from resolvers.context import Context
from schema import schema
from server.hub import EventHub
from server.settings import Settings
from tests.fixtures.builders import build_tree
from tests.fixtures.conditions import wait_until
from tests.fixtures.documents import CREATE_ITEM, DEFINE

PURCHASE = {
    "short_name": "purchase",
    "pretty_name": "Purchase",
    "fields": {
        "amount": {"type": "money", "label": "Amount", "min": 0, "required": True},
        "vendor": {"type": "string", "label": "Vendor", "max_length": 20, "pattern": "[A-Za-z ]+"},
        "quantity": {"type": "integer", "label": "Quantity", "min": 1, "max": 100},
        "urgency": {"type": "enum", "label": "Urgency", "choices": {"low": "Low", "high": "High"}},
        "express": {"type": "boolean", "label": "Express"},
        "needed_by": {"type": "date", "label": "Needed by"},
        "budget_note": {"type": "text", "label": "Budget note", "max_length": 50},
        "owner": {"type": "user", "label": "Owner"},
        "weight": {"type": "number", "label": "Weight", "min": 0.5, "max": 10},
        "deliver_at": {"type": "datetime", "label": "Deliver at"},
    },
    "roles": {"requester": {"callbacks": ["creation_user"]}, "cfo": {}},
    "states": {
        "draft": {},
        "review": {"hidden_fields": {"names": ["budget_note"], "visible_to": ["cfo"]}},
        "cfo_review": {"hidden_fields": ["budget_note"]},
        "approved": {"terminal": True},
    },
    "actions": {
        "create": {"trigger": "init", "new_state": "draft"},
        "submit": {
            "pretty_name": "Submit",
            "assigned_role": "requester",
            "assigned_states": ["draft"],
            "fields": [
                "amount",
                "vendor",
                "quantity",
                "urgency",
                "express",
                "needed_by",
                "budget_note",
                "owner",
                "weight",
                "deliver_at",
            ],
            "required_fields": ["vendor"],
            "routes": [{"when": "fields.amount > 10000.0", "to": "cfo_review"}, {"to": "review"}],
            "log_title": "{actor} asked for {fields.amount} from {fields.vendor} for {item}",
        },
        "expedite": {
            "allowed_roles": ["requester"],
            "enabled_states": ["review"],
            "enabled_when": "fields.urgency == 'high'",
        },
        "approve": {
            "pretty_past_tense": "Approved",
            "allowed_roles": ["requester", "cfo"],
            "enabled_states": ["review", "cfo_review"],
            "new_state": "approved",
        },
        "ratio": {
            "allowed_roles": ["requester"],
            "enabled_states": ["review"],
            "routes": [{"when": "100 / fields.quantity > 1000", "to": "approved"}, {"to": "review"}],
        },
    },
}

EXECUTE_WITH_FIELDS = """mutation($input: ExecuteActionInput!) { executeAction(input: $input) {
  case { version state { shortName } fields enabledActions { action { shortName } } }
  activity { data title } preview { state { shortName } route }
  userErrors { code message field } } }"""

CASE_FIELDS = """query($id: ID!) { node(id: $id) { ... on WorkflowItem { case {
  version fields state { shortName }
  log { edges { node { action data title } } }
  actionHistory { edges { node { action { shortName } status executedBy { ... on User { login } } } } }
  refused: actionHistory(status: REFUSED) { edges { node { action { shortName } status } } } } } } }"""

GOOD = {"amount": 2500, "vendor": "Acme", "quantity": 3, "urgency": "low", "budget_note": "from Q4"}


async def purchase(gql, make_user, spec=PURCHASE):
    _, admin = await make_user("root", admin=True)
    _, alice = await make_user("alice")
    defined = (await gql(DEFINE, {"spec": spec}, token=admin))["defineWorkflow"]
    assert defined["userErrors"] == []
    _, sub, _ = await build_tree(gql, alice, items=0, workflow="purchase")
    made = await gql(CREATE_ITEM, {"input": {"subprojectId": sub["id"], "displayName": "Chairs"}}, token=alice)
    return made["createWorkflowItem"]["workflowItem"], alice, admin


def run(item, action, **extra):
    return {"input": {"workflowItemId": item["id"], "action": action, **extra}}


async def test_every_bad_value_is_one_error_at_its_field_and_nothing_changes(gql, make_user):
    item, alice, _ = await purchase(gql, make_user)
    bad = {
        "amount": -1,
        "vendor": "Acme 42",
        "quantity": 1.5,
        "urgency": "soon",
        "express": "yes",
        "needed_by": "31/12/2026",
        "budget_note": "x" * 51,
        "owner": "usr_nobody",
        "colour": "red",
    }
    refused = (await gql(EXECUTE_WITH_FIELDS, run(item, "submit", fields=bad), token=alice))["executeAction"]
    assert refused["case"] is None
    assert {tuple(e["field"]): (e["code"], e["message"]) for e in refused["userErrors"]} == {
        ("fields", "amount"): ("INVALID_FIELD", "Amount must be at least 0."),
        ("fields", "vendor"): ("INVALID_FIELD", "Vendor must match the pattern [A-Za-z ]+."),
        ("fields", "quantity"): ("INVALID_FIELD", "Quantity must be a whole number."),
        ("fields", "urgency"): ("INVALID_FIELD", "Urgency must be one of low, high."),
        ("fields", "express"): ("INVALID_FIELD", "Express must be true or false."),
        ("fields", "needed_by"): ("INVALID_FIELD", "Needed by must be a date such as 2026-12-31."),
        ("fields", "budget_note"): ("INVALID_FIELD", "Budget note is at most 50 characters."),
        ("fields", "owner"): ("INVALID_FIELD", "Owner names no user or group."),
        ("fields", "colour"): ("INVALID_FIELD", "There is no field of that name."),
    }
    missing = (await gql(EXECUTE_WITH_FIELDS, run(item, "submit", fields={"quantity": 101}), token=alice))[
        "executeAction"
    ]
    assert [(e["field"], e["message"]) for e in missing["userErrors"]] == [
        (["fields", "quantity"], "Quantity must be at most 100."),
        (["fields", "vendor"], "Vendor is required."),
        (["fields", "amount"], "Amount is required."),
    ]
    case = (await gql(CASE_FIELDS, {"id": item["id"]}, token=alice))["node"]["case"]
    assert case["version"] == 0 and case["fields"] == {} and case["state"]["shortName"] == "draft"


async def test_numbers_instants_amounts_and_lengths_are_bounded_and_kept_in_one_form(gql, make_user):
    item, alice, _ = await purchase(gql, make_user)
    bad = {"weight": 0.25, "deliver_at": "2026-12-31T17:00:00", "amount": "10.123", "vendor": "A" * 21}
    refused = (await gql(EXECUTE_WITH_FIELDS, run(item, "submit", fields=bad), token=alice))["executeAction"]
    assert {e["field"][1]: e["message"] for e in refused["userErrors"]} == {
        "weight": "Weight must be at least 0.5.",
        "deliver_at": "Deliver at must be a date and time with its offset, such as 2026-12-31T17:00:00Z.",
        "amount": "Amount has at most 2 decimal places.",
        "vendor": "Vendor is at most 20 characters.",
    }
    good = {**GOOD, "weight": 2, "deliver_at": "2026-12-31T17:00:00+01:00", "amount": "10.5", "owner": None}
    done = (await gql(EXECUTE_WITH_FIELDS, run(item, "submit", fields=good), token=alice))["executeAction"]
    fields = done["case"]["fields"]
    assert (fields["weight"], fields["deliver_at"], fields["amount"]) == (
        2.0,
        "2026-12-31T16:00:00+00:00",
        {"amount": "10.50", "currency": "EUR"},
    )
    assert "owner" not in fields  # null clears (here: leaves unset)


async def test_fields_are_set_logged_routed_titled_and_hidden_per_state(gql, make_user):
    item, alice, admin = await purchase(gql, make_user)
    dry = (await gql(EXECUTE_WITH_FIELDS, run(item, "submit", fields=GOOD, dryRun=True), token=alice))["executeAction"]
    assert dry["preview"] == {"state": {"shortName": "review"}, "route": 2}
    done = (await gql(EXECUTE_WITH_FIELDS, run(item, "submit", fields=GOOD), token=alice))["executeAction"]
    assert done["userErrors"] == []
    assert done["case"]["state"]["shortName"] == "review"
    # budget_note is hidden in review from all but admins and the CFO role: alice sees no trace of it
    assert done["case"]["fields"] == {
        "amount": {"amount": "2500.00", "currency": "EUR"},
        "vendor": "Acme",
        "quantity": 3,
        "urgency": "low",
    }
    assert done["activity"]["data"]["fields"] == {
        "amount": {"from": None, "to": {"amount": "2500.00", "currency": "EUR"}},
        "vendor": {"from": None, "to": "Acme"},
        "quantity": {"from": None, "to": 3},
        "urgency": {"from": None, "to": "low"},
    }
    assert done["activity"]["data"]["route"] == 2
    assert done["activity"]["title"] == "alice asked for 2500.00 EUR from Acme for Chairs"
    seen = (await gql(CASE_FIELDS, {"id": item["id"]}, token=admin))["node"]["case"]
    assert seen["fields"]["budget_note"] == "from Q4"
    assert seen["log"]["edges"][-1]["node"]["data"]["fields"]["budget_note"] == {"from": None, "to": "from Q4"}
    # expedite's enabled_when (urgency is high) does not hold: REFUSED, listed as such
    assert [a["action"]["shortName"] for a in done["case"]["enabledActions"]] == ["approve", "ratio"]
    approved = (await gql(EXECUTE_WITH_FIELDS, run(item, "approve"), token=alice))["executeAction"]
    assert approved["activity"]["title"] == "Approved by alice"
    history = (await gql(CASE_FIELDS, {"id": item["id"]}, token=alice))["node"]["case"]
    statuses = [
        (e["node"]["action"]["shortName"], e["node"]["status"], e["node"]["executedBy"])
        for e in history["actionHistory"]["edges"]
    ]
    assert statuses == [
        ("submit", "COMPLETED", {"login": "alice"}),
        ("expedite", "REFUSED", None),
        ("approve", "COMPLETED", {"login": "alice"}),
        ("ratio", "CANCELED", None),
    ]
    assert [e["node"]["action"]["shortName"] for e in history["refused"]["edges"]] == ["expedite"]


async def test_a_route_over_the_limit_goes_to_the_cfo_and_enabled_when_follows_fields(gql, make_user):
    item, alice, _ = await purchase(gql, make_user)
    fields = {**GOOD, "amount": "12000.50", "urgency": "high"}
    done = (await gql(EXECUTE_WITH_FIELDS, run(item, "submit", fields=fields), token=alice))["executeAction"]
    assert done["case"]["state"]["shortName"] == "cfo_review" and done["activity"]["data"]["route"] == 1
    assert "budget_note" not in done["case"]["fields"]  # hidden in cfo_review from all but admins


async def test_a_condition_that_fails_at_run_time_is_a_refusal_with_a_sentence(gql, make_user):
    item, alice, _ = await purchase(gql, make_user)
    assert (await gql(EXECUTE_WITH_FIELDS, run(item, "submit", fields={**GOOD, "quantity": None}), token=alice))[
        "executeAction"
    ]["userErrors"] == []
    refused = (await gql(EXECUTE_WITH_FIELDS, run(item, "ratio"), token=alice))["executeAction"]
    assert refused["userErrors"] == [
        {
            "code": "CONDITION_FAILED",
            "message": "Route 1 of ratio could not be decided: the field quantity has no value.",
            "field": ["fields"],
        }
    ]
    case = (await gql(CASE_FIELDS, {"id": item["id"]}, token=alice))["node"]["case"]
    assert case["version"] == 1 and case["state"]["shortName"] == "review"


async def test_a_field_the_action_does_not_edit_is_refused(gql, make_user):
    item, alice, _ = await purchase(gql, make_user)
    await gql(EXECUTE_WITH_FIELDS, run(item, "submit", fields=GOOD), token=alice)
    refused = (await gql(EXECUTE_WITH_FIELDS, run(item, "approve", fields={"vendor": "Other"}), token=alice))[
        "executeAction"
    ]
    assert refused["userErrors"] == [
        {"code": "INVALID_FIELD", "message": "Vendor is not a field approve sets.", "field": ["fields", "vendor"]}
    ]


DIAGNOSE = """mutation($spec: JSON!) { defineWorkflow(input: {spec: $spec}) {
  workflow { id } diagnostics { code severity path message } } }"""


async def test_definitions_diagnose_fields_conditions_routes_and_titles(gql, make_user):
    _, admin = await make_user("root", admin=True)
    spec = copy.deepcopy(PURCHASE)
    spec["fields"]["quantity"] = {"type": "integer", "min": 5, "max": 1}
    spec["fields"]["colour"] = {"type": "colour"}
    spec["actions"]["expedite"]["enabled_when"] = "fields.vendor > 3"
    spec["actions"]["approve"]["enabled_when"] = "fields.nope == 1"
    spec["actions"]["ratio"]["routes"] = [{"when": "fields.express", "to": "approved"}]
    spec["actions"]["submit"]["log_title"] = "{actor} {fields.budget_note} {mood}"
    spec["actions"]["submit"]["routes"][0]["when"] = "x" * 1001
    found = (await gql(DIAGNOSE, {"spec": spec}, token=admin))["defineWorkflow"]
    assert found["workflow"] is None
    got = sorted((d["code"], ".".join(d["path"]), d["message"]) for d in found["diagnostics"])
    assert got == sorted(
        [
            ("INVALID_SPEC", "fields.quantity.max", "Field 'quantity' has max 1 below its min 5."),
            (
                "INVALID_SPEC",
                "fields.colour.type",
                "Field 'colour' has type 'colour'; one of string, text, integer, number, money, boolean, date, "
                "datetime, enum, user.",
            ),
            (
                "INVALID_CONDITION",
                "actions.submit.routes.0.when",
                "actions.submit.routes.0.when: A condition is at most 1000 characters; this one has 1001.",
            ),
            (
                "INVALID_SPEC",
                "actions.submit.log_title",
                "actions.submit.log_title has unknown placeholder {mood}; known: actor, item, action, state, "
                "resolution and fields.NAME of a declared field.",
            ),
            (
                "INVALID_SPEC",
                "actions.submit.log_title",
                "The log title of 'submit' shows field 'budget_note', which a state hides; a title is the same for "
                "every reader of the log.",
            ),
            (
                "INVALID_CONDITION",
                "actions.expedite.enabled_when",
                "actions.expedite.enabled_when: It compares a string with a whole number.",
            ),
            (
                "INVALID_CONDITION",
                "actions.approve.enabled_when",
                "actions.approve.enabled_when: It reads fields.nope, which the workflow does not declare.",
            ),
            (
                "INVALID_CONDITION",
                "actions.ratio.routes.0.when",
                "The routes of 'ratio' need a default: the last route has no when.",
            ),
        ]
    )


DECLARED = """query($id: ID!) { node(id: $id) { ... on WorkflowItem { case { workflow {
  fields { name type label required maxLength pattern min max choices { code label } }
  actions { shortName fields requiredFields enabledWhen logTitle routes { when to } } } } } } }"""


async def test_the_declarations_a_form_is_built_from_are_listed(gql, make_user):
    item, alice, _ = await purchase(gql, make_user)
    workflow = (await gql(DECLARED, {"id": item["id"]}, token=alice))["node"]["case"]["workflow"]
    fields = {f["name"]: f for f in workflow["fields"]}
    assert list(fields) == list(PURCHASE["fields"])
    assert fields["amount"] == {
        "name": "amount",
        "type": "money",
        "label": "Amount",
        "required": True,
        "maxLength": None,
        "pattern": None,
        "min": 0.0,
        "max": None,
        "choices": [],
    }
    assert fields["vendor"]["maxLength"] == 20 and fields["vendor"]["pattern"] == "[A-Za-z ]+"
    assert fields["urgency"]["choices"] == [{"code": "low", "label": "Low"}, {"code": "high", "label": "High"}]
    actions = {a["shortName"]: a for a in workflow["actions"]}
    assert actions["submit"]["requiredFields"] == ["vendor"] and actions["submit"]["fields"][0] == "amount"
    assert actions["submit"]["routes"] == [
        {"when": "fields.amount > 10000.0", "to": "cfo_review"},
        {"when": None, "to": "review"},
    ]
    assert actions["expedite"]["enabledWhen"] == "fields.urgency == 'high'"
    assert actions["submit"]["logTitle"].startswith("{actor} asked for")


LIVE_FIELDS = """subscription($i: ID) { activity(workflowItemId: $i) { action data title } }"""


async def test_a_live_subscriber_hears_no_hidden_field(db, make_actor):
    """Hidden ≡ missing on the live path: the requester hears submit's changes without the field
    the new state hides from them."""
    alice = await make_actor("alice")
    async with db.transaction() as s:
        await engine.define_workflow(s, actor=None, spec=PURCHASE)
        project = await engine.create_project(s, actor=alice, display_name="P")
        sub = await engine.create_subproject(
            s, actor=alice, project_id=project.id, display_name="S", currency="EUR", workflow="purchase"
        )
        item, case = await engine.create_workflow_item(s, actor=alice, subproject_id=sub.id, display_name="Chairs")
    hub = EventHub(db)
    await hub.start()
    context = Context(db=db, settings=Settings(database_url=db.url), hub=hub, actor=alice, live=True)
    stream = await schema.subscribe(LIVE_FIELDS, variable_values={"i": item.id}, context_value=context)
    heard = asyncio.ensure_future(anext(stream))
    await wait_until(lambda: hub.subscriber_count == 1, what="the subscription registered with the hub")
    async with db.transaction() as s:
        await engine.execute(s, actor=alice, action="submit", case_id=case.id, fields=GOOD)
    await hub.catch_up()
    result = await heard
    await stream.aclose()
    await hub.stop()
    assert not result.errors, result.errors
    assert result.data["activity"]["action"] == "submit"
    assert set(result.data["activity"]["data"]["fields"]) == {"amount", "vendor", "quantity", "urgency"}
    assert result.data["activity"]["title"] == "alice asked for 2500.00 EUR from Acme for Chairs"


async def test_the_model_checks_follow_every_route(gql, make_user):
    """cfo_review is reached only by a route (PURCHASE defines without UNREACHABLE_STATE); a route
    into a state with no way out is NO_PATH_TO_TERMINAL."""
    _, admin = await make_user("root", admin=True)
    spec = copy.deepcopy(PURCHASE)
    spec["states"]["limbo"] = {}
    spec["actions"]["ratio"]["routes"][0]["to"] = "limbo"
    found = (await gql(DIAGNOSE, {"spec": spec}, token=admin))["defineWorkflow"]
    assert found["workflow"] is None
    assert [(d["code"], d["path"]) for d in found["diagnostics"] if d["severity"] == "ERROR"] == [
        ("NO_PATH_TO_TERMINAL", ["states", "limbo"])
    ]


async def test_a_user_field_set_beside_an_amount_is_checked_and_kept(gql, make_user):
    """Found by bench W1r: a known party in a user field beside an amount (kept as an object)
    answered "Unexpected error."; an unknown one is still refused at its field."""
    item, alice, _ = await purchase(gql, make_user)
    bob_id, _ = await make_user("bob")
    wrong = {**GOOD, "owner": "usr_nobody"}
    refused = (await gql(EXECUTE_WITH_FIELDS, run(item, "submit", fields=wrong), token=alice))["executeAction"]
    assert [(e["field"], e["message"]) for e in refused["userErrors"]] == [
        (["fields", "owner"], "Owner names no user or group.")
    ]
    done = (await gql(EXECUTE_WITH_FIELDS, run(item, "submit", fields={**GOOD, "owner": bob_id}), token=alice))[
        "executeAction"
    ]
    assert done["userErrors"] == []
    assert (done["case"]["fields"]["owner"], done["case"]["fields"]["amount"]) == (
        bob_id,
        {"amount": "2500.00", "currency": "EUR"},
    )
