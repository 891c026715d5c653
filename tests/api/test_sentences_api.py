"""Activity.sentence and Notification.sentence over HTTP: each viewer reads an entry in their
own time zone, is addressed by a notification that asks them to act, and the compiled road and the resolvers
answer alike (a selection with a sentence is the resolvers'); a page of sentences costs the same
statements for 3 entries as for 15."""

import asyncio
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

import engine
from resolvers.context import Context
from schema import schema
from server.hub import EventHub
from server.settings import Settings
from tests.fixtures.builders import build_tree
from tests.fixtures.conditions import wait_until
from tests.fixtures.documents import CREATE_ITEM, EXECUTE, SUSPEND

pytestmark = pytest.mark.usefixtures("differential_reads")

HISTORY_SENTENCES = """query($id: ID!) { node(id: $id) { ... on WorkflowItem {
  history(first: 50) { edges { node { kind sentence } } } } } }"""
NOTIFICATIONS = """query { notifications(first: 20) { edges { node { level reason sentence activity { kind } } } } }"""
TIME_ZONE = """mutation($zone: String!) { setNotificationDelivery(input: {timeZone: $zone}) { userErrors { code } } }"""


async def _history(gql, item_id, token):
    node = (await gql(HISTORY_SENTENCES, {"id": item_id}, token=token))["node"]
    return [(e["node"]["kind"], e["node"]["sentence"]) for e in node["history"]["edges"]]


def _day(instant: datetime, zone: str) -> str:
    local = instant.astimezone(ZoneInfo(zone))
    today = datetime.now(UTC).astimezone(ZoneInfo(zone)).date()
    return f"{local.day} {local:%b}" + ("" if local.year == today.year else f" {local.year}")


async def test_each_viewer_reads_the_item_s_history_in_words_and_in_their_zone(gql, make_user):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    assert (await gql(TIME_ZONE, {"zone": "Pacific/Kiritimati"}, token=dev))["setNotificationDelivery"][
        "userErrors"
    ] == []
    _, sub, _ = await build_tree(gql, sam, items=0, workflow="bug")
    made = (
        await gql(
            CREATE_ITEM,
            {
                "input": {
                    "subprojectId": sub["id"],
                    "displayName": "Crash",
                    "assigneeId": dev_id,
                    "amountType": "ALLOCATED",
                    "amount": "1450.5",
                    "currency": "EUR",
                    "dueDate": "2099-12-15",
                }
            },
            token=sam,
        )
    )["createWorkflowItem"]
    assert made["userErrors"] == []
    item = made["workflowItem"]["id"]

    # dev, assigned to resolve it, is told so; sam reads what happened.
    note = (await gql(NOTIFICATIONS, token=dev))["notifications"]["edges"][0]["node"]
    assert note == {
        "level": "ASSIGNED",
        "reason": "you are asked to act",
        "sentence": "Resolve is yours: Crash (due 15 Dec 2099)",
        "activity": {"kind": "action_executed"},
    }
    assert await _history(gql, item, sam) == [
        ("workflow_item_created", "sam created Crash for 1,450.50 EUR"),
        ("action_executed", "Crash started its Bug workflow in Open"),
        ("role_assigned", "sam became Submitter on Crash"),
        ("role_assigned", "dev became Assignee on Crash"),
    ]
    # The history records what happened, for dev as for sam: only his notification addresses him.
    assert await _history(gql, item, dev) == await _history(gql, item, sam)

    # A suspension's end is a day in each reader's zone: Kiritimati is 14 hours ahead of UTC.
    until = (datetime.now(UTC) + timedelta(days=30)).replace(hour=23, minute=30, second=0, microsecond=0)
    suspended = await gql(SUSPEND, {"input": {"workflowItemId": item, "until": until.isoformat()}}, token=sam)
    assert suspended["suspendCase"]["userErrors"] == []
    assert (await _history(gql, item, sam))[-1] == (
        "case_suspended",
        f"sam put Crash on hold until {_day(until, 'UTC')}",
    )
    dev_reads = (await _history(gql, item, dev))[-1]
    assert dev_reads == ("case_suspended", f"sam put Crash on hold until {_day(until, 'Pacific/Kiritimati')}")
    assert dev_reads != (await _history(gql, item, sam))[-1]


