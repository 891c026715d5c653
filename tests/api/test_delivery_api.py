"""Delivery by email (docs/api.md, "Email and digests"): the choices per level and who reads
them, immediate emails through the job runner to a real SMTP server, digests made once per
user and window and composed from what the reader may still see when sent, and the signed
one-click unsubscribe link."""

from datetime import timedelta
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

import httpx
from sqlalchemy import select, update

from engine.clock import SYSTEM_CLOCK, SettableClock
from engine.notify.digests import SETTLE
from models import DigestSchedule, Job
from server.job_runner import JobRunner
from server.settings import Settings
from tests.fixtures.builders import build_tree
from tests.fixtures.documents import CREATE_ITEM, DEFINE, INBOX, REASSIGN, RUN_DIGESTS, RUN_DUE, SET_DEPUTY
from tests.fixtures.jobs import serving, until_answer
from tests.fixtures.smtp import Mailbox, html_of, mail_settings, text_of

SET_DELIVERY = """mutation($input: SetNotificationDeliveryInput!) { setNotificationDelivery(input: $input) {
  user { login email timeZone digestHour notificationDelivery { level channels frequency } }
  userErrors { code message field } } }"""
DELIVERY_OF = """query($id: ID!) { node(id: $id) { ... on User { login email timeZone digestHour
  notificationDelivery { level channels frequency } } } }"""
EMAIL_JOBS = """{ jobs(first: 50) { edges { node { kind state input progress case { id } activity { kind } } } } }"""


def settings_for(db, box: Mailbox, **more) -> Settings:
    return Settings(**{"database_url": db.url, "run_timers": False, **mail_settings(box), **more})


async def choose(gql, token, **input):
    answer = (await gql(SET_DELIVERY, {"input": input}, token=token))["setNotificationDelivery"]
    return answer


async def test_choices_are_set_checked_and_read_by_their_owner_and_admins(db, mailbox, make_user):
    ada_id, ada = await make_user("ada")
    bob_id, bob = await make_user("bob")
    _, root = await make_user("root", admin=True)
    async with serving(db, settings_for(db, mailbox)) as (_, gql):
        chosen = await choose(
            gql,
            ada,
            email="ada@example.org",
            timeZone="Europe/Berlin",
            digestHour=7,
            levels=[
                {"level": "ASSIGNED", "channels": ["IN_APP", "EMAIL"], "frequency": "IMMEDIATE"},
                {"level": "CASE", "channels": ["EMAIL"], "frequency": "DAILY"},
            ],
        )
        assert chosen["userErrors"] == []
        expected = {
            "login": "ada",
            "email": "ada@example.org",
            "timeZone": "Europe/Berlin",
            "digestHour": 7,
            "notificationDelivery": [
                {"level": "ASSIGNED", "channels": ["IN_APP", "EMAIL"], "frequency": "IMMEDIATE"},
                {"level": "ROLE", "channels": ["IN_APP"], "frequency": "IMMEDIATE"},
                {"level": "CASE", "channels": ["EMAIL"], "frequency": "DAILY"},
                {"level": "WORKFLOW", "channels": ["IN_APP"], "frequency": "IMMEDIATE"},
            ],
        }
        assert chosen["user"] == expected
        assert (await gql(DELIVERY_OF, {"id": ada_id}, token=root))["node"] == expected
        # Another user sees ada, not her address nor her choices.
        assert (await gql(DELIVERY_OF, {"id": ada_id}, token=bob))["node"] == {
            "login": "ada",
            "email": None,
            "timeZone": None,
            "digestHour": None,
            "notificationDelivery": None,
        }

        # Every problem at once, each naming its field; nothing changes.
        refused = await choose(
            gql,
            ada,
            timeZone="Mars/Olympus_Mons",
            digestHour=24,
            email="not an address",
            levels=[
                {"level": "ROLE", "channels": [], "frequency": "HOURLY"},
                {"level": "ROLE", "channels": ["EMAIL"], "frequency": "HOURLY"},
            ],
        )
        assert refused["user"] is None
        assert sorted((e["code"], ".".join(e["field"])) for e in refused["userErrors"]) == [
            ("INVALID_INPUT", "digestHour"),
            ("INVALID_INPUT", "email"),
            ("INVALID_INPUT", "levels.0.channels"),
            ("INVALID_INPUT", "levels.1.level"),
            ("INVALID_INPUT", "timeZone"),
        ]
        assert "Mars/Olympus_Mons" in next(e["message"] for e in refused["userErrors"] if e["field"] == ["timeZone"])
        assert (await gql(DELIVERY_OF, {"id": ada_id}, token=ada))["node"] == expected

        # More choices than there are levels: refused whole, before any is looked at.
        many = await choose(gql, ada, levels=[{"level": "ROLE", "channels": ["IN_APP"]}] * 5000)
        assert [(e["code"], e["field"]) for e in many["userErrors"]] == [("INVALID_INPUT", ["levels"])]
        assert (await gql(DELIVERY_OF, {"id": ada_id}, token=ada))["node"] == expected

        # Email needs an address; only an admin chooses for someone else.
        no_address = await choose(gql, bob, levels=[{"level": "ROLE", "channels": ["EMAIL"]}])
        assert [(e["code"], e["field"]) for e in no_address["userErrors"]] == [
            ("INVALID_INPUT", ["levels", "0", "channels"])
        ]
        other = await choose(gql, bob, userId=ada_id, timeZone="UTC")
        assert [e["code"] for e in other["userErrors"]] == ["NOT_ALLOWED"]
        by_admin = await choose(gql, root, userId=bob_id, email="bob@example.org", timeZone="Asia/Kolkata")
        assert (by_admin["user"]["login"], by_admin["user"]["timeZone"]) == ("bob", "Asia/Kolkata")
        # Clearing the address turns email off wherever it was on, and in-app on.
        cleared = await choose(gql, ada, email=None)
        assert cleared["user"]["email"] is None
        assert {d["level"]: d["channels"] for d in cleared["user"]["notificationDelivery"]}["CASE"] == ["IN_APP"]


