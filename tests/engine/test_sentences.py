"""engine/notify/sentences.py: every kind of log entry and every notification level in words.

Generated over the kinds the engine writes (engine/history/entry_kinds.py, held to the code by a
scan of the engine's writers): a kind without an expected sentence here, or without a phrase,
fails. The sentences are asserted whole for one reader (Bob, in Berlin, on 28 Nov 2026) over
facts whose names all differ, so a mix-up of actor, item, party, state or role shows."""

import ast
import re
from datetime import UTC, date, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlalchemy import select

import engine
from engine.history.entry_kinds import ENTRY_KINDS
from engine.notify import notifications, sentences, wording
from engine.notify.phrases import PHRASES
from engine.notify.sentences import EntryFacts, ItemFacts, Reader, Waiting, sentence
from engine.spec.workflows import parse_spec
from models import Activity
from tests.fixtures.engine import new_subproject

SPEC = parse_spec(
    {
        "short_name": "purchase",
        "pretty_name": "Purchase request",
        "roles": {
            "submitter": {"pretty_name": "Submitter"},
            "reviewer": {"pretty_name": "Reviewer"},
            "manager": {"pretty_name": "Manager"},
        },
        "states": {
            "draft": {"pretty_name": "Draft"},
            "submitted": {"pretty_name": "Submitted"},
            "in_review": {"pretty_name": "In review"},
            "approved": {"pretty_name": "Approved", "terminal": True},
        },
        "actions": {
            "submit": {
                "pretty_name": "Submit",
                "pretty_past_tense": "Submitted",
                "allowed_roles": ["submitter"],
                "enabled_states": ["draft"],
                "new_state": "submitted",
            },
            "start_review": {
                "pretty_name": "Start review",
                "pretty_past_tense": "Started review",
                "assigned_role": "reviewer",
                "assigned_states": ["submitted"],
                "new_state": "in_review",
            },
            "approve": {
                "pretty_name": "Approve",
                "pretty_past_tense": "Approved",
                "assigned_role": "reviewer",
                "assigned_states": ["in_review"],
                "new_state": "approved",
                "resolutions": {"as_is": "As submitted", "changed": "With changes"},
            },
        },
    },
    defining=False,
)

AT = datetime(2026, 11, 26, 9, 30, tzinfo=UTC)
BOB_NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
BOB = Reader.of("usr_bob", parties={"usr_bob", "grp_rev"}, time_zone="Europe/Berlin", now=BOB_NOW)
NAMES = {"usr_bob": "Bob Builder", "usr_carol": "Carol Controller", "usr_dave": "Dave Deputy", "grp_rev": "Reviewers"}
ITEM = ItemFacts("wfi_1", "Office chairs", "1450.5", "ALLOCATED", "EUR", date(2026, 12, 15))
START_REVIEW = Waiting("ea_1", "start_review", "Start review", frozenset({"grp_rev"}), AT, "reviewer")
APPROVE = Waiting(
    "ea_2", "approve", "Approve", frozenset({"usr_bob"}), datetime(2026, 11, 24, 8, tzinfo=UTC), "reviewer"
)


def facts(kind, data=None, *, about="item", action=None, actor="Alice Analyst", waiting=(), title=None, deputy=None):
    """An entry of ``kind`` about the item, its subproject ("Furniture") or its project ("Head
    office"), written by Alice Analyst (None: the system), with everything named."""
    entry = SimpleNamespace(
        id="act_1",
        kind=kind,
        action=action,
        data=data or {},
        comment=None,
        title=title,
        actor_id="usr_alice" if actor else "system",
        on_behalf_of="usr_dave" if deputy else None,
        at=AT,
        project_id="prj_1",
        subproject_id=None if about == "project" else "sp_1",
        workflow_item_id="wfi_1" if about == "item" else None,
    )
    return EntryFacts(
        entry=entry,
        actor=actor,
        on_behalf_of=deputy,
        item=ITEM,
        subproject="Furniture",
        subproject_currency="EUR",
        project="Head office",
        spec=SPEC,
        subproject_spec=SPEC,
        names=NAMES,
        roles={"reviewer": frozenset({"grp_rev"}), "manager": frozenset({"usr_carol"})},
        waiting=tuple(waiting),
    )


