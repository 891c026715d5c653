"""The background work run from a shell: `caseway run-due-timers`, `run-jobs`, `jobs` and
`collect-documents` (for a deployment that runs them from cron or a worker of their own). Each
command imports what it runs when it runs (a command loads only its own code)."""

import asyncio
from datetime import datetime

from server.cli_database import migrated_database
from server.settings import Settings


async def run_due_timers_command(settings: Settings, now: datetime | None, limit: int) -> None:
    from engine.clock import SYSTEM_CLOCK
    from server.background import publishing
    from server.timer_runs import run_due_timers

    db = await migrated_database(settings)
    try:
        async with publishing(db):  # the servers hear of what fired (its jobs, its log entries)
            run = await run_due_timers(
                db, now=now or SYSTEM_CLOCK.now(), limit=limit, min_interval=settings.timer_min_interval
            )
    finally:
        await db.dispose()
    for entry in run.fired:
        timer = entry.data.get("timer")
        why = f"timer due {timer['fireAt']}" if timer else "automatic"
        print(f"{entry.at.isoformat()}  {entry.case_id}  {entry.action}  ({why})")
    print(f"Fired {sum('timer' in e.data for e in run.fired)} timers ({len(run.fired)} actions).")
    if run.failed:
        print(f"{run.failed} timers could not fire and were postponed (see their items' history).")
    if run.more:
        print(f"More timers are due: the limit of {limit} stopped this run.")


async def collect_documents(settings: Settings, grace: float) -> None:
    from datetime import timedelta

    from server.documents import collect, store_for

    db = await migrated_database(settings)
    try:
        done = await collect(db, store_for(settings), grace=timedelta(seconds=grace))
    finally:
        await db.dispose()
    print(f"Deleted {len(done.deleted)} unreferenced files; kept {done.kept}.")


async def run_jobs(settings: Settings, *, once: bool) -> None:
    """A worker without HTTP: the job runner alone, until stopped (``--once``: until nothing is due)."""
    from server.background import publishing
    from server.job_runner import JobRunner
    from server.mail import configure_mail
    from server.shutdown import stop_within

    db = await migrated_database(settings)
    configure_mail(settings, db)  # emails are composed from the database when they are sent
    try:
        async with publishing(db) as hub:  # outcomes' log entries reach the servers' hubs
            runner = JobRunner(db, hub, poll_interval=settings.job_poll_interval, concurrency=settings.job_concurrency)
            try:
                if once:
                    print(f"Finished {await runner.drain()} jobs.")
                    return
                runner.start()
                await asyncio.Event().wait()  # until the process is stopped
            finally:
                await stop_within("the job runner", runner.stop)
    finally:
        await stop_within("the database pool", db.dispose)


async def list_jobs(settings: Settings, state: str | None, limit: int) -> None:
    from sqlalchemy import select

    from models import Job

    db = await migrated_database(settings)
    try:
        async with db.read_session() as session:
            query = select(Job).order_by(Job.id.desc()).limit(limit)
            if state:
                query = query.where(Job.state == state)
            jobs = list(await session.scalars(query))
    finally:
        await db.dispose()
    for job in reversed(jobs):
        due = job.next_attempt_at.isoformat() if job.next_attempt_at else "-"
        line = f"{job.id}  {job.state:<9}  {job.kind:<10}  attempts {job.attempts}  next {due}  case {job.case_id}"
        if job.error:
            line += f"\n    {job.error.get('code')}: {job.error.get('message')}"
            if job.error.get("detail"):
                line += f"  [{job.error['detail']}]"
        print(line)
    print(f"{len(jobs)} jobs.")
