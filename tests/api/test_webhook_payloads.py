"""Webhook payloads as a receiver gets them (issue 50, point 3): a served app delivers to a real
HTTP receiver; every body is checked against the JSON Schema docs/api.md documents ("Webhook
payloads"), plain and as a CloudEvent; a payload carries no case field its endpoint's
configuration did not allow, nor one the case's state hides; the configuration's errors are
refused with a sentence and change nothing."""

from collections.abc import AsyncIterator
from typing import Any

import pytest
from cloudevents.core.bindings.http import HTTPMessage, from_http_event
from jsonschema import Draft202012Validator
from sqlalchemy import update

import engine
from engine.cases import webhooks
from engine.jobs import webhook
from engine.people import identity
from engine.people.actors import Actor
from models import Database, Job
from server.app import create_app
from server.settings import Settings
from tests.fixtures.api import GraphQLClient
from tests.fixtures.database import create_test_user
from tests.fixtures.documents import DEFINE, EXECUTE
from tests.fixtures.engine import new_subproject
from tests.fixtures.jobs import serving, token_of, until_answer
from tests.fixtures.receiver import SECRET, Delivery, Receiver
from tests.fixtures.webhook_schema import CLOUDEVENTS_JSON, SCHEMA, problems

PUBLIC_URL = "https://caseway.example"

INVOICE = {
    "short_name": "invoice",
    "pretty_name": "Supplier invoice",
    "fields": {
        "total": {"type": "money"},
        "vendor": {"type": "string"},
        "note": {"type": "string"},
        "po_number": {"type": "string"},
    },
    "states": {
        "draft": {"pretty_name": "Being drafted"},
        "sent": {"pretty_name": "With billing", "hidden_fields": ["note"]},
        "paid": {"pretty_name": "Settled", "terminal": True},
    },
    "actions": {
        "open": {"trigger": "init", "new_state": "draft"},
        "send": {
            "pretty_name": "Send to billing",
            "pretty_past_tense": "Sent to billing",
            "privileges": ["workflowItem.update"],
            "enabled_states": ["draft"],
            "new_state": "sent",
            "fields": ["total", "vendor", "note", "po_number"],
            "side_effects": [{"webhook": {"endpoint": "billing"}}],
        },
        "pay": {
            "pretty_name": "Record payment",
            "pretty_past_tense": "Recorded payment of",
            "privileges": ["workflowItem.update"],
            "enabled_states": ["sent"],
            "new_state": "paid",
            "side_effects": [{"webhook": {"endpoint": "billing"}}],
        },
    },
}
SEND = {
    "action": "send",
    "comment": "Net 30",
    "fields": {"total": "1450.5", "vendor": "Acme Seating", "note": "internal only", "po_number": "PO-7"},
}
LOG = """query($id: ID!) { node(id: $id) { ... on Case { log(first: 20) { edges { node { seq action hash } } } } } }"""
JOB_INPUTS = """query($c: ID) { jobs(caseId: $c, first: 10) { edges { node { input idempotencyKey } } } }"""
WORKFLOWS = """{ workflows(first: 50) { edges { node { shortName } } } }"""


def checked(delivery: Delivery) -> dict[str, Any]:
    """The payload of a delivery, once its body passed the documented schema and its signature
    (the receiver checks every body; here the test says which it relies on)."""
    assert delivery.signed and delivery.content_type in ("application/json", CLOUDEVENTS_JSON)
    assert problems(delivery.content_type, delivery.body_json) == []
    return delivery.entry


def settings_for(db: Database, receiver: Receiver, *, public_url: str = "", **endpoint: Any) -> Settings:
    billing = {"url": receiver.url, "secret": SECRET, "timeout": 5, **endpoint}
    return Settings(database_url=db.url, webhooks={"billing": billing}, public_url=public_url)