JOB = {"kind": "webhook", "attempts": 2}
# Every kind: the facts of a representative entry, and its sentence for Bob in his history and
# feed; where it differs, as his notification (NOTIFIED: addressed to him).
EXAMPLES = {
    "project_created": (facts("project_created", about="project"), "Alice Analyst created Head office"),
    "project_updated": (
        facts("project_updated", {"displayName": "HQ"}, about="project"),
        'Alice Analyst edited Head office: name "HQ"',
    ),
    "project_assigned": (
        facts("project_assigned", {"assigneeId": "usr_carol"}, about="project"),
        "Alice Analyst assigned Head office to Carol Controller",
    ),
    "project_closed": (
        facts("project_closed", {"status": "CLOSED"}, about="project"),
        "Alice Analyst closed Head office",
    ),
    "subproject_created": (facts("subproject_created", about="subproject"), "Alice Analyst created Furniture"),
    "subproject_updated": (
        facts("subproject_updated", {"validatorId": "usr_carol", "description": "Desks too"}, about="subproject"),
        "Alice Analyst edited Furniture: validator and description",
    ),
    "subproject_assigned": (
        facts("subproject_assigned", {"assigneeId": "usr_bob"}, about="subproject"),
        "Alice Analyst assigned Furniture to Bob Builder",
    ),
    "subproject_closed": (facts("subproject_closed", about="subproject"), "Alice Analyst closed Furniture"),
    "workflow_items_reordered": (
        facts("workflow_items_reordered", {"ordering": ["wfi_2", "wfi_1"]}, about="subproject"),
        "Alice Analyst reordered the items of Furniture",
    ),
    "subproject_workflow_changed": (
        facts(
            "subproject_workflow_changed",
            {"workflow": "purchase", "fromVersion": 1, "toVersion": 2},
            about="subproject",
        ),
        "Alice Analyst moved Furniture to version 2 of Purchase request",
    ),
    "workflow_item_created": (
        facts("workflow_item_created", {"amount": "1450.5", "currency": "EUR", "amountType": "ALLOCATED"}),
        "Alice Analyst created Office chairs for 1,450.50 EUR",
    ),
    "workflow_item_updated": (
        facts("workflow_item_updated", {"dueDate": "2027-01-15"}),
        "Alice Analyst edited Office chairs: due date 15 Jan 2027",
    ),
    "workflow_item_assigned": (
        facts("workflow_item_assigned", {"assigneeId": "usr_carol"}),
        "Alice Analyst assigned Office chairs to Carol Controller",
    ),
    "action_executed": (
        facts("action_executed", {"from": "draft", "to": "submitted"}, action="submit", waiting=[START_REVIEW]),
        "Alice Analyst submitted Office chairs (now Submitted)",
    ),
    "role_assigned": (
        facts("role_assigned", {"role": "manager", "partyIds": ["usr_carol"], "by": "static"}, actor=None),
        "Carol Controller became Manager on Office chairs",
    ),
    "role_reassigned": (
        facts(
            "role_reassigned", {"role": "manager", "mode": "REPLACE", "before": ["usr_carol"], "after": ["usr_dave"]}
        ),
        "Dave Deputy became Manager on Office chairs in place of Carol Controller (by Alice Analyst)",
    ),
    "case_completed": (facts("case_completed", {"state": "approved"}), "Office chairs is done: Approved"),
    "case_reopened": (facts("case_reopened", {"state": "in_review"}), "Office chairs is open again: In review"),
    "case_suspended": (
        facts("case_suspended", {"from": "ACTIVE", "to": "SUSPENDED", "until": "2026-12-01T23:30:00+00:00"}),
        "Alice Analyst put Office chairs on hold until 2 Dec",  # 00:30 on 2 Dec in Berlin
    ),
    "case_resumed": (
        facts("case_resumed", {"from": "SUSPENDED", "to": "ACTIVE"}, actor=None),
        "Office chairs is resumed after its hold",
    ),
    "case_canceled": (
        facts("case_canceled", {"from": "ACTIVE", "to": "CANCELED"}),
        "Alice Analyst canceled Office chairs",
    ),
    "case_migrated": (
        facts("case_migrated", {"fromVersion": 1, "toVersion": 3}),
        "Alice Analyst moved Office chairs from version 1 to version 3 of Purchase request",
    ),
    "timer_failed": (
        facts(
            "timer_failed",
            {"code": "CONDITION_FAILED", "retryAt": "2026-11-28T13:05:00+00:00"},
            action="approve",
            actor=None,
        ),
        "Approve on Office chairs could not run on time; tried again at 14:05",
    ),
    "action_reminded": (
        facts(
            "action_reminded",
            {"enabledActionId": "ea_2", "reminder": 1, "of": 3, "enabledAt": "2026-11-24T08:00:00+00:00"},
            action="approve",
            actor=None,
            waiting=[APPROVE],
        ),
        "Approve on Office chairs is still waiting since 24 Nov (reminder 1 of 3)",
    ),
    "action_escalated": (
        facts(
            "action_escalated",
            {"enabledActionId": "ea_2", "toRole": "manager", "enabledAt": "2026-11-24T08:00:00+00:00"},
            action="approve",
            actor=None,
        ),
        "Approve on Office chairs has waited since 24 Nov; Manager is asked to step in",
    ),
    "workflow_item_due": (
        facts("workflow_item_due", {"dueDate": "2026-11-28"}, actor=None),
        "Office chairs is due today",
    ),
    "workflow_item_overdue": (
        facts("workflow_item_overdue", {"dueDate": "2026-11-25"}, actor=None),
        "Office chairs is overdue since 26 Nov",
    ),
    "document_added": (
        facts("document_added", {"fileName": "quote.pdf"}),
        'Alice Analyst attached "quote.pdf" to Office chairs',
    ),
    "document_removed": (
        facts("document_removed", {"fileName": "old.pdf"}),
        'Alice Analyst removed "old.pdf" from Office chairs',
    ),
    "permission_granted": (
        facts(
            "permission_granted", {"intent": "project.intent.grantPermission", "partyId": "usr_carol"}, about="project"
        ),
        "Alice Analyst let Carol Controller grant permissions on Head office",
    ),
    "permission_revoked": (
        facts("permission_revoked", {"intent": "project.viewHistory", "partyId": "grp_rev"}, about="project"),
        "Alice Analyst no longer lets Reviewers read the history of Head office",
    ),
    "job_completed": (
        facts("job_completed", {"job": JOB}, actor=None),
        "The webhook job of Office chairs completed after 2 attempts",
    ),
    "job_failed": (
        facts("job_failed", {"job": JOB, "error": {"message": "The receiver answered 500."}}, actor=None),
        "The webhook job of Office chairs failed: The receiver answered 500.",
    ),
    "job_stalled": (
        facts(
            "job_stalled",
            {"job": {"kind": "webhook", "attempts": 1}, "retryAt": "2026-11-29T07:00:00+00:00"},
            actor=None,
        ),
        "The webhook job of Office chairs did not get through (attempt 1); tried again on 29 Nov 08:00",
    ),
    "job_retried": (
        facts("job_retried", {"job": JOB}),
        "Alice Analyst put the webhook job of Office chairs back to run again",
    ),
    "job_resumed": (facts("job_resumed", {"job": JOB}), "Alice Analyst resumed the webhook job of Office chairs"),
}


