"""Email that works as email (issue 50, point 2; docs/api.md, "Email and digests"), read from the
messages a real SMTP server (aiosmtpd) receives: a subject that says the thing, a text part and
an HTML part of the same content, links into the dashboard (only with ``CASEWAY_PUBLIC_URL``;
without it, none, and the log says so at start), names escaped in HTML, and the open-tasks digest
(seed 003, S003-28) with each reader's tasks, a deputy's lent ones marked, in each reader's time
zone, bounded, and nothing its reader may not see."""

import logging
import re
from datetime import date, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import select, update

from engine.clock import SYSTEM_CLOCK, SettableClock
from engine.notify import open_tasks
from engine.notify.digests import SETTLE
from models import DigestSchedule, EnabledAction, User
from server.app import create_app
from server.job_runner import JobRunner
from server.mail import LINKS_OFF
from server.settings import Settings
from tests.fixtures.builders import build_tree
from tests.fixtures.child_workflows import define, tip
from tests.fixtures.documents import ADD_MEMBER, CHOOSE_EMAIL, CREATE_GROUP, CREATE_ITEM, RUN_DIGESTS, SET_DEPUTY
from tests.fixtures.jobs import serving
from tests.fixtures.smtp import PUBLIC_URL, Mailbox, html_of, mail_settings, text_of

TASK_ITEMS = """{ myTasks(first: 20) { edges { node { id action { shortName } case { workflowItem { id } } } } } }"""
LEAVE_GROUP = """mutation($g: ID!, $u: ID!) { removeGroupMember(input: {groupId: $g, userId: $u}) {
  userErrors { code message } } }"""


def settings_for(db, box: Mailbox, **more) -> Settings:
    return Settings(**{"database_url": db.url, "run_timers": False, **mail_settings(box), **more})


async def choose(gql, token, **input) -> None:
    answer = (await gql(CHOOSE_EMAIL, {"input": input}, token=token))["setNotificationDelivery"]
    assert answer["userErrors"] == [], answer["userErrors"]


async def name(db, user_id: str, display_name: str) -> None:
    async with db.transaction() as s:
        await s.execute(update(User).where(User.id == user_id).values(display_name=display_name))


async def create_item(gql, token, sub_id: str, display_name: str, **more) -> dict:
    made = await gql(CREATE_ITEM, {"input": {"subprojectId": sub_id, "displayName": display_name, **more}}, token=token)
    assert made["createWorkflowItem"]["userErrors"] == [], made["createWorkflowItem"]["userErrors"]
    return made["createWorkflowItem"]["workflowItem"]


async def tasks_of(gql, token) -> dict[str, str]:
    """item id -> the enabled instance of the viewer's task on it (one task per item here)."""
    edges = (await gql(TASK_ITEMS, token=token))["myTasks"]["edges"]
    return {e["node"]["case"]["workflowItem"]["id"]: e["node"]["id"] for e in edges if e["node"]["case"]}


async def test_an_immediate_email_has_a_subject_two_parts_links_and_escapes_names(db, mailbox, make_user):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    async with serving(db, settings_for(db, mailbox)) as (_, gql):
        await choose(gql, dev, email="dev@example.org", levels=[{"level": "ASSIGNED", "channels": ["EMAIL"]}])
        _, sub, _ = await build_tree(gql, sam, items=0)
        item = await create_item(gql, sam, sub["id"], "<b>Tiles & Co</b>", assigneeId=dev_id)
        await mailbox.wait_for(lambda box: len(box.to("dev@example.org")) == 1, within=15 + SETTLE.total_seconds())
        (message,) = mailbox.to("dev@example.org")

    assert message.get_content_type() == "multipart/alternative"
    assert [part.get_content_type() for part in message.iter_parts()] == ["text/plain", "text/html"]
    # The subject is the sentence: what is asked of the reader, on which item (a header is text:
    # the name as it is).
    assert message["Subject"] == "Close is yours: <b>Tiles & Co</b>"
    text, html = text_of(message), html_of(message)
    # The text part shows the name as typed; the HTML part escapes it, never markup.
    assert "<b>Tiles & Co</b>" in text
    assert "&lt;b&gt;Tiles &amp; Co&lt;/b&gt;" in html and "<b>Tiles" not in html
    # A link to the item, with the reader's action on it open, in both parts.
    link = f"{PUBLIC_URL}/#/item/{item['id']}/close"
    assert link in text and f'href="{link}"' in html
    # The unsubscribe link and headers, as ever (RFC 8058), in both parts.
    unsubscribe = message["List-Unsubscribe"].strip("<>")
    assert unsubscribe.startswith(f"{PUBLIC_URL}/unsubscribe?") and "levels=ASSIGNED&" in unsubscribe
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert unsubscribe in text and f'href="{unsubscribe.replace("&", "&amp;")}"' in html
    assert "Hello dev," in text and "Hello dev," in html