@pytest.fixture
async def people(db: Database) -> AsyncIterator[tuple[Actor, str, str]]:
    """Alice (a person with a display name, who acts; not an admin) and an admin's token; the
    process's endpoints, which the served apps set too, are emptied afterwards."""
    async with db.transaction() as s:
        user = await identity.create_user(
            s, actor=None, login="alice", password="correct horse 1", display_name="Alice Analyst"
        )
        alice = await identity.actor_for(s, user_id=user.id, login=user.login, is_admin=False)
        root = await create_test_user(s, login="root", admin=True)
    yield alice, await token_of(db, alice.user_id), await token_of(db, root.id)
    webhook.configure({})


async def invoice_case(db: Database, gql: GraphQLClient, alice: Actor, admin: str) -> tuple[str, str]:
    """The invoice workflow defined through the served app (which checks its endpoint), and an
    item "Office chairs" of 1450.5 EUR; its id and its case's."""
    assert (await gql(DEFINE, {"spec": INVOICE}, token=admin))["defineWorkflow"]["userErrors"] == []
    async with db.transaction() as s:
        sub = await new_subproject(s, alice, workflow="invoice")
        item, case = await engine.create_workflow_item(
            s, actor=alice, subproject_id=sub.id, display_name="Office chairs", amount_type="ALLOCATED", amount="1450.5"
        )
    return item.id, case.id


async def execute(gql: GraphQLClient, token: str, case_id: str, **input: Any) -> None:
    answer = await gql(EXECUTE, {"input": {"caseId": case_id, **input}}, token=token)
    assert answer["executeAction"]["userErrors"] == []


async def test_a_plain_payload_says_what_happened_and_carries_only_the_fields_its_endpoint_allows(
    db: Database, receiver: Receiver, people: tuple[Actor, str, str]
):
    alice, alice_token, admin = people
    fields = {"invoice": ["total", "vendor", "note"]}  # po_number is declared but not listed
    async with serving(db, settings_for(db, receiver, public_url=PUBLIC_URL, fields=fields)) as (_, gql):
        item_id, case_id = await invoice_case(db, gql, alice, admin)
        await execute(gql, alice_token, case_id, **SEND)
        await execute(gql, alice_token, case_id, action="pay")
        await until_answer(lambda: len(receiver.deliveries), lambda n: n == 2)
        sent, paid = (checked(d) for d in receiver.deliveries)
        log = (await gql(LOG, {"id": case_id}, token=admin))["node"]["log"]["edges"]
        entries = {e["node"]["action"]: e["node"] for e in log}
        inputs = {
            token: [e["node"]["input"] for e in (await gql(JOB_INPUTS, {"c": case_id}, token=token))["jobs"]["edges"]]
            for token in (alice_token, admin)
        }

    money = {"amount": "1450.50", "currency": "EUR", "minorUnits": 2}  # with its minor units
    assert sent["item"] == {"id": item_id, "name": "Office chairs", "amountType": "ALLOCATED", "amount": money}
    assert (sent["version"], sent["kind"], sent["caseId"], sent["comment"]) == (1, "action_executed", case_id, "Net 30")
    assert sent["workflow"] == {"shortName": "invoice", "prettyName": "Supplier invoice"}
    assert sent["action"] == {"shortName": "send", "prettyName": "Send to billing", "pastTense": "Sent to billing"}
    assert sent["from"] == {"shortName": "draft", "prettyName": "Being drafted"}
    assert sent["to"] == {"shortName": "sent", "prettyName": "With billing"}
    assert sent["actor"] == {"id": alice.user_id, "login": "alice", "name": "Alice Analyst"}
    assert sent["subproject"]["name"] == "S" and sent["links"] == {"item": f"{PUBLIC_URL}/#/item/{item_id}"}
    # Listed and visible: sent. po_number (not listed) and note (hidden by "sent") are absent.
    assert sent["fields"] == {"total": money, "vendor": "Acme Seating"}
    assert sent["changes"] == {"total": {"from": None, "to": money}, "vendor": {"from": None, "to": "Acme Seating"}}
    # The entry records changes left out: its hash would let a receiver test guesses of them.
    assert sent["seq"] == entries["send"]["seq"] and sent["hash"] is None

    assert (paid["from"]["prettyName"], paid["to"]["prettyName"]) == ("With billing", "Settled")
    assert paid["fields"] == {"total": money, "vendor": "Acme Seating", "note": "internal only"}  # "paid" hides none
    assert paid["changes"] == {}
    assert (paid["seq"], paid["hash"]) == (entries["pay"]["seq"], entries["pay"]["hash"])
    assert paid["seq"] > sent["seq"] and len(paid["hash"]) == 64

    # The stored payload is the body but seq and hash; shown to admins only (alice reads the log).
    assert inputs[alice_token] == [{"endpoint": "billing"}, {"endpoint": "billing"}]
    stored = sorted(inputs[admin], key=lambda i: i["payload"]["action"]["shortName"])
    assert [i["payload"] for i in stored] == [
        {k: v for k, v in body.items() if k not in ("seq", "hash")} for body in (paid, sent)
    ]


