"""The `caseway` command: serve, migrate, demo, create-user, define-workflow, export-schema,
verify-history, checkpoint-history, run-due-timers, run-jobs, jobs."""

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

from models import Database, as_utc, normalize_url
from server.settings import Settings


def _db(settings: Settings) -> Database:
    return Database(settings.database_url)


async def _migrate(settings: Settings) -> None:
    from server.bootstrap import prepare

    db = _db(settings)
    try:
        await prepare(settings, db)
    finally:
        await db.dispose()


async def _demo(settings: Settings, *, print_token: bool) -> None:
    from server.bootstrap import DEMO_PASSWORD, demo_token, load_demo, prepare

    db = _db(settings)
    try:
        await prepare(settings, db)
        if await load_demo(db):
            print(f"Loaded demo data: users admin, alice, bob, carol (password {DEMO_PASSWORD!r}).")
        if print_token:
            token = await demo_token(db, settings)
            url = f"http://{settings.host}:{settings.port}/graphql"
            print(
                f"\n  GraphiQL:   {url}\n  Demo token: {token}\n"
                f'  In GraphiQL\'s headers tab: {{"Authorization": "Bearer {token}"}}\n',
                flush=True,
            )
    finally:
        await db.dispose()


async def _create_user(settings: Settings, args: argparse.Namespace) -> None:
    from engine import identity
    from engine.errors import DomainError

    db = _db(settings)
    try:
        async with db.transaction() as s:
            user = await identity.create_user(
                s,
                actor=None,
                login=args.login,
                password=args.password,
                display_name=args.display_name,
                admin=args.admin,
            )
        print(f"Created user {user.login} ({user.id}).")
    except DomainError as error:
        raise SystemExit(f"error: {error.message}") from None
    finally:
        await db.dispose()


async def _define_workflow(settings: Settings, path: Path) -> None:
    from engine import workflows
    from engine.errors import DomainError, DomainErrors

    db = _db(settings)
    try:
        async with db.transaction() as s:
            workflow = await workflows.define_workflow(s, actor=None, spec=workflows.load_spec_file(path))
        print(f"Defined workflow {workflow.short_name} version {workflow.version} ({workflow.id}).")
    except DomainError as error:
        errors = error.errors if isinstance(error, DomainErrors) else [error]
        raise SystemExit("\n".join(f"error: {e.message} ({'.'.join(e.field or [])})" for e in errors)) from None
    finally:
        await db.dispose()


async def _verify_history(settings: Settings, resource_id: str | None) -> bool:
    """Print a sentence per chain; True if every chain is intact."""
    from engine import history
    from engine.errors import DomainError

    if not settings.secret_key:
        print("No secret key is configured (CASEWAY_SECRET_KEY): checking the hash chains alone.", file=sys.stderr)
    db = _db(settings)
    checked = broken = 0
    try:
        async with db.session() as s:
            if resource_id is not None:
                reports = _one(await history.verify_history(s, resource_id=resource_id, secret_key=settings.secret_key))
            else:
                reports = history.verify_all(s, secret_key=settings.secret_key)
            async for report in reports:  # printed as they come: --all reads the log in pages
                print(report.message, flush=resource_id is not None)
                checked, broken = checked + 1, broken + (not report.intact)
    except DomainError as error:
        raise SystemExit(f"error: {error.message}") from None
    finally:
        await db.dispose()
    if resource_id is None:
        print(f"{checked - broken} of {checked} histories intact.")
    return broken == 0


async def _one(report: Any) -> AsyncIterator[Any]:
    yield report


async def _checkpoint_history(settings: Settings) -> None:
    from server.checkpoints import run_checkpoints

    if not settings.secret_key:
        raise SystemExit("error: CASEWAY_SECRET_KEY is not set, so no checkpoint can be signed.")
    db = _db(settings)
    try:
        run = await run_checkpoints(db, secret_key=settings.secret_key)
    finally:
        await db.dispose()
    if run.skipped:
        print("Another process is signing checkpoints right now; nothing to do.")
        return
    print(f"Signed {run.signed} checkpoints; the log is covered through seq {run.through_seq}.")
    for chain in run.refused:
        print(f"Not re-signed: the history of {chain} no longer matches its checkpoint (run verify-history).")


async def _run_due_timers(settings: Settings, now: datetime | None, limit: int) -> None:
    from engine.clock import SYSTEM_CLOCK
    from resolvers.timers import run_due_timers

    db = _db(settings)
    try:
        run = await run_due_timers(db, now=now or SYSTEM_CLOCK.now(), limit=limit)
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


async def _run_jobs(settings: Settings, *, once: bool) -> None:
    """A worker without HTTP: the job runner alone, until stopped (``--once``: until nothing is due)."""
    from server.hub import create_hub
    from server.job_runner import JobRunner

    db = Database(settings.database_url, pool_size=settings.db_pool_size)
    runner = JobRunner(
        db,
        None if once else create_hub(db),
        poll_interval=settings.job_poll_interval,
        concurrency=settings.job_concurrency,
    )
    try:
        if once:
            print(f"Finished {await runner.drain()} jobs.")
            return
        assert runner.hub is not None
        await runner.hub.start()
        runner.start()
        await asyncio.Event().wait()  # until the process is stopped
    finally:
        await runner.stop()
        if runner.hub is not None:
            await runner.hub.stop()
        await db.dispose()


