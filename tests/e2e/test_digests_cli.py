"""`caseway run-digests` as an operator (or cron) runs it: it queues the digest of each due window
once, `caseway run-jobs --once` sends it to a real SMTP server, and a second run sends nothing."""

import asyncio
import os
from datetime import timedelta

import pytest
from sqlalchemy import select

import engine
from engine.notify import delivery, digests, mail
from engine.people import identity
from models import Activity, Database, DigestSchedule, Notification, new_id, utcnow
from server.migrate import upgrade
from tests.fixtures.builders import caseway
from tests.fixtures.database import create_test_user
from tests.fixtures.smtp import PUBLIC_URL, SECRET, Mailbox, text_of

# Its own SQLite files or none: run once, by the SQLite run (scripts/run_tests.py).
pytestmark = pytest.mark.backend_free


async def seed(url: str, box: Mailbox):  # type: ignore[no-untyped-def]
    """An admin (who may read every entry) with an hourly email digest that started three hours
    ago, notified once inside that first window (the window's middle); returns the window's end."""
    mail.configure(mail.make_config(smtp_url=box.url, sender="c@test", public_url=PUBLIC_URL, secret_key=SECRET))
    db = Database(url)
    try:
        start = utcnow() - timedelta(hours=3)  # a settled empty window follows the first, whatever the minute
        async with db.transaction() as s:
            user = await create_test_user(s, login="reader", admin=True)
            reader = await identity.actor_for(s, user_id=user.id, login=user.login, is_admin=True)
            choice = delivery.LevelDelivery("WORKFLOW", ("EMAIL",), "HOURLY")
            await delivery.set_delivery(s, actor=reader, email="reader@example.org", levels=[choice], now=start)
            await engine.create_project(s, actor=reader, display_name="Boiler room")
        async with db.transaction() as s:
            entry_id = await s.scalar(select(Activity.id).where(Activity.kind == "project_created"))
            window = await s.scalar(select(DigestSchedule))
            # Inside the first window wherever the hour falls (it may end a second after start).
            inside = window.window_start + (window.due_at - window.window_start) / 2
            s.add(
                Notification(
                    id=new_id("ntf"), recipient_id=user.id, activity_id=entry_id, level="WORKFLOW", created_at=inside
                )
            )
            return window.due_at
    finally:
        await db.dispose()


async def test_run_digests_queues_each_due_digest_once_and_run_jobs_sends_it(tmp_path, mailbox: Mailbox):
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    await asyncio.to_thread(upgrade, url)
    due = await seed(url, mailbox)
    env = {
        **os.environ,
        "CASEWAY_DATABASE_URL": url,
        "CASEWAY_SMTP_URL": mailbox.url,
        "CASEWAY_SECRET_KEY": SECRET,
        "CASEWAY_PUBLIC_URL": PUBLIC_URL,
    }

    bad = caseway("run-digests", "--now", "tomorrow", env=env)
    assert bad.returncode == 2 and "not an ISO 8601 time: 'tomorrow'" in bad.stderr
    assert caseway("run-digests", "--limit", "0", env=env).returncode == 2
    far = caseway("run-digests", "--now", "9999-01-01T00:00:00Z", env=env)
    assert far.returncode == 1 and "between the years 1970 and 9000" in far.stderr and "Traceback" not in far.stderr

    # Before the window's end (and its settling seconds) nothing is due.
    early = caseway("run-digests", "--now", (due + digests.SETTLE - timedelta(seconds=1)).isoformat(), env=env)
    assert early.returncode == 0, early.stderr
    assert "Queued 0 digests; 0 windows had nothing to send." in early.stdout

    closes = (due + digests.SETTLE).isoformat()
    first = caseway("run-digests", "--now", closes, env=env)
    assert first.returncode == 0, first.stderr
    assert "Queued 1 digests; 0 windows had nothing to send." in first.stdout
    assert "caseway run-jobs --once" in first.stdout
    assert mailbox.messages == []  # queued, not sent: the job runner sends

    sent = caseway("run-jobs", "--once", env=env)
    assert sent.returncode == 0 and "Finished 1 jobs." in sent.stdout, sent.stderr
    (digest,) = mailbox.to("reader@example.org")
    assert digest["Subject"] == "Hourly digest: 1 update"
    assert "Boiler room" in text_of(digest)

    # Again at the same time, then at the real time (the next window, empty, closes too): nothing more.
    assert "Queued 0 digests; 0 windows" in caseway("run-digests", "--now", closes, env=env).stdout
    assert "Queued 0 digests; 1 windows had nothing to send." in caseway("run-digests", env=env).stdout
    assert "Finished 0 jobs." in caseway("run-jobs", "--once", env=env).stdout
    assert len(mailbox.messages) == 1
