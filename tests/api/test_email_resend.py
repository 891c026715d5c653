"""What an immediate email promises when its runner dies mid-send (docs/api.md, "Email and
digests": at least once, the same Message-ID every time, never again once its send is recorded).

The runner's death is its outcome not being recorded after the SMTP server accepted the message
(the record fails, as a killed process's would never come): nothing else sends while its lease
runs; after it, another runner reconciles the job and sends the same message again, then records
it, and nothing sends it a third time."""

from datetime import timedelta

from sqlalchemy import select

from engine.clock import SYSTEM_CLOCK, SettableClock
from engine.jobs import records
from engine.notify.digests import SETTLE
from models import Job
from server.job_runner import JobRunner
from server.settings import Settings
from tests.fixtures.builders import build_tree
from tests.fixtures.documents import CHOOSE_EMAIL, CREATE_ITEM
from tests.fixtures.jobs import serving
from tests.fixtures.smtp import Mailbox, html_of, mail_settings, text_of


async def email_job(db) -> Job:  # type: ignore[no-untyped-def]
    async with db.read_session() as s:
        (job,) = (await s.scalars(select(Job).where(Job.kind == "email"))).all()
        return job


async def test_a_runner_dying_after_the_smtp_server_accepted_resends_the_same_message_once(
    db, mailbox: Mailbox, make_user, monkeypatch
):
    _, sam = await make_user("sam")
    dev_id, dev = await make_user("dev")
    settings = Settings(database_url=db.url, run_timers=False, run_jobs=False, **mail_settings(mailbox))
    async with serving(db, settings) as (_, gql):
        levels = [{"level": "ASSIGNED", "channels": ["EMAIL"]}]
        chosen = await gql(CHOOSE_EMAIL, {"input": {"email": "dev@example.org", "levels": levels}}, token=dev)
        assert chosen["setNotificationDelivery"]["userErrors"] == []
        _, sub, _ = await build_tree(gql, sam, items=0)
        item = {"subprojectId": sub["id"], "displayName": "Paint the hall", "assigneeId": dev_id}
        await gql(CREATE_ITEM, {"input": item}, token=sam)

        clock = SettableClock(SYSTEM_CLOCK.now() + SETTLE + timedelta(seconds=1))  # the email is due
        dying = JobRunner(db, None, clock=clock)

        async def never_recorded(*args, **kwargs):  # type: ignore[no-untyped-def]
            raise ConnectionError("the runner's process is gone")

        with monkeypatch.context() as patch:
            patch.setattr(records, "complete_first_claims", never_recorded)
            patch.setattr(records, "complete", never_recorded)
            assert await dying.drain() == 0  # sent, but no outcome recorded
        (first,) = mailbox.to("dev@example.org")
        job = await email_job(db)
        assert (job.state, job.attempts) == ("RUNNING", 1)

        # While its lease runs, another runner sends nothing: the job may still be mid-send.
        other = JobRunner(db, None, clock=clock)
        assert await other.drain() == 0
        assert len(mailbox.messages) == 1

        # After the lease, the job is reconciled and sent again: the same message, the same Message-ID.
        clock.set(clock.now() + timedelta(seconds=records.lease_seconds(None, {}) + 1))
        assert await other.drain() == 2  # the reconciliation (a retry), then the send
        again = mailbox.to("dev@example.org")
        assert len(again) == 2
        assert again[1]["Message-ID"] == first["Message-ID"]
        assert again[1]["Subject"] == first["Subject"]
        assert text_of(again[1]) == text_of(first) and html_of(again[1]) == html_of(first)
        job = await email_job(db)
        assert job.state == "COMPLETED" and job.progress["sent"]["messageId"] == first["Message-ID"]

        # Recorded: no runner sends it again, whenever it looks.
        clock.set(clock.now() + timedelta(days=1))
        assert await JobRunner(db, None, clock=clock).drain() == 0
        assert len(mailbox.messages) == 2
