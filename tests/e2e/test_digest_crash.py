"""Digests are made once per user and window across processes and a crash (PostgreSQL): two
servers close the same due windows at once, one of them is killed with SIGKILL meanwhile, and a
third one sends what they made: every user gets one digest, from one job, to a real SMTP server."""

import asyncio
import time
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

import engine
from bench.server import Server, drop_postgres, fresh_postgres
from engine.notify import delivery, digests, mail
from engine.people import identity
from models import Activity, Database, DigestSchedule, Job, Notification, new_id, utcnow
from server.migrate import upgrade
from tests.fixtures.database import BACKEND, create_test_user
from tests.fixtures.smtp import PUBLIC_URL, SECRET, Mailbox

pytestmark = pytest.mark.skipif(BACKEND != "postgres", reason="several server processes need PostgreSQL")
USERS = 120


@pytest.fixture
async def database_url():  # type: ignore[no-untyped-def]
    url, name = await fresh_postgres("digest_crash")
    await asyncio.to_thread(upgrade, url)
    yield url
    await drop_postgres(name)
    mail.configure(None)


async def seed(url: str, box: Mailbox) -> None:
    """USERS admins (so each may read the entry), each emailed an hourly digest, with one
    notification of a project's creation in the window, due now."""
    mail.configure(mail.make_config(smtp_url=box.url, sender="c@test", public_url=PUBLIC_URL, secret_key=SECRET))
    db = Database(url)
    try:
        start = utcnow() - timedelta(hours=2)
        async with db.transaction() as s:
            readers = []
            for i in range(USERS):
                user = await create_test_user(s, login=f"reader{i}", admin=True)
                readers.append(await identity.actor_for(s, user_id=user.id, login=user.login, is_admin=True))
            for reader in readers:
                choice = delivery.LevelDelivery("WORKFLOW", ("EMAIL",), "HOURLY")
                await delivery.set_delivery(
                    s, actor=reader, email=f"{reader.login}@example.org", levels=[choice], now=start
                )
            await engine.create_project(s, actor=readers[0], display_name="Hall")
        async with db.transaction() as s:
            entry_id = await s.scalar(select(Activity.id).where(Activity.kind == "project_created"))
            for reader in readers:
                s.add(
                    Notification(
                        id=new_id("ntf"),
                        recipient_id=reader.user_id,
                        activity_id=entry_id,
                        level="WORKFLOW",
                        created_at=start + timedelta(minutes=1),
                    )
                )
            await s.execute(update(DigestSchedule).values(due_at=utcnow() - digests.SETTLE - timedelta(seconds=1)))
    finally:
        await db.dispose()


async def count_jobs(url: str) -> int:
    db = Database(url)
    try:
        async with db.read_session() as s:
            return await s.scalar(select(func.count()).select_from(Job).where(Job.kind == "email")) or 0
    finally:
        await db.dispose()


def env(box: Mailbox, *, send: bool) -> dict[str, str]:
    return {
        "CASEWAY_SMTP_URL": box.url,
        "CASEWAY_SECRET_KEY": SECRET,
        "CASEWAY_PUBLIC_URL": PUBLIC_URL,
        "CASEWAY_RUN_JOBS": "true" if send else "false",
        "CASEWAY_TIMER_POLL_INTERVAL": "0.5",
        "CASEWAY_JOB_POLL_INTERVAL": "0.5",
    }


async def test_two_servers_and_a_kill_make_one_digest_per_user_and_window(database_url, mailbox: Mailbox):
    await seed(database_url, mailbox)
    closers = await asyncio.gather(
        *(asyncio.to_thread(Server, database_url, env=env(mailbox, send=False)) for _ in range(2))
    )
    try:
        deadline = time.monotonic() + 60
        while await count_jobs(database_url) == 0:
            assert time.monotonic() < deadline, "no window was closed"
            await asyncio.sleep(0.02)
    finally:
        closers[0].process.kill()  # SIGKILL, whatever it was doing
        closers[0].process.wait(10)
    sender = await asyncio.to_thread(Server, database_url, env=env(mailbox, send=True))
    try:
        await mailbox.wait_for(lambda box: len(box.messages) >= USERS, within=90)
    finally:
        sender.stop()
        closers[1].stop()
    assert await count_jobs(database_url) == USERS
    by_user = {}
    for message in mailbox.messages:
        by_user.setdefault(message["To"], set()).add(message["Message-ID"])
    assert sorted(by_user) == sorted(f"reader{i}@example.org" for i in range(USERS))
    assert all(len(ids_) == 1 for ids_ in by_user.values())
    assert len(mailbox.messages) == USERS
