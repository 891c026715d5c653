"""Notifications written in a migration's savepoint that rolls back (issue 46): a batch of cases
moves in one savepoint, tried whole three times and then case by case when a case is refused on
the way (engine/migration/migration_moves.py). What the rolled-back attempts notified is gone
with them: it must not become email either; only the committed move's notification does."""

from sqlalchemy import select

from models import Job, Notification
from server.settings import Settings
from tests.api.test_delivery_api import choose
from tests.api.test_migration import define, migrate, new_item, submit
from tests.fixtures.builders import build_tree
from tests.fixtures.documents import SUBSCRIBE
from tests.fixtures.jobs import serving
from tests.fixtures.smtp import mail_settings
from tests.fixtures.versions import PERMIT_V1, permit_v2


async def test_notifications_of_a_rolled_back_migration_savepoint_become_no_email(db, mailbox, make_user):
    settings = Settings(database_url=db.url, run_timers=False, run_jobs=False, **mail_settings(mailbox))
    async with serving(db, settings) as (_, gql):
        _, admin = await make_user("root", admin=True)
        rita_id, rita = await make_user("rita")
        chosen = await choose(gql, rita, email="rita@example.org", levels=[{"level": "ROLE", "channels": ["EMAIL"]}])
        assert chosen["userErrors"] == []
        subscribed = await gql(SUBSCRIBE, {"level": "ROLE", "target": None}, token=rita)
        assert subscribed["subscribeToNotifications"]["userErrors"] == []
        await define(gql, admin, PERMIT_V1)
        _, sub, _ = await build_tree(gql, admin, items=0, workflow="permit", mode="ORDERED")
        # submitted, then a draft, then submitted: in version 2 an AUTO action approves a checked
        # permit at once (rita, its reviewer, hears of it), which the open draft forbids the last
        first, _, last = [
            (await new_item(gql, admin, sub["id"], name, reviewer=[rita_id]))["workflowItem"]["id"]
            for name in ("First", "Draft", "Last")
        ]
        await submit(gql, admin, first)
        await submit(gql, admin, last)
        v2 = permit_v2()
        v2["actions"]["auto_approve"] = {"trigger": "auto", "enabled_states": ["checking"], "new_state": "approved"}
        await define(gql, admin, v2)
        async with db.read_session() as s:
            before = set((await s.scalars(select(Notification.id))).all())
            mailed = len((await s.scalars(select(Job.id).where(Job.kind == "email"))).all())
        moved = await migrate(gql, admin, subprojectId=sub["id"], stateMap=[{"from": "review", "to": "checking"}])
        assert (moved["migrated"], moved["refused"]) == (2, 1)
        refused = [r["userErrors"][0]["code"] for r in moved["results"] if r["userErrors"]]
        assert refused == ["PREVIOUS_ITEMS_OPEN"]
        async with db.read_session() as s:
            written = set((await s.scalars(select(Notification.id))).all()) - before
            emails = (await s.scalars(select(Job.input).where(Job.kind == "email").order_by(Job.id))).all()
        assert len(written) == 1  # rita is told once, of the first permit's approval
        assert [job["notifications"] for job in emails[mailed:]] == [sorted(written)]  # and emailed once, of that