NOTIFIED = {
    "subproject_assigned": "Furniture is assigned to you (by Alice Analyst)",
    "action_executed": "Start review is yours: Office chairs (due 15 Dec)",
    "action_reminded": "Reminder: Approve is yours: Office chairs (due 15 Dec), waiting since 24 Nov",
}


def _written_kinds() -> set[str]:
    """Every kind the engine's code passes to a writer of log entries: ``kind=`` of a call,
    the kind argument of ``log_about`` and the cases' ``_record`` helpers, and ``kind = ...``
    assigned before one (both branches of a conditional)."""
    kinds: set[str] = set()
    shaped = re.compile(r"^[a-z]+(_[a-z]+)+$")

    def constants(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value
        elif isinstance(node, ast.IfExp):
            yield from constants(node.body)
            yield from constants(node.orelse)

    writers = {"record", "_record", "log_about", "apply_update", "_log_change"}
    for path in Path(engine.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", getattr(node.func, "id", ""))
                if name in writers:
                    kinds |= {k for kw in node.keywords if kw.arg == "kind" for k in constants(kw.value)}
                    kinds |= {k for arg in node.args for k in constants(arg) if shaped.match(k)}
            elif isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "kind" for t in node.targets):
                kinds |= {k for k in constants(node.value) if shaped.match(k)}
    return kinds


def test_the_list_of_kinds_is_what_the_engine_writes():
    """A writer of a new kind fails here until the kind is listed (and so phrased, below)."""
    assert _written_kinds() == set(ENTRY_KINDS)


def test_every_kind_has_a_phrase():
    assert set(PHRASES) == set(ENTRY_KINDS)


@pytest.mark.parametrize("kind", sorted(ENTRY_KINDS))
def test_each_kind_reads_as_a_sentence_for_its_reader(kind):
    """In a history or a feed (no level), and as a notification of each level."""
    example, expected = EXAMPLES[kind]  # a KeyError: a new kind has no sentence asserted here
    assert sentence(example, reader=BOB).text == expected
    for level in notifications.LEVELS:
        assert sentence(example, reader=BOB, level=level).text == NOTIFIED.get(kind, expected)


@pytest.mark.parametrize("kind", sorted(ENTRY_KINDS))
@pytest.mark.parametrize("actor", ["Alice Analyst", None])
def test_no_kind_says_none_or_the_api_s_words(kind, actor):
    """Whatever its data (none at all, as a foreign or an old entry may have), an entry names
    its thing and never reads "None", "null", a short name or "Caseway is"."""
    for about in ("item", "subproject", "project"):
        said = sentence(facts(kind, {}, about=about, actor=actor), reader=BOB)
        text = said.text
        assert not re.search(r"\bNone\b|\bnull\b|_|\{|Caseway", text), text
        assert text[:1].isupper(), text  # every name here is capitalized; the system's phrases are
        thing = {"item": "Office chairs", "subproject": "Furniture", "project": "Head office"}[about]
        assert thing in text, text


CAROLS = Waiting(
    "ea_3", "approve", "Approve", frozenset({"usr_carol"}), datetime(2026, 11, 24, 8, tzinfo=UTC), "manager"
)
# Dave stands in for Carol (a Manager): her parties are lent to him, by her name.
DAVE = Reader.of("usr_dave", time_zone="Europe/Berlin", now=BOB_NOW, lent={"usr_carol": "Carol Controller"})


def test_a_deputy_is_asked_to_act_for_the_absent_user():
    """What waits on Carol is asked of Dave while he stands in for her, saying for whom, in each
    phrase that asks; his own task is his without "for"; in a history it asks nothing of him."""
    asked = {
        "action_executed": (
            facts("action_executed", {"from": "submitted", "to": "in_review"}, action="start_review", waiting=[CAROLS]),
            "Approve is yours: Office chairs (due 15 Dec), for Carol Controller",
        ),
        "workflow_item_overdue": (
            facts("workflow_item_overdue", {"dueDate": "2026-11-25"}, actor=None, waiting=[CAROLS]),
            "Office chairs is overdue since 26 Nov: Approve is yours, for Carol Controller",
        ),
        "workflow_item_due": (
            facts("workflow_item_due", {"dueDate": "2026-11-28"}, actor=None, waiting=[CAROLS]),
            "Office chairs is due today: Approve is yours, for Carol Controller",
        ),
        "case_resumed": (
            facts("case_resumed", {"from": "SUSPENDED", "to": "ACTIVE"}, actor=None, waiting=[CAROLS]),
            "Office chairs is resumed: Approve is yours (due 15 Dec), for Carol Controller",
        ),
        "action_escalated": (
            EXAMPLES["action_escalated"][0],  # to the Manager: Carol
            "Approve on Office chairs has waited since 24 Nov: "
            "you are asked to step in as Manager, for Carol Controller",
        ),
    }
    for kind, (example, expected) in asked.items():
        said = sentence(example, reader=DAVE, level="ASSIGNED")
        assert (said.text, said.addressed, said.action) == (expected, True, "approve"), kind
        # Bob stands in for no one: Carol's task is not his to do.
        assert not sentence(example, reader=BOB, level="ASSIGNED").addressed, kind
    # In his feed or a history, nothing is asked of anyone.
    history, _ = EXAMPLES["workflow_item_overdue"]
    overdue, _ = asked["workflow_item_overdue"]
    assert (
        sentence(overdue, reader=DAVE).text
        == sentence(history, reader=DAVE).text
        == "Office chairs is overdue since 26 Nov"
    )
    # A task of his own and one lent: his, without "for".
    both = Reader.of("usr_bob", parties={"usr_bob"}, now=BOB_NOW, lent={"grp_rev": "Carol Controller"})
    mixed = facts("action_executed", {"to": "in_review"}, action="start_review", waiting=[APPROVE, START_REVIEW])
    assert sentence(mixed, reader=both, level="ASSIGNED").text == (
        "Approve and Start review are yours: Office chairs (due 15 Dec)"
    )
    lent_only = facts("action_executed", {"to": "in_review"}, action="start_review", waiting=[START_REVIEW])
    assert sentence(lent_only, reader=both, level="ASSIGNED").text == (
        "Start review is yours: Office chairs (due 15 Dec), for Carol Controller"
    )


def test_an_executed_action_reads_as_what_was_done_once_nothing_waits_on_the_reader():
    done = facts("action_executed", {"from": "in_review", "to": "approved", "resolution": "changed"}, action="approve")
    assert sentence(done, reader=BOB).text == "Alice Analyst approved Office chairs (With changes; now Approved)"
    started = facts(
        "action_executed", {"from": "submitted", "to": "in_review"}, action="start_review", deputy="Dave Deputy"
    )
    assert (
        sentence(started, reader=BOB).text
        == "Alice Analyst (for Dave Deputy) started review on Office chairs (now In review)"
    )
    # Carol is not asked what Bob's groups are asked: she reads what happened.
    carol = Reader.of("usr_carol", time_zone="Europe/Berlin", now=BOB_NOW)
    waiting = facts("action_executed", {"from": "draft", "to": "submitted"}, action="submit", waiting=[START_REVIEW])
    said = sentence(waiting, reader=carol, level="WORKFLOW")
    assert (said.text, said.path) == ("Alice Analyst submitted Office chairs (now Submitted)", "/#/item/wfi_1")
    said = sentence(waiting, reader=BOB, level="ASSIGNED")
    assert (said.addressed, said.action, said.path) == (True, "start_review", "/#/item/wfi_1/start_review")
    assert not sentence(waiting, reader=BOB).addressed  # his history records what Alice did


def test_a_workflow_without_an_init_action_starts_its_item_without_saying_none():
    started = facts("action_executed", {"from": None, "to": "draft"}, action=None, actor="Ada Admin")
    assert sentence(started, reader=BOB).text == "Office chairs started its Purchase request workflow in Draft"


def test_the_due_date_reads_in_the_reader_s_days():
    """An item two days late is never "due today"; its entry of the due day says when it was due."""
    due = facts("workflow_item_due", {"dueDate": "2026-11-26"}, actor=None)
    assert sentence(due, reader=BOB).text == "Office chairs was due 26 Nov"
    late = Reader.of("usr_bob", parties={"usr_bob"}, time_zone="UTC", now=datetime(2026, 12, 20, tzinfo=UTC))
    assert sentence(facts("workflow_item_overdue", {"dueDate": "2026-12-15"}, actor=None), reader=late).text == (
        "Office chairs is overdue since 16 Dec"
    )
    # The same instant is another day in Honolulu.
    honolulu = Reader.of("usr_bob", time_zone="Pacific/Honolulu", now=BOB_NOW)
    suspended = facts("case_suspended", {"until": "2026-12-01T23:30:00+00:00"})
    assert sentence(suspended, reader=honolulu).text == "Alice Analyst put Office chairs on hold until 1 Dec"


@pytest.mark.parametrize(
    ("amount", "currency", "words"),
    [
        ("1450.5", "EUR", "1,450.50 EUR"),
        ("1450", "JPY", "1,450 JPY"),
        ("12.3456", "KWD", "12.346 KWD"),
        ("7", "XAU", "7 XAU"),
        # 28 whole digits, as the API accepts (40 characters): past the default decimal context
        ("1234567890123456789012345678.5", "EUR", "1,234,567,890,123,456,789,012,345,678.50 EUR"),
    ],
)
def test_money_reads_in_its_currency_s_minor_units(amount, currency, words):
    assert wording.money(amount, currency) == words


@pytest.mark.parametrize("level", notifications.LEVELS)
def test_each_notification_level_says_why_it_reached_its_reader(level):
    """Every level the notifier writes has its reason in words; what asks the reader to act is
    addressed to them whatever the level that told them."""
    example, _ = EXAMPLES["action_executed"]
    said = sentence(example, reader=BOB, level=level)
    assert said.text == NOTIFIED["action_executed"]
    assert said.reason == wording.LEVEL_REASONS[level]
    assert "_" not in said.reason and level not in said.reason  # words, not the API's level


def test_a_thing_the_reader_may_not_see_is_not_named():
    overdue = facts("workflow_item_overdue", {"dueDate": "2026-11-25"}, actor=None)
    assert sentence(sentences.seen_by(overdue, {"wfi_1"}), reader=BOB).text == "Office chairs is overdue since 26 Nov"
    # Nor what the entry records of it: its due date, a new name, an amount would name it again.
    unseen = {"sp_1", "prj_1"}
    assert sentence(sentences.seen_by(overdue, unseen), reader=BOB).text == "An item is overdue"
    renamed = facts("workflow_item_updated", {"displayName": "Secret merger"})
    assert sentence(sentences.seen_by(renamed, unseen), reader=BOB).text == "Alice Analyst edited an item"
    created = facts("workflow_item_created", {"amount": "990000", "currency": "EUR"})
    assert sentence(sentences.seen_by(created, unseen), reader=BOB).text == "Alice Analyst created an item"
    assert sentence(created, reader=BOB).text == "Alice Analyst created Office chairs for 990,000.00 EUR"


def test_every_level_has_a_reason():
    assert set(wording.LEVEL_REASONS) == set(notifications.LEVELS)


async def test_entries_are_phrased_in_one_batch_whatever_their_number(db, make_actor, count_statements):
    """Real entries of a real case: Bob is told what is his; the facts of 3 entries and of 30
    take the same statements (no query per entry)."""
    alice = await make_actor("alice")
    bob = await make_actor("bob")
    async with db.transaction() as s:
        await engine.define_workflow(
            s,
            actor=None,
            spec={
                "short_name": "chairs",
                "pretty_name": "Seating",
                "roles": {"buyer": {"callbacks": ["creation_user"]}, "reviewer": {"static_parties": [bob.user_id]}},
                "states": {
                    "draft": {"pretty_name": "Draft"},
                    "review": {"pretty_name": "Under review"},
                    "done": {"terminal": True},
                },
                "actions": {
                    "submit": {
                        "pretty_past_tense": "Handed in",
                        "allowed_roles": ["buyer"],
                        "enabled_states": ["draft"],
                        "new_state": "review",
                    },
                    "check": {
                        "pretty_name": "Check order",
                        "assigned_role": "reviewer",
                        "assigned_states": ["review"],
                        "new_state": "done",
                    },
                },
            },
        )
        sub = await new_subproject(s, alice, workflow="chairs")
        items = []
        for n in range(10):
            item, case = await engine.create_workflow_item(
                s,
                actor=alice,
                subproject_id=sub.id,
                display_name=f"Chair {n}",
                amount_type="ALLOCATED",
                amount="99.9",
                due_date=date(2026, 12, 24),
            )
            items.append((item, case))
    for _item, case in items:
        async with db.transaction() as s:
            await engine.execute(s, actor=alice, case_id=case.id, action="submit")
    async with db.session() as s:
        entries = list(
            await s.scalars(select(Activity).where(Activity.workflow_item_id.is_not(None)).order_by(Activity.seq))
        )
        reader = await sentences.reader_of(s, user_id=bob.user_id, now=BOB_NOW)
        with count_statements() as few:
            said = await sentences.phrase_entries(s, entries[:3], reader=reader)
        with count_statements() as many:
            said_all = await sentences.phrase_entries(s, entries, reader=reader)
    assert few.count == many.count <= 7, (few.count, many.count)
    assert len(said_all) == len(entries) >= 30
    texts = [x.text for x in said_all if x.item_id == items[3][0].id]
    assert "alice created Chair 3 for 99.90 EUR" in texts
    assert "alice handed in Chair 3 (now Under review)" in texts
    notified = await _phrase_for(db, bob.user_id, entries, levels=["ASSIGNED"] * len(entries))
    assert "Check order is yours: Chair 3 (due 24 Dec)" in [x.text for x in notified if x.item_id == items[3][0].id]
    assert said[0].text.startswith("alice created Chair 0")
    alice_reads = await _phrase_for(db, alice.user_id, entries)
    assert "alice handed in Chair 3 (now Under review)" in [x.text for x in alice_reads]
    # Someone who may read no item of these is told of "an item", never its name.
    outsider = await make_actor("outsider")
    async with db.session() as s:
        hidden = await sentences.phrase_entries(s, entries, viewer=outsider)
    assert not [x.text for x in hidden if "Chair" in x.text]
    assert "alice handed in an item (now Under review)" in [x.text for x in hidden]


async def _phrase_for(db, user_id, entries, levels=None):
    async with db.session() as s:
        reader = await sentences.reader_of(s, user_id=user_id, now=BOB_NOW)
        return await sentences.phrase_entries(s, entries, reader=reader, levels=levels)