async def test_a_resolution_and_the_next_assignment_read_with_the_workflow_s_words(gql, make_user):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    _, sub, _ = await build_tree(gql, sam, items=0, workflow="bug")
    item = (
        await gql(
            CREATE_ITEM,
            {"input": {"subprojectId": sub["id"], "displayName": "Glitch", "assigneeId": dev_id}},
            token=sam,
        )
    )["createWorkflowItem"]["workflowItem"]["id"]
    done = await gql(
        EXECUTE, {"input": {"workflowItemId": item, "action": "resolve", "resolution": "wont_fix"}}, token=dev
    )
    assert done["executeAction"]["userErrors"] == []
    assert (await _history(gql, item, dev))[-1] == ("action_executed", "dev resolved Glitch (Won't fix; now Resolved)")
    sam_note = (await gql(NOTIFICATIONS, token=sam))["notifications"]["edges"][0]["node"]
    assert (sam_note["level"], sam_note["sentence"]) == ("ASSIGNED", "Close is yours: Glitch")
    await gql(EXECUTE, {"input": {"workflowItemId": item, "action": "close"}}, token=sam)
    # Once closed, nothing waits on sam: the same notification reads as what happened.
    sam_note = (await gql(NOTIFICATIONS, token=sam))["notifications"]["edges"][0]["node"]
    assert sam_note["sentence"] == "dev resolved Glitch (Won't fix; now Resolved)"
    assert (await _history(gql, item, sam))[-2:] == [
        ("action_executed", "sam closed Glitch (now Closed)"),
        ("case_completed", "Glitch is done: Closed"),
    ]


async def test_a_page_of_sentences_costs_the_same_for_few_entries_and_many(gql, make_user, count_statements):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    _, sub, _ = await build_tree(gql, sam, items=0, workflow="bug")
    item = (
        await gql(
            CREATE_ITEM,
            {"input": {"subprojectId": sub["id"], "displayName": "Flicker", "assigneeId": dev_id}},
            token=sam,
        )
    )["createWorkflowItem"]["workflowItem"]["id"]
    await _history(gql, item, dev)  # the token is remembered from here on
    with count_statements() as few:
        assert len(await _history(gql, item, dev)) == 4
    for n in range(11):
        await gql(EXECUTE, {"input": {"workflowItemId": item, "action": "comment", "comment": f"look {n}"}}, token=sam)
    with count_statements() as many:
        sentences = await _history(gql, item, dev)
    assert len(sentences) == 15 and sentences[-1] == ("action_executed", "sam commented on Flicker")
    assert many.count == few.count, (few.statements, many.statements)


LIVE_SENTENCES = """subscription($p: ID) { activity(projectId: $p) { kind sentence } }"""


async def _live(db, viewers, project_id, act, count_statements):
    """One live event delivered to a subscription of each viewer: their answers, and the
    statements the delivery took."""
    hub = EventHub(db)
    await hub.start()
    streams = []
    for viewer in viewers:
        context = Context(db=db, settings=Settings(database_url=db.url), hub=hub, actor=viewer, live=True)
        streams.append(await schema.subscribe(LIVE_SENTENCES, variable_values={"p": project_id}, context_value=context))
    pending = [asyncio.ensure_future(anext(stream)) for stream in streams]
    await wait_until(lambda: hub.subscriber_count == len(viewers), what="every subscription registered")
    await act()
    with count_statements() as counted:
        await hub.catch_up()
        results = await asyncio.gather(*pending)
    for stream in streams:
        await stream.aclose()
    await hub.stop()

    return [r.data if not r.errors else r.errors for r in results], counted.count


async def test_a_live_entry_is_phrased_for_each_subscriber_its_facts_read_once(db, make_actor, count_statements):
    owner = await make_actor("owner")
    async with db.transaction() as s:
        project = await engine.create_project(s, actor=owner, display_name="P")
        sub = await engine.create_subproject(
            s, actor=owner, project_id=project.id, display_name="S", currency="EUR", workflow="bug"
        )
        item, _ = await engine.create_workflow_item(s, actor=owner, subproject_id=sub.id, display_name="Drip")

    async def comment():
        async with db.transaction() as s:
            await engine.execute(s, actor=owner, action="comment", workflow_item_id=item.id, comment="live")

    (one,), alone = await _live(db, [owner], project.id, comment, count_statements)
    assert one == {"activity": {"kind": "action_executed", "sentence": "owner commented on Drip"}}
    many, together = await _live(db, [owner] * 4, project.id, comment, count_statements)
    assert many == [one] * 4
    # each subscriber reads its own time zone; the entry's facts are read once for all
    assert together - alone <= 3, (alone, together)