async def test_without_a_public_url_messages_carry_no_links_and_the_log_says_so_once(db, mailbox, make_user, caplog):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    with caplog.at_level(logging.INFO, logger="caseway.mail"):
        create_app(settings_for(db, mailbox), db=db)  # with CASEWAY_PUBLIC_URL: nothing to say
        assert [r.getMessage() for r in caplog.records if r.name == "caseway.mail"] == []
        settings = settings_for(db, mailbox, public_url="")
        async with serving(db, settings) as (_, gql):
            assert [r.getMessage() for r in caplog.records if r.name == "caseway.mail"] == [LINKS_OFF]
            await choose(gql, dev, email="dev@example.org", levels=[{"level": "ASSIGNED", "channels": ["EMAIL"]}])
            _, sub, _ = await build_tree(gql, sam, items=0)
            item = await create_item(gql, sam, sub["id"], "Paint the hall", assigneeId=dev_id)
            await mailbox.wait_for(lambda box: len(box.to("dev@example.org")) == 1, within=15 + SETTLE.total_seconds())
    assert "CASEWAY_PUBLIC_URL" in LINKS_OFF
    (message,) = mailbox.to("dev@example.org")
    text, html = text_of(message), html_of(message)
    assert "Paint the hall" in text and "Paint the hall" in html
    for part in (text, html):
        assert item["id"] not in part and "#/" not in part and PUBLIC_URL not in part
    # Unsubscribing still works: its link falls back to the address the server listens on.
    unsubscribe = message["List-Unsubscribe"].strip("<>")
    assert unsubscribe.startswith(f"http://{settings.host}:{settings.port}/unsubscribe?") and unsubscribe in text


KIRITIMATI, PAGO_PAGO = "Pacific/Kiritimati", "Pacific/Pago_Pago"  # UTC+14 and UTC-11: never the same date


def day_words(day: date) -> str:
    """A date as the sentences write it ("9 Nov"; with its year outside the current one)."""
    this_year = SYSTEM_CLOCK.now().year
    return f"{day.day} {day.strftime('%b')}" + ("" if day.year == this_year else f" {day.year}")


def says(text: str, words: str) -> bool:
    """``words`` stand in ``text`` as words ("8 Nov" is not found in "28 Nov")."""
    return re.search(rf"(?<![\w]){re.escape(words)}(?![\w])", text) is not None


def local_day(at, zone: str) -> str:
    return day_words(at.astimezone(ZoneInfo(zone)).date())


