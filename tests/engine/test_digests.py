"""Digest windows (engine/notify/digests.py): they end at the hours of the user's time zone, daylight
saving time included; a late run closes one window for the time it missed; and processes that
close windows at once make one digest per user and window between them."""

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

import engine
from engine.clock import SYSTEM_CLOCK
from engine.notify import delivery, digests, mail
from models import DigestSchedule, Job, Notification, new_id
from server.digest_runs import run_digests
from tests.fixtures.engine import new_subproject


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def test_windows_end_at_the_hours_of_the_users_zone():
    # Kolkata is UTC+5:30: its hours end at half past UTC hours.
    assert digests.next_boundary(utc(2026, 1, 5, 10, 10), frequency="HOURLY", zone="Asia/Kolkata", hour=8) == utc(
        2026, 1, 5, 10, 30
    )
    # 08:00 in Berlin is 07:00 UTC in winter and 06:00 UTC once the clocks go forward (29 March 2026).
    daily = [utc(2026, 3, 27, 8)]
    for _ in range(3):
        daily.append(digests.next_boundary(daily[-1], frequency="DAILY", zone="Europe/Berlin", hour=8))
    assert daily[1:] == [utc(2026, 3, 28, 7), utc(2026, 3, 29, 6), utc(2026, 3, 30, 6)]
    # An hour the spring-forward gap swallows (02:00 on 29 March) still comes once that day.
    gap = digests.next_boundary(utc(2026, 3, 28, 12), frequency="DAILY", zone="Europe/Berlin", hour=2)
    assert utc(2026, 3, 29, 0) <= gap < utc(2026, 3, 30, 0)


def test_a_late_run_closes_one_window_up_to_the_last_hour_reached():
    due = utc(2026, 1, 1, 9)
    now = utc(2026, 1, 4, 17, 45)
    assert digests.latest_boundary(now, due_at=due, frequency="HOURLY", zone="UTC", hour=8) == utc(2026, 1, 4, 17)
    assert digests.latest_boundary(now, due_at=due, frequency="DAILY", zone="UTC", hour=9) == utc(2026, 1, 4, 9)
    assert digests.latest_boundary(due, due_at=due, frequency="HOURLY", zone="UTC", hour=8) == due


@pytest.mark.postgres
async def test_processes_closing_windows_at_once_make_one_digest_per_user_and_window(db, make_actor):
    """Four runs at once on PostgreSQL (each its own connections; SKIP LOCKED shares the rows out)
    over six users' due windows: six digests, one each. On SQLite the runs are serialized."""
    mail.configure(mail.make_config(smtp_url="smtp://127.0.0.1:9", sender="c@t", public_url="http://t", secret_key="k"))
    try:
        users = [await make_actor(f"reader{i}") for i in range(6)]
        start = SYSTEM_CLOCK.now()
        async with db.transaction() as s:
            for user in users:
                await delivery.set_delivery(
                    s,
                    actor=user,
                    email=f"{user.login}@example.org",
                    levels=[delivery.LevelDelivery("ASSIGNED", ("EMAIL",), "HOURLY")],
                    now=start,
                )
                s.add(
                    Notification(
                        id=new_id("ntf"),
                        recipient_id=user.user_id,
                        activity_id="act_X",
                        level="ASSIGNED",
                        created_at=start + timedelta(seconds=1),
                    )
                )
        later = start + timedelta(hours=2)
        runs = await asyncio.gather(*[run_digests(db, now=later, limit=100) for _ in range(4)])
        assert sum(run.jobs for run in runs) == 6
        async with db.read_session() as s:
            keys = (await s.scalars(select(Job.idempotency_key).where(Job.kind == "email"))).all()
            rows = (await s.scalars(select(DigestSchedule))).all()
        assert sorted(key.split(":")[1] for key in keys) == sorted(u.user_id for u in users)
        assert all(row.due_at > later for row in rows)
    finally:
        mail.configure(None)


