"""The `caseway` command: serve, migrate, demo, create-user, define-workflow, check-workflow, export-schema,
verify-history, checkpoint-history, archive-history, run-due-timers, run-digests, run-jobs, jobs,
collect-documents, migrate-cases.

Every expected failure is one sentence on stderr and exit code 1 (server/cli_errors.py); a
traceback only with ``caseway --debug``. Commands that work on an existing database check it
is there and migrated first, so that none of them creates an empty SQLite file by accident.
"""

import argparse
import asyncio
import getpass
import json
import os
import re
import sys
import traceback
from datetime import datetime
from pathlib import Path

from models import as_utc
from server import history_commands, serve_command, settings_table, work_commands
from server.cli_database import migrated_database
from server.cli_errors import CliError, SettingError, domain_sentence, load_spec, sentence
from server.settings import Settings


def _password(args: argparse.Namespace) -> str:
    """--password, else one line of standard input (--password-stdin), else asked twice in a
    terminal; never an empty one."""
    if args.password is not None:
        return str(args.password)
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
        if not password:
            raise CliError("no password on standard input (--password-stdin reads its first line).")
        return password
    if not sys.stdin.isatty():
        raise CliError("no password: give --password-stdin and pipe it in, or run in a terminal to be asked.")
    password = getpass.getpass(f"Password for {args.login}: ")
    if getpass.getpass("Repeat it: ") != password:
        raise CliError("the two passwords differ; nothing was created.")
    return password


async def _create_user(settings: Settings, args: argparse.Namespace) -> None:
    from engine.errors import DomainError
    from engine.people import identity

    try:  # before the password is asked for: a login refused after typing it twice wastes both
        identity.require_login(args.login)
    except DomainError:
        raise CliError(f"{args.login!r} is not a login. {identity.LOGIN_RULE} Nothing was created.") from None
    password = _password(args)
    db = await migrated_database(settings)
    try:
        async with db.transaction() as s:
            user = await identity.create_user(
                s,
                actor=None,
                login=args.login,
                password=password,
                display_name=args.display_name,
                admin=args.admin,
            )
        print(f"Created user {user.login} ({user.id}).")
    finally:
        await db.dispose()


async def _define_workflow(settings: Settings, path: Path) -> None:
    from engine.errors import DomainError
    from engine.spec import workflows

    spec = load_spec(path)  # before the database: a typo in the file is told first
    db = await migrated_database(settings)
    try:
        async with db.transaction() as s:
            defined = await workflows.define(s, actor=None, spec=spec)
        workflow = defined.workflow
        print(f"Defined workflow {workflow.short_name} version {workflow.version} ({workflow.id}).")
        for warning in defined.diagnostics:  # as check-workflow prints them
            print(f"{path}: {warning.where}: {warning.code} {warning.message}", file=sys.stderr)
    except DomainError as error:
        raise CliError(f"{path} is not a valid workflow spec: {domain_sentence(error)}") from None
    finally:
        await db.dispose()


def _check_workflow(path: Path) -> bool:
    """Print each finding as ``FILE: path: CODE message`` (its hint indented below); True when
    none is an error. Offline: no database, so user and group ids are not looked up."""
    from engine.errors import DomainError
    from engine.spec import workflows
    from engine.spec.diagnostics import Severity

    try:
        spec = load_spec(path)
    except DomainError as error:  # a key given twice in the file
        print(f"{path}: spec: INVALID_SPEC {error.message}")
        return False
    _, found = workflows.check_spec(spec)
    for d in found:
        print(f"{path}: {d.where}: {d.code} {d.message}")
        if d.hint:
            print(f"    hint: {d.hint}")
    errors = sum(d.severity == Severity.ERROR for d in found)
    print(f"{path}: {errors} errors, {len(found) - errors} warnings.", file=sys.stderr)
    return errors == 0