async def test_the_open_tasks_digest_lists_each_readers_tasks_with_a_deputys_marked_in_their_own_zone(
    db, mailbox, make_user, monkeypatch
):
    _, root = await make_user("root", admin=True)
    alice_id, alice = await make_user("alice")
    bob_id, bob = await make_user("bob")
    carol_id, _ = await make_user("carol")
    await name(db, alice_id, "Alice Analyst")
    await name(db, bob_id, "Bob Builder")
    today = SYSTEM_CLOCK.now().date()
    late, later = today - timedelta(days=20), today + timedelta(days=40)
    async with serving(db, settings_for(db, mailbox, run_jobs=False)) as (_, gql):
        # bob stands in for alice for ten days
        until = (SYSTEM_CLOCK.now() + timedelta(days=10)).isoformat()
        deputy = await gql(SET_DEPUTY, {"input": {"deputyId": bob_id, "until": until}}, token=alice)
        assert deputy["setDeputy"]["userErrors"] == []
        daily = [{"level": "ASSIGNED", "channels": ["IN_APP", "EMAIL"], "frequency": "DAILY"}]
        await choose(gql, alice, email="alice@example.org", timeZone=KIRITIMATI, digestHour=8, levels=daily)
        await choose(gql, bob, email="bob@example.org", timeZone=PAGO_PAGO, digestHour=8, levels=daily)

        _, sub, _ = await build_tree(gql, root, items=0)
        chairs = await create_item(gql, root, sub["id"], "Office chairs", assigneeId=alice_id, dueDate=late.isoformat())
        lamps = await create_item(gql, root, sub["id"], "Desk lamps", assigneeId=bob_id, dueDate=later.isoformat())
        tiles = await create_item(gql, root, sub["id"], "<b>Tiles & Co</b>", assigneeId=alice_id)
        # A vote of a group bob leaves: its task stays assigned to him, its item hidden from him now.
        group = (await gql(CREATE_GROUP, {"name": "voters"}, token=root))["createGroup"]["group"]
        for member in (bob_id, carol_id):
            assert (await gql(ADD_MEMBER, {"g": group["id"], "u": member}, token=root))["addGroupMember"][
                "userErrors"
            ] == []
        await define(gql, root, tip(group["id"]))
        _, vote_sub, _ = await build_tree(gql, root, items=0, workflow="tip_vote")
        ballot = await create_item(gql, root, vote_sub["id"], "Secret ballot")
        assert ballot["id"] in await tasks_of(gql, bob)
        left = await gql(LEAVE_GROUP, {"g": group["id"], "u": bob_id}, token=root)
        assert left["removeGroupMember"]["userErrors"] == []
        # still his tasks (approve, reject), on an item he may not see now: myTasks lists them
        # without their case
        edges = (await gql(TASK_ITEMS, token=bob))["myTasks"]["edges"]
        assert len([e for e in edges if e["node"]["case"] is None]) == 2

        alices, bobs = await tasks_of(gql, alice), await tasks_of(gql, bob)
        async with db.read_session() as s:
            enabled = {
                row.id: row.enabled_at
                for row in await s.scalars(
                    select(EnabledAction).where(EnabledAction.id.in_([*alices.values(), *bobs.values()]))
                )
            }
            windows = {row.user_id: row for row in await s.scalars(select(DigestSchedule))}
        closes = max(windows[alice_id].due_at, windows[bob_id].due_at) + SETTLE + timedelta(minutes=1)
        queued = (await gql(RUN_DIGESTS, {"input": {"now": closes.isoformat()}}, token=root))["runDigests"]
        assert (queued["queued"], queued["userErrors"]) == (2, [])
        runner = JobRunner(db, None, poll_interval=0.2, clock=SettableClock(closes))
        assert await runner.drain() == 2

        (for_alice,) = mailbox.to("alice@example.org")
        (for_bob,) = mailbox.to("bob@example.org")
        # alice: her two tasks, soonest due first (the overdue one), the undated last; not bob's.
        assert for_alice["Subject"] == "Daily digest: 2 open tasks (1 overdue), 2 updates"
        text, html = text_of(for_alice), html_of(for_alice)
        assert text.index("Office chairs") < text.index("<b>Tiles & Co</b>")
        assert "Desk lamps" not in text and "Desk lamps" not in html
        assert f"due {day_words(late)} (overdue)" in text and "overdue</strong>" in html
        assert "&lt;b&gt;Tiles &amp; Co&lt;/b&gt;" in html and "<b>Tiles" not in html
        for item in (chairs, tiles):
            link = f"{PUBLIC_URL}/#/item/{item['id']}/close"
            assert link in text and f'href="{link}"' in html
        assert "Close is yours: Office chairs (overdue since" in text
        assert f"{PUBLIC_URL}/#/tasks" in text and f'href="{PUBLIC_URL}/#/tasks"' in html
        assert "for Alice" not in text  # her own tasks are not marked
        # Dates in her time zone: each enabled date as Kiritimati saw it, never as Pago Pago did.
        for task in alices.values():
            assert says(text, local_day(enabled[task], KIRITIMATI))
            assert not says(text, local_day(enabled[task], PAGO_PAGO))
        assert says(text, day_words(late)) and not says(text, day_words(later))

        # bob: his own (Desk lamps) and alice's, marked for her; never the ballot he may not see.
        assert for_bob["Subject"].startswith("Daily digest: 3 open tasks (1 overdue)")
        text, html = text_of(for_bob), html_of(for_bob)
        assert "Secret ballot" not in text and "Secret ballot" not in html and ballot["id"] not in text
        # The news: alice's assignments, of which bob got copies, ask him to act for her.
        news = text[: text.index("Your open tasks")]
        chairs_news = next(line for line in news.splitlines() if "Office chairs" in line)
        assert "Close is yours: Office chairs" in chairs_news and "for Alice Analyst" in chairs_news
        lamps_news = next(line for line in news.splitlines() if "Desk lamps" in line)
        assert "Close is yours: Desk lamps" in lamps_news and "Alice" not in lamps_news
        text = text[text.index("Your open tasks") :]  # the list, after the news
        assert text.index("Office chairs") < text.index("Desk lamps") < text.index("<b>Tiles & Co</b>")
        chairs_line = next(line for line in text.splitlines() if "Office chairs" in line)
        lamps_line = next(line for line in text.splitlines() if "Desk lamps" in line)
        assert "for Alice Analyst" in chairs_line and "Alice" not in lamps_line
        assert f"{PUBLIC_URL}/#/item/{lamps['id']}/close" in text
        for task in (bobs[chairs["id"]], bobs[lamps["id"]]):
            assert says(text, local_day(enabled[task], PAGO_PAGO))
            assert not says(text, local_day(enabled[task], KIRITIMATI))

        # The next day's window holds no news: it still sends bob his open tasks (at his digest
        # hour), bounded: two listed and the rest counted.
        monkeypatch.setattr(open_tasks, "MAX_LISTED", 2)
        async with db.read_session() as s:
            window = await s.scalar(select(DigestSchedule).where(DigestSchedule.user_id == bob_id))
        next_day = window.due_at + SETTLE + timedelta(minutes=1)
        queued = (await gql(RUN_DIGESTS, {"input": {"now": next_day.isoformat()}}, token=root))["runDigests"]
        assert queued["queued"] >= 1
        runner = JobRunner(db, None, poll_interval=0.2, clock=SettableClock(next_day))
        assert await runner.drain() >= 1
        reminder = mailbox.to("bob@example.org")[1]
        assert reminder["Subject"] == "Daily digest: 3 open tasks (1 overdue)"
        text = text_of(reminder)
        assert "Office chairs" in text and "Desk lamps" in text and "Tiles" not in text
        assert "… and 1 more." in text and "… and 1 more." in html_of(reminder)