async def test_email_is_refused_when_the_server_sends_none(gql, make_user):
    _, ada = await make_user("ada")
    refused = await choose(gql, ada, email="ada@example.org", levels=[{"level": "ASSIGNED", "channels": ["EMAIL"]}])
    assert [(e["code"], e["field"]) for e in refused["userErrors"]] == [("INVALID_INPUT", ["levels", "0", "channels"])]
    assert "CASEWAY_SMTP_URL" in refused["userErrors"][0]["message"]


async def test_an_immediate_email_reaches_the_smtp_server_and_its_link_unsubscribes(db, mailbox, make_user):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    _, root = await make_user("root", admin=True)
    mailbox.script = [451]  # the first attempt is told to come back later: the job stalls, then sends
    async with serving(db, settings_for(db, mailbox)) as (app, gql):
        chosen = await choose(gql, dev, email="dev@example.org", levels=[{"level": "ASSIGNED", "channels": ["EMAIL"]}])
        assert chosen["userErrors"] == []
        _, sub, _ = await build_tree(gql, sam, items=0)
        await gql(
            CREATE_ITEM,
            {"input": {"subprojectId": sub["id"], "displayName": "Paint the hall", "assigneeId": dev_id}},
            token=sam,
        )
        # EMAIL alone: nothing in dev's in-app list, one message in the mailbox.
        assert (await gql(INBOX, {}, token=dev))["notifications"]["totalCount"] == 0
        # closed once settled (engine/notify/digests.py, SETTLE), then sent
        await mailbox.wait_for(lambda box: len(box.to("dev@example.org")) == 1, within=15 + SETTLE.total_seconds())
        (message,) = mailbox.to("dev@example.org")
        assert message["From"] == "Caseway <cw@test>"
        assert "Paint the hall" in message["Subject"]
        body = text_of(message)
        assert "Paint the hall" in body and "Paint the hall" in html_of(message)
        assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        link = message["List-Unsubscribe"].strip("<>")
        assert link in body and link.startswith("http://caseway.test/unsubscribe?")
        assert mailbox.refused == 1

        async def email_jobs() -> list:
            edges = (await gql(EMAIL_JOBS, token=root))["jobs"]["edges"]
            return [e["node"] for e in edges if e["node"]["kind"] == "email"]

        # the outcome commits just after the server accepted the message
        (job,) = await until_answer(email_jobs, lambda jobs: [j["state"] for j in jobs] == ["COMPLETED"])
        assert (job["case"], job["activity"]) == (None, None)
        assert job["progress"]["sent"]["to"] == "dev@example.org"
        # An email job is no one's but admins': dev does not see it.
        assert [e for e in (await gql(EMAIL_JOBS, token=dev))["jobs"]["edges"] if e["node"]["kind"] == "email"] == []

        target = urlsplit(link)
        path = f"{target.path}?{target.query}"
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caseway.test")
        async with http:
            shown = await http.get(path)  # a mail scanner's fetch: shows the button, changes nothing
            assert shown.status_code == 200 and '<form method="post">' in shown.text
            assert (await gql(DELIVERY_OF, {"id": dev_id}, token=dev))["node"]["notificationDelivery"][0] == {
                "level": "ASSIGNED",
                "channels": ["EMAIL"],
                "frequency": "IMMEDIATE",
            }
            forged = await http.post(
                path.replace("levels=ASSIGNED", "levels=ROLE"), data={"List-Unsubscribe": "One-Click"}
            )
            assert forged.status_code == 404
            done = await http.post(path, data={"List-Unsubscribe": "One-Click"})
            assert done.status_code == 200 and "no more email" in done.text
        assert (await gql(DELIVERY_OF, {"id": dev_id}, token=dev))["node"]["notificationDelivery"][0] == {
            "level": "ASSIGNED",
            "channels": ["IN_APP"],
            "frequency": "IMMEDIATE",
        }
        # From now on dev hears in-app, and no more email is made.
        await gql(
            CREATE_ITEM,
            {"input": {"subprojectId": sub["id"], "displayName": "Fix the roof", "assigneeId": dev_id}},
            token=sam,
        )
        assert (await gql(INBOX, {}, token=dev))["notifications"]["totalCount"] == 1
        async with db.read_session() as s:
            assert len((await s.scalars(select(Job.id).where(Job.kind == "email"))).all()) == 1