def _when(text: str) -> datetime:
    """An ISO 8601 time for --now; without an offset it is UTC."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r} (e.g. 2030-01-31T12:00:00Z)") from None
    return as_utc(when)


def _month(text: str) -> datetime:
    """--before: a month, YYYY-MM."""
    from server.history_archive import month

    try:
        return month(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="caseway",
        description="Caseway, a GraphQL workflow server. Settings come from CASEWAY_* environment variables "
        "(CASEWAY_DATABASE_URL: sqlite:///./caseway.db by default, or postgresql://user@host/db).",
    )
    parser.add_argument("--debug", action="store_true", help="show the full traceback of a failure")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str) -> argparse.ArgumentParser:
        return commands.add_parser(name, help=summary, description=summary[0].upper() + summary[1:] + ".")

    serve = command("serve", "apply migrations and serve /graphql (and /health, /ready, /metrics)")
    serve.add_argument("--host", help="address to listen on (default: CASEWAY_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=serve_command.port, help="port to listen on (default: CASEWAY_PORT or 8000)")
    serve.add_argument(
        "--workers", type=_workers, help="worker processes, PostgreSQL only (default: CASEWAY_WORKERS or 1)"
    )
    serve.add_argument(
        "--demo",
        action="store_true",
        help="load the demo data into an empty database (or add the demo users it lacks) and print an admin token",
    )
    command("migrate", "create or upgrade the database and define the workflow spec files")
    command("demo", "load the demo data into an empty database, or add the demo users it lacks")
    create_user = command("create-user", "create a user (asks for the password in a terminal)")
    create_user.add_argument("login", help="the new user's login name")
    given = create_user.add_mutually_exclusive_group()
    given.add_argument("--password", help="the password (visible to other users of this machine: prefer the others)")
    given.add_argument(
        "--password-stdin", action="store_true", help="read the password from the first line of standard input"
    )
    create_user.add_argument("--admin", action="store_true", help="make the user an administrator")
    create_user.add_argument("--display-name", help="the name shown to others (default: the login)")
    define = command("define-workflow", "define a workflow (a new version if its short name exists) from a spec file")
    define.add_argument("file", type=Path, help="a YAML (.yaml, .yml) or JSON (.json) workflow spec")
    check = command(
        "check-workflow",
        "check a workflow spec file without defining it: one line per finding, exit 1 if one is an error",
    )
    check.add_argument("file", type=Path, help="a YAML (.yaml, .yml) or JSON (.json) workflow spec")
    command("export-schema", "print the GraphQL schema (SDL)")
    verify = command(
        "verify-history", "verify the activity hash chains and their signed checkpoints (exit 1 if broken)"
    )
    target = verify.add_mutually_exclusive_group(required=True)
    target.add_argument("resource_id", nargs="?", metavar="RESOURCE_ID", help="a project, subproject or item id")
    target.add_argument("--all", action="store_true", help="every chain, and the sequence of checkpoints")
    verify.add_argument(
        "--against",
        metavar="DIR|s3://BUCKET/PREFIX",
        help="also check the checkpoints against a copy made by checkpoint-history --export (deleted, rolled back)",
    )
    verify.add_argument(
        "--archive",
        metavar="DIR",
        help="start each chain in the archive made by archive-history, and check the archive's files too",
    )
    archiving = command(
        "archive-history",
        "write the log's partitions wholly before a month to a directory, verify them, then drop them (PostgreSQL)",
    )
    archiving.add_argument("--before", required=True, type=_month, metavar="MONTH", help="YYYY-MM: entries before it")
    archiving.add_argument("--to", required=True, metavar="DIR", help="the archive's directory (made if missing)")
    checkpoint = command(
        "checkpoint-history", "sign checkpoints of every chain that grew, now (needs CASEWAY_SECRET_KEY)"
    )
    checkpoint.add_argument(
        "--export",
        metavar="DIR|s3://BUCKET/PREFIX",
        help="then add the checkpoints the copy lacks to it, outside the database (for verify-history --against)",
    )
    due = command("run-due-timers", "fire the timers due now (or at --now), oldest first")
    due.add_argument("--now", type=_when, help="an ISO 8601 time to fire what is due at (default: now)")
    due.add_argument("--limit", type=int, default=10_000, help="at most this many timers (default 10000)")
    digests = command("run-digests", "queue the email digests due now (or at --now) as jobs to send")
    digests.add_argument("--now", type=_when, help="an ISO 8601 time to close the windows due at (default: now)")
    digests.add_argument("--limit", type=int, default=10_000, help="at most this many windows (default 10000)")
    run_jobs = command("run-jobs", "run jobs without serving HTTP (a worker process)")
    run_jobs.add_argument("--once", action="store_true", help="run what is due, then exit")
    jobs = command("jobs", "list jobs, newest last, with their errors")
    jobs.add_argument(
        "--state", choices=["PENDING", "RUNNING", "STALLED", "COMPLETED", "FAILED"], help="only the jobs in this state"
    )
    jobs.add_argument("--limit", type=int, default=100, help="the newest this many (default 100)")
    collect = command("collect-documents", "delete stored document files no document refers to (failed uploads)")
    collect.add_argument(
        "--grace", type=float, default=3600, help="seconds a file is left alone after it was written (default 3600)"
    )
    moving = command(
        "migrate-cases",
        "move running cases to another version of their workflow, batch after batch (exit 1 if one is refused)",
    )
    moving.add_argument("--workflow", required=True, help="the workflow's short name")
    moving.add_argument("--to-version", type=int, required=True, help="the version to move the cases to")
    moving.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="FROM=TO",
        help="a state of the cases' version and the state of the new one it becomes (repeat; a state left out "
        "keeps its name)",
    )
    moving.add_argument(
        "--timer-policy",
        choices=["KEEP", "RESTART"],
        default="KEEP",
        help="a running timer keeps its due time (KEEP, the default) or starts its new timeout from now",
    )
    which = moving.add_mutually_exclusive_group(required=True)
    which.add_argument("--subproject", metavar="ID", help="the subproject's running cases (and its new items)")
    which.add_argument("--case", action="append", metavar="ID", help="this case (repeat)")
    moving.add_argument("--dry-run", action="store_true", help="say where each case would land, change nothing")
    moving.add_argument("--batch-size", type=int, default=500, help="cases per transaction, 1 to 500 (default 500)")
    return parser


def _settings() -> Settings:
    """The settings from the environment; the first one refused is said in one sentence naming
    it, its value and what it may be (server/settings_table.py), with exit code 2."""
    from pydantic import ValidationError
    from pydantic_settings import SettingsError

    try:
        return Settings()
    except SettingsError as error:  # a JSON setting that is not JSON
        found = re.search(r'field "(\w+)"', str(error))
        name = f"CASEWAY_{found.group(1).upper()}" if found else "A CASEWAY_ setting"
        cause = error.__cause__
        why = (
            f": {cause.msg} (line {cause.lineno}, column {cause.colno})"
            if isinstance(cause, json.JSONDecodeError)
            else ""
        )
        raise SettingError(f"{name} is not valid JSON{why}.") from None
    except ValidationError as error:
        first = error.errors()[0]
        message = first["msg"].removeprefix("Value error, ")
        if not first["loc"]:  # a rule of several settings: its message names them
            raise SettingError(f"{message}.") from None
        name = "CASEWAY_" + "_".join(str(part) for part in first["loc"]).upper()
        if name in ("CASEWAY_DATABASE_URL", "CASEWAY_DATABASE_DIRECT_URL", "CASEWAY_DATABASE_REPLICA_URLS"):
            # not echoed: it may hold a password
            raise SettingError(f"{name} {message}.") from None
        field = Settings.model_fields.get(str(first["loc"][0]))
        if field is not None and settings_table.is_number(field):
            raise SettingError(
                f"{name} is {first.get('input')!r}: it must be {settings_table.allowed(field)}."
            ) from None
        raise SettingError(f"{name}: {message} (got {first.get('input')!r}).") from None


def _workers(text: str) -> int:
    """--workers: at least one (0 and -3 were taken for the default and for nothing)."""
    field = Settings.model_fields["workers"]
    try:
        workers = int(text)
    except ValueError:
        workers = None
    if workers is None or not 1 <= workers <= 256:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of workers: it must be {settings_table.allowed(field)}"
        )
    return workers


def main(argv: list[str] | None = None) -> None:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        _run(parser, args)
    except (SystemExit, KeyboardInterrupt):
        raise
    except Exception as error:
        if args.debug:
            raise
        url = os.environ.get("CASEWAY_DATABASE_URL", Settings.model_fields["database_url"].default)
        message = sentence(error, url)
        if message is None:
            last = traceback.extract_tb(error.__traceback__)[-1]
            message = (
                f"unexpected {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''} "
                f"(at {Path(last.filename).name}:{last.lineno}; `caseway --debug {args.command} ...` shows where)"
            )
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(error.exit_code if isinstance(error, CliError) else 1) from None


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.command == "export-schema":
        from schema import schema

        sys.stdout.write(schema.as_str() + "\n")
        return
    settings = _settings()
    from server.job_runner import configure_jobs
    from server.mail import configure_mail

    try:
        configure_jobs(settings)  # webhook endpoints and retry policies: refused before anything runs
        configure_mail(settings, None)  # the SMTP URL and its link key, likewise (run-jobs adds the database)
    except ValueError as error:
        raise SettingError(str(error)) from None
    if args.command == "serve":
        given = (("host", args.host), ("port", args.port), ("workers", args.workers))
        overrides = {k: v for k, v in given if v is not None}
        serve_command.serve(settings.model_copy(update=overrides), args.demo)
    elif args.command == "migrate":
        asyncio.run(serve_command.migrate(settings))
        print("Database is up to date.")
    elif args.command == "demo":
        asyncio.run(serve_command.demo(settings, print_token=False))
    elif args.command == "create-user":
        asyncio.run(_create_user(settings, args))
    elif args.command == "define-workflow":
        asyncio.run(_define_workflow(settings, args.file))
    elif args.command == "check-workflow":
        if not _check_workflow(args.file):
            raise SystemExit(1)
    elif args.command == "verify-history":
        if not asyncio.run(
            history_commands.verify_history(
                settings, None if args.all else args.resource_id, args.against, args.archive
            )
        ):
            raise SystemExit(1)
    elif args.command == "archive-history":
        asyncio.run(history_commands.archive_history(settings, args.before, args.to))
    elif args.command == "checkpoint-history":
        asyncio.run(history_commands.checkpoint_history(settings, args.export))
    elif args.command == "run-due-timers":
        if args.limit < 1:
            parser.error("--limit must be at least 1")
        asyncio.run(work_commands.run_due_timers_command(settings, args.now, args.limit))
    elif args.command == "run-digests":
        from server.digest_command import run_digests_command

        if args.limit < 1:
            parser.error("--limit must be at least 1")
        asyncio.run(run_digests_command(settings, args.now, args.limit, open_db=migrated_database))
    elif args.command == "run-jobs":
        asyncio.run(work_commands.run_jobs(settings, once=args.once))
    elif args.command == "jobs":
        if args.limit < 1:
            parser.error("--limit must be at least 1")
        asyncio.run(work_commands.list_jobs(settings, args.state, args.limit))
    elif args.command == "collect-documents":
        if args.grace < 0:
            parser.error("--grace must not be negative")
        asyncio.run(work_commands.collect_documents(settings, args.grace))
    elif args.command == "migrate-cases":
        from server import case_migration

        if asyncio.run(case_migration.run(args, open_db=lambda: migrated_database(settings))).refused:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