async def test_a_cloudevent_is_signed_alike_and_sent_as_the_same_bytes_at_every_delivery(
    db: Database, receiver: Receiver, people: tuple[Actor, str, str]
):
    alice, alice_token, admin = people
    receiver.script = [503]  # the first delivery stalls; the retry sends it again
    async with serving(db, settings_for(db, receiver, format="cloudevents")) as (_, gql):
        item_id, case_id = await invoice_case(db, gql, alice, admin)
        await execute(gql, alice_token, case_id, **SEND)
        await until_answer(lambda: [d.status for d in receiver.deliveries], lambda s: s == [503, 200])

    first, second = receiver.deliveries
    assert first.body == second.body and first.signature == second.signature and first.key == second.key
    payload = checked(second)
    event = from_http_event(HTTPMessage({"content-type": second.content_type}, second.body))
    assert (event.get_id(), event.get_type(), event.get_subject()) == (second.key, "caseway.action_executed", item_id)
    assert event.get_data() == payload and event.get_time().isoformat() == payload["at"]
    assert (payload["item"]["name"], payload["to"]["prettyName"]) == ("Office chairs", "With billing")
    # No configuration of fields: none is sent; no CASEWAY_PUBLIC_URL: no links.
    assert (payload["fields"], payload["changes"], payload["links"]) == ({}, {}, {})


@pytest.mark.parametrize(
    ("endpoint", "words"),
    [
        ({"format": "xml"}, "webhook endpoint 'billing': format is plain or cloudevents, not 'xml'"),
        ({"fields": ["total"]}, "webhook endpoint 'billing': fields maps workflow short names to lists"),
        ({"fields": {"invoice": "total"}}, "fields['invoice'] is not a list of names"),
        ({"fields": {"invoice": [""]}}, "fields['invoice'] has '', not a field name (1 to 64 characters)"),
        ({"fields": {"invoice": ["total", "total"]}}, "fields['invoice'] names 'total' twice"),
        ({"fields": {"invoice": [f"f{i}" for i in range(101)]}}, "fields['invoice'] names more than 100 fields"),
    ],
)
def test_a_bad_format_or_fields_keeps_the_server_from_starting(db: Database, endpoint: dict[str, Any], words: str):
    settings = Settings(
        database_url=db.url, webhooks={"billing": {"url": "http://127.0.0.1:9/hook", "secret": "s", **endpoint}}
    )
    with pytest.raises(ValueError, match="webhook endpoint") as refused:
        create_app(settings, db=db)
    assert words in str(refused.value)