async def test_a_digest_is_made_once_per_window_and_lists_only_what_its_reader_may_still_see(db, mailbox, make_user):
    sam_id, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    _, root = await make_user("root", admin=True)
    # No job runner in the server: the test runs the jobs itself, after changing what dev may see.
    async with serving(db, settings_for(db, mailbox, run_jobs=False)) as (_, gql):
        chosen = await choose(
            gql,
            dev,
            email="dev@example.org",
            timeZone="Asia/Kolkata",
            # far from the hours this test runs through: a window without news then sends nothing,
            # though dev has an open task (those go once a day, at the digest hour)
            digestHour=(SYSTEM_CLOCK.now().astimezone(ZoneInfo("Asia/Kolkata")).hour + 12) % 24,
            levels=[{"level": "ASSIGNED", "channels": ["IN_APP", "EMAIL"], "frequency": "HOURLY"}],
        )
        assert chosen["userErrors"] == []
        async with db.read_session() as s:
            (window,) = (await s.scalars(select(DigestSchedule))).all()
        # Kolkata is UTC+5:30: its hours end at half past UTC hours.
        assert (window.due_at.minute, window.due_at.second) == (30, 0) and window.due_at > SYSTEM_CLOCK.now()

        _, sub, _ = await build_tree(gql, sam, items=0, workflow="bug")
        made = []
        for name in ("Leak", "Crack"):
            answer = await gql(
                CREATE_ITEM,
                {"input": {"subprojectId": sub["id"], "displayName": name, "assigneeId": dev_id}},
                token=sam,
            )
            made.append(answer["createWorkflowItem"]["workflowItem"])
        early = await gql(RUN_DIGESTS, {"input": {}}, token=root)  # the window is still open
        assert early["runDigests"] == {"queued": 0, "empty": 0, "more": False, "userErrors": []}

        closes = window.due_at + timedelta(minutes=1)
        first = await gql(RUN_DIGESTS, {"input": {"now": closes.isoformat()}}, token=root)
        assert first["runDigests"] == {"queued": 1, "empty": 0, "more": False, "userErrors": []}
        again = await gql(RUN_DIGESTS, {"input": {"now": closes.isoformat()}}, token=root)
        assert again["runDigests"]["queued"] == 0
        # A process that read the window before this one closed it (a stale snapshot) makes
        # nothing either: the digest's job key names dev and the window, and is unique.
        async with db.transaction() as s:
            await s.execute(update(DigestSchedule).values(window_start=window.window_start, due_at=window.due_at))
        stale = await gql(RUN_DIGESTS, {"input": {"now": closes.isoformat()}}, token=root)
        assert stale["runDigests"]["queued"] == 0

        # Before it is sent, dev stops playing a role in the Leak's case: that item is hidden
        # from dev now, and so it is missing from the digest.
        moved = await gql(
            REASSIGN,
            {"input": {"workflowItemId": made[0]["id"], "role": "assignee", "partyIds": [sam_id]}},
            token=sam,
        )
        assert moved["reassignRole"]["userErrors"] == []
        runner = JobRunner(db, None, poll_interval=0.2, clock=SettableClock(closes))  # the digest is due then
        assert await runner.drain() == 1
        await runner.stop()
        (digest,) = mailbox.to("dev@example.org")
        # the news of Crack, and the open task on it (ASSIGNED's digest lists them): none of Leak
        assert digest["Subject"] == "Hourly digest: 1 open task, 1 update"
        body = text_of(digest)
        assert "Crack" in body and "Leak" not in body and "Leak" not in html_of(digest)
        assert "levels=ASSIGNED&" in digest["List-Unsubscribe"]

        # The next window holds nothing: it closes without a message.
        later = (window.due_at + timedelta(hours=3)).isoformat()
        quiet = await gql(RUN_DIGESTS, {"input": {"now": later}}, token=root)
        assert quiet["runDigests"] == {"queued": 0, "empty": 1, "more": False, "userErrors": []}
        assert await until_answer(lambda: len(mailbox.messages)) == 1


