"""The `caseway` command: serve, migrate, demo, create-user, define-workflow, export-schema."""

import argparse
import asyncio
import sys
from pathlib import Path

from models import Database
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
    args = parser.parse_args(argv)
    settings = Settings()

    if args.command == "serve":
        overrides = {k: v for k, v in (("host", args.host), ("port", args.port), ("workers", args.workers)) if v}
        settings = settings.model_copy(update=overrides)
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


if __name__ == "__main__":
    main()