async def test_a_field_the_workflow_does_not_declare_refuses_its_definition_and_defines_nothing(
    db: Database, receiver: Receiver, people: tuple[Actor, str, str]
):
    _, _, admin = people
    fields = {"invoice": ["total", "vendr"]}
    async with serving(db, settings_for(db, receiver, fields=fields)) as (_, gql):
        refused = (await gql(DEFINE, {"spec": INVOICE}, token=admin))["defineWorkflow"]
        workflows = [e["node"]["shortName"] for e in (await gql(WORKFLOWS, token=admin))["workflows"]["edges"]]
    paths = [e["field"] for e in refused["userErrors"]]
    assert refused["workflow"] is None and {e["code"] for e in refused["userErrors"]} == {"INVALID_SPEC"}
    assert paths == [["spec", "actions", "send", "side_effects"], ["spec", "actions", "pay", "side_effects"]]
    assert refused["userErrors"][0]["message"] == (
        "Webhook endpoint 'billing' is configured (CASEWAY_WEBHOOKS fields) to send case field 'vendr' of workflow "
        "'invoice', which declares no such field (its fields: total, vendor, note, po_number)."
    )
    assert "invoice" not in workflows


async def test_a_field_taken_out_of_the_configuration_is_not_sent_by_a_job_written_before(
    db: Database, receiver: Receiver, people: tuple[Actor, str, str]
):
    """Narrowed at send time, never widened: a job keeps the payload of its action, less what
    its endpoint no longer allows."""
    alice, alice_token, admin = people
    listed = {"invoice": ["total", "vendor"]}
    quiet = settings_for(db, receiver, fields=listed).model_copy(update={"run_jobs": False})
    async with serving(db, quiet) as (_, gql):
        _, case_id = await invoice_case(db, gql, alice, admin)
        await execute(gql, alice_token, case_id, **SEND)
    assert receiver.deliveries == []
    async with serving(db, settings_for(db, receiver, fields={"invoice": ["vendor", "po_number"]})):
        await until_answer(lambda: len(receiver.deliveries), lambda n: n == 1)
    payload = checked(receiver.deliveries[0])
    # total: no longer listed; po_number: listed now, but the job was written without it.
    assert (payload["fields"], payload["changes"]) == (
        {"vendor": "Acme Seating"},
        {"vendor": {"from": None, "to": "Acme Seating"}},
    )


async def test_a_job_written_before_payloads_had_a_version_sends_the_entry_without_case_fields(
    db: Database, receiver: Receiver, people: tuple[Actor, str, str]
):
    """An upgrade with deliveries pending: a job whose input has no payload sends its log entry
    as before, with none of its case field changes (none is allowed by default)."""
    alice, alice_token, admin = people
    listed = {"invoice": ["total", "vendor"]}
    quiet = settings_for(db, receiver, fields=listed).model_copy(update={"run_jobs": False})
    async with serving(db, quiet) as (_, gql):
        _, case_id = await invoice_case(db, gql, alice, admin)
        await execute(gql, alice_token, case_id, **SEND)
    async with db.transaction() as s:
        await s.execute(update(Job).where(Job.case_id == case_id).values(input={"endpoint": "billing"}))
    async with serving(db, settings_for(db, receiver, fields=listed)):
        await until_answer(lambda: len(receiver.deliveries), lambda n: n == 1)
    (delivery,) = receiver.deliveries
    assert delivery.signed and receiver.legacy() == 1
    body = delivery.body_json
    assert (body["kind"], body["action"], body["caseId"]) == ("action_executed", "send", case_id)
    assert body["data"]["fields"] == {} and body["data"]["to"] == "sent" and "version" not in body


def test_the_documented_schema_is_a_valid_draft_2020_12_schema():
    Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["properties"]["version"] == {"const": 1}


@pytest.mark.parametrize(
    ("amount", "currency", "sent"),
    [
        ("1450.5", "EUR", "1450.50"),
        ("1450.125", "EUR", "1450.125"),  # never rounded
        # 28 whole digits, as the API accepts (40 characters): past the default decimal context
        ("1234567890123456789012345678.5", "EUR", "1234567890123456789012345678.50"),
    ],
)
def test_a_payload_s_amount_keeps_every_digit_with_its_minor_units(amount, currency, sent):
    assert webhooks.money(amount, currency) == {"amount": sent, "currency": currency, "minorUnits": 2}