async def test_run_digests_is_for_admins_and_bounded(gql, make_user):
    _, ada = await make_user("ada")
    _, root = await make_user("root", admin=True)
    refused = (await gql(RUN_DIGESTS, {"input": {}}, token=ada))["runDigests"]
    assert [e["code"] for e in refused["userErrors"]] == ["NOT_ALLOWED"]
    too_many = (await gql(RUN_DIGESTS, {"input": {"limit": 5000}}, token=root))["runDigests"]
    assert [(e["code"], e["field"]) for e in too_many["userErrors"]] == [("INVALID_INPUT", ["limit"])]
    far = (await gql(RUN_DIGESTS, {"input": {"now": "9999-12-31T23:00:00Z"}}, token=root))["runDigests"]
    assert [(e["code"], e["field"]) for e in far["userErrors"]] == [("INVALID_INPUT", ["now"])]


async def test_the_sweeper_closes_a_window_that_ended_and_the_runner_sends_it(db, mailbox, make_user):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    settings = settings_for(db, mailbox, run_timers=True, timer_poll_interval=0.2)
    async with serving(db, settings) as (_, gql):
        chosen = await choose(
            gql,
            dev,
            email="dev@example.org",
            levels=[{"level": "ASSIGNED", "channels": ["EMAIL"], "frequency": "DAILY"}],
        )
        assert chosen["userErrors"] == []
        _, sub, _ = await build_tree(gql, sam, items=0)
        await gql(
            CREATE_ITEM,
            {"input": {"subprojectId": sub["id"], "displayName": "Order paint", "assigneeId": dev_id}},
            token=sam,
        )
        assert mailbox.messages == []  # a daily digest: nothing before its hour
        async with db.transaction() as s:  # as if the hour had come
            await s.execute(update(DigestSchedule).values(due_at=SYSTEM_CLOCK.now()))
        # closed once settled (engine/notify/digests.py, SETTLE), then sent
        await mailbox.wait_for(lambda box: len(box.to("dev@example.org")) == 1, within=15 + SETTLE.total_seconds())
        (digest,) = mailbox.to("dev@example.org")
        assert digest["Subject"] == "Daily digest: 1 open task, 1 update"
        assert "Order paint" in text_of(digest)