async def _list_jobs(settings: Settings, state: str | None, limit: int) -> None:
    from sqlalchemy import select

    from models import Job

    db = _db(settings)
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


def _when(text: str) -> datetime:
    """An ISO 8601 time for --now; without an offset it is UTC."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r} (e.g. 2030-01-31T12:00:00Z)") from None
    return as_utc(when)


def _refuse_unsafe(settings: Settings) -> None:
    """Several worker processes on SQLite race each other's writes (one action executed twice
    was seen): each process serializes its own writers only."""
    if settings.workers > 1 and normalize_url(settings.database_url).startswith("sqlite"):
        raise SystemExit(
            f"error: cannot serve SQLite with {settings.workers} workers: SQLite has one writer and worker "
            "processes do not share its lock, so concurrent requests can execute an action twice. "
            "Use PostgreSQL (CASEWAY_DATABASE_URL=postgresql://...) for several workers, or serve with --workers 1."
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="caseway", description="Caseway, a GraphQL workflow server.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="apply migrations and serve /graphql")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--workers", type=int)
    serve.add_argument("--demo", action="store_true", help="load demo data if empty and print a demo token")
    commands.add_parser("migrate", help="apply pending migrations and define workflow spec files")
    commands.add_parser("demo", help="load demo data into an empty database")
    create_user = commands.add_parser("create-user", help="create a user")
    create_user.add_argument("login")
    create_user.add_argument("--password", required=True)
    create_user.add_argument("--admin", action="store_true")
    create_user.add_argument("--display-name")
    define = commands.add_parser("define-workflow", help="define a workflow from a YAML or JSON spec file")
    define.add_argument("file", type=Path)
    commands.add_parser("export-schema", help="print the GraphQL SDL")
    verify = commands.add_parser(
        "verify-history", help="verify the activity hash chains and their signed checkpoints (exit 1 if broken)"
    )
    target = verify.add_mutually_exclusive_group(required=True)
    target.add_argument("resource_id", nargs="?", metavar="RESOURCE_ID", help="a project, subproject or item id")
    target.add_argument("--all", action="store_true", help="every chain")
    commands.add_parser("checkpoint-history", help="sign checkpoints of every chain that grew, now")
    due = commands.add_parser("run-due-timers", help="fire the timers due now (or at --now), oldest first")
    due.add_argument("--now", type=_when, help="an ISO 8601 time to fire what is due at (default: now)")
    due.add_argument("--limit", type=int, default=10_000, help="at most this many timers (default 10000)")
    run_jobs = commands.add_parser("run-jobs", help="run jobs without serving HTTP (a worker process)")
    run_jobs.add_argument("--once", action="store_true", help="run what is due, then exit")
    jobs = commands.add_parser("jobs", help="list jobs, newest last, with their errors")
    jobs.add_argument("--state", choices=["PENDING", "RUNNING", "STALLED", "COMPLETED", "FAILED"])
    jobs.add_argument("--limit", type=int, default=100, help="the newest this many (default 100)")
    args = parser.parse_args(argv)
    settings = Settings()
    from server.job_runner import configure_jobs

    try:
        configure_jobs(settings)
    except ValueError as error:
        raise SystemExit(f"error: {error}") from None

    if args.command == "serve":
        overrides = {k: v for k, v in (("host", args.host), ("port", args.port), ("workers", args.workers)) if v}
        settings = settings.model_copy(update=overrides)
        _refuse_unsafe(settings)
        if args.demo:
            asyncio.run(_demo(settings, print_token=True))
        else:
            asyncio.run(_migrate(settings))
        import os

        import uvicorn

        # Workers are separate processes: they read the same settings from the environment.
        os.environ.update({"CASEWAY_DATABASE_URL": settings.database_url})
        uvicorn.run(
            "server.asgi:app",
            host=settings.host,
            port=settings.port,
            workers=settings.workers,
            log_level="info",
            access_log=False,
            # Live events are small JSON frames: compressing each one for each subscriber cost
            # more CPU than it saved bytes, and a zlib state per connection.
            ws_per_message_deflate=False,
            # A WebSocket message is bounded as a request body is (uvicorn's default: 16 MiB);
            # a larger one closes the connection with 1009.
            ws_max_size=settings.max_body_bytes,
        )
    elif args.command == "migrate":
        asyncio.run(_migrate(settings))
        print("Database is up to date.")
    elif args.command == "demo":
        asyncio.run(_demo(settings, print_token=False))
    elif args.command == "create-user":
        asyncio.run(_create_user(settings, args))
    elif args.command == "define-workflow":
        asyncio.run(_define_workflow(settings, args.file))
    elif args.command == "export-schema":
        from schema import schema

        sys.stdout.write(schema.as_str() + "\n")
    elif args.command == "verify-history":
        if not asyncio.run(_verify_history(settings, None if args.all else args.resource_id)):
            raise SystemExit(1)
    elif args.command == "checkpoint-history":
        asyncio.run(_checkpoint_history(settings))
    elif args.command == "run-due-timers":
        if args.limit < 1:
            parser.error("--limit must be at least 1")
        asyncio.run(_run_due_timers(settings, args.now, args.limit))
    elif args.command == "run-jobs":
        asyncio.run(_run_jobs(settings, once=args.once))
    elif args.command == "jobs":
        if args.limit < 1:
            parser.error("--limit must be at least 1")
        asyncio.run(_list_jobs(settings, args.state, args.limit))


if __name__ == "__main__":
    main()