async def test_a_window_is_closed_once_settled_so_a_late_commit_stamped_before_its_end_is_listed(db, make_actor):
    """A notification stamped just before its window's end whose transaction commits just after
    it must be in that window's digest: the window is closed SETTLE after its end, not at it
    (closed at once, the late commit would fall between this window and the next)."""
    mail.configure(mail.make_config(smtp_url="smtp://127.0.0.1:9", sender="c@t", public_url="http://t", secret_key="k"))
    try:
        user = await make_actor("late")
        async with db.transaction() as s:
            await delivery.set_delivery(
                s,
                actor=user,
                email="late@example.org",
                levels=[delivery.LevelDelivery("ASSIGNED", ("EMAIL",), "HOURLY")],
                now=SYSTEM_CLOCK.now(),
            )
        async with db.read_session() as s:
            end = await s.scalar(select(DigestSchedule.due_at))
        just_after = await run_digests(db, now=end + timedelta(seconds=1), limit=100)
        assert (just_after.jobs, just_after.empty) == (0, 0)  # not settled: left open
        async with db.transaction() as s:  # the late commit, stamped before the end
            s.add(
                Notification(
                    id=new_id("ntf"),
                    recipient_id=user.user_id,
                    activity_id="act_X",
                    level="ASSIGNED",
                    created_at=end - timedelta(seconds=1),
                )
            )
        settled = await run_digests(db, now=end + digests.SETTLE, limit=100)
        assert (settled.jobs, settled.empty) == (1, 0)
        async with db.read_session() as s:
            (key,) = (await s.scalars(select(Job.idempotency_key).where(Job.kind == "email"))).all()
        assert key == f"digest:{user.user_id}:HOURLY:{end.isoformat()}"
    finally:
        mail.configure(None)


async def test_open_tasks_alone_send_an_hourly_digest_once_a_day_at_the_digest_hour(db, make_actor):
    """S003-28's reminder rides on the ASSIGNED level's digest: a window with news sends; one
    without news sends the reader's open tasks only when it reaches their digest hour (every
    daily window, one hourly window a day), and nothing when they have no open task."""
    mail.configure(mail.make_config(smtp_url="smtp://127.0.0.1:9", sender="c@t", public_url="http://t", secret_key="k"))
    try:
        boss = await make_actor("boss", admin=True)
        busy, idle = await make_actor("busy"), await make_actor("idle")
        start = utc(2030, 1, 7, 5, 30)  # Berlin: 06:30; the digest hour below is 08:00 there
        async with db.transaction() as s:
            for reader in (busy, idle):
                await delivery.set_delivery(
                    s,
                    actor=reader,
                    email=f"{reader.login}@example.org",
                    time_zone="Europe/Berlin",
                    digest_hour=8,
                    levels=[delivery.LevelDelivery("ASSIGNED", ("EMAIL",), "HOURLY")],
                    now=start,
                )
            sub = await new_subproject(s, boss, workflow="simple")
            await engine.create_workflow_item(
                s, actor=boss, subproject_id=sub.id, display_name="Order paint", assignee_id=busy.user_id
            )
        # The assignment's news was stamped now, years before these windows: none holds news.

        quiet = await run_digests(db, now=utc(2030, 1, 7, 6) + digests.SETTLE, limit=100)  # 07:00 Berlin
        assert (quiet.jobs, quiet.empty) == (0, 2)
        at_hour = await run_digests(db, now=utc(2030, 1, 7, 7) + digests.SETTLE, limit=100)  # 08:00 Berlin
        assert (at_hour.jobs, at_hour.empty) == (1, 1)  # busy's open task; idle has none
        after = await run_digests(db, now=utc(2030, 1, 7, 8) + digests.SETTLE, limit=100)  # 09:00 Berlin
        assert (after.jobs, after.empty) == (0, 2)
        async with db.read_session() as s:
            (key,) = (await s.scalars(select(Job.idempotency_key).where(Job.kind == "email"))).all()
        assert key == f"digest:{busy.user_id}:HOURLY:{utc(2030, 1, 7, 7).isoformat()}"
    finally:
        mail.configure(None)