async def test_a_deputy_standing_in_is_emailed_the_copies_as_they_chose(db, mailbox, make_user):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    ada_id, ada = await make_user("ada")
    async with serving(db, settings_for(db, mailbox)) as (_, gql):
        named = await gql(
            SET_DEPUTY,
            {"input": {"deputyId": ada_id, "until": (SYSTEM_CLOCK.now() + timedelta(days=1)).isoformat()}},
            token=dev,
        )
        assert named["setDeputy"]["userErrors"] == []
        chosen = await choose(gql, ada, email="ada@example.org", levels=[{"level": "ASSIGNED", "channels": ["EMAIL"]}])
        assert chosen["userErrors"] == []
        _, sub, _ = await build_tree(gql, sam, items=0)
        await gql(
            CREATE_ITEM,
            {"input": {"subprojectId": sub["id"], "displayName": "Sign the lease", "assigneeId": dev_id}},
            token=sam,
        )
        await mailbox.wait_for(lambda box: len(box.to("ada@example.org")) == 1, within=15)
        assert "Sign the lease" in text_of(mailbox.to("ada@example.org")[0])
        # dev chose nothing: in-app, as ever; ada chose email alone: nothing in her list.
        assert (await gql(INBOX, {}, token=dev))["notifications"]["totalCount"] == 1
        assert (await gql(INBOX, {}, token=ada))["notifications"]["totalCount"] == 0
        assert mailbox.to("dev@example.org") == []


NAG = {
    "short_name": "nag",
    "roles": {"approver": {}},
    "states": {"waiting": {}, "done": {"terminal": True}},
    "actions": {
        "start": {"trigger": "init", "new_state": "waiting"},
        "approve": {
            "assigned_role": "approver",
            "assigned_states": ["waiting"],
            "new_state": "done",
            "reminders": {"every": 3600, "max": 2},
        },
    },
}


async def test_a_reminder_reaches_its_assignee_as_they_chose(db, mailbox, make_user):
    _, root = await make_user("root", admin=True)
    dev_id, dev = await make_user("dev")
    async with serving(db, settings_for(db, mailbox)) as (_, gql):
        assert (await gql(DEFINE, {"spec": NAG}, token=root))["defineWorkflow"]["userErrors"] == []
        chosen = await choose(gql, dev, email="dev@example.org", levels=[{"level": "ASSIGNED", "channels": ["EMAIL"]}])
        assert chosen["userErrors"] == []
        _, sub, _ = await build_tree(gql, root, items=0, workflow="nag")
        made = await gql(
            CREATE_ITEM,
            {
                "input": {
                    "subprojectId": sub["id"],
                    "displayName": "Expense claim",
                    "assignments": [{"role": "approver", "partyIds": [dev_id]}],
                }
            },
            token=root,
        )
        assert made["createWorkflowItem"]["userErrors"] == []
        # closed once settled (engine/notify/digests.py, SETTLE), then sent
        await mailbox.wait_for(
            lambda box: len(box.to("dev@example.org")) == 1, within=15 + SETTLE.total_seconds()
        )  # assigned
        later = (SYSTEM_CLOCK.now() + timedelta(hours=1, minutes=1)).isoformat()
        fired = (await gql(RUN_DUE, {"input": {"now": later}}, token=root))["runDueTimers"]
        assert [e["data"]["reminder"] for e in fired["fired"]] == [1]
        # Stamped an hour ahead, and still emailed now: news is news when it is made.
        await mailbox.wait_for(lambda box: len(box.to("dev@example.org")) == 2, within=15)
        reminded = mailbox.to("dev@example.org")[1]
        assert reminded["Subject"].startswith("Reminder: approve is yours: Expense claim")
        assert "/approve" in text_of(reminded)  # the link opens the action it reminds of
