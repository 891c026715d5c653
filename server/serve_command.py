"""`caseway serve`, `migrate` and `demo`: the database made ready (migrated, the demo loaded)
and the server run under uvicorn, refusing what cannot work (several workers on SQLite, a port
that does not exist or is taken) before anything is printed.
"""

import argparse
import asyncio
import os
import secrets
import shutil
import tempfile

from models import normalize_url
from server.cli_database import database
from server.cli_errors import check_port_free
from server.settings import Settings

__all__ = ["demo", "migrate", "port", "serve"]


async def migrate(settings: Settings) -> None:
    from server.bootstrap import prepare

    db = database(settings)
    try:
        await prepare(settings, db)
    finally:
        await db.dispose()


async def demo(settings: Settings, *, print_token: bool) -> None:
    from server.bootstrap import DEMO_PASSWORD, add_demo_users, demo_token, load_demo, prepare

    db = database(settings)
    try:
        await prepare(settings, db)
        if await load_demo(db):
            print(
                f"Loaded demo data: users admin, alice, bob, carol (password {DEMO_PASSWORD!r}), "
                "a group, two projects and their items."
            )
        elif added := await add_demo_users(db):
            print(
                f"The database has users already, so no demo projects were loaded; added the demo users it "
                f"lacked: {', '.join(added)} (password {DEMO_PASSWORD!r})."
            )
        else:
            print("Demo data skipped: the database has users already, the demo users among them.")
        if print_token:
            token = await demo_token(db, settings)
            url = f"http://{settings.host}:{settings.port}/graphql"
            print(
                f"\n  Dashboard:  http://{settings.host}:{settings.port}/  (sign in as alice, {DEMO_PASSWORD!r})"
                f"\n  GraphiQL:   {url}\n  Demo token: {token}\n"
                f'  In GraphiQL\'s headers tab: {{"Authorization": "Bearer {token}"}}\n',
                flush=True,
            )
    finally:
        await db.dispose()


def port(text: str) -> int:
    """A TCP port, 1 to 65535: uvicorn would otherwise say it serves on 99999 and listen elsewhere."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1 to 65535)") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} does not exist: a port is 1 to 65535")
    return port


def _refuse_unsafe(settings: Settings) -> None:
    """Several worker processes on SQLite race each other's writes (one action executed twice
    was seen): each process serializes its own writers only."""
    if settings.workers > 1 and normalize_url(settings.database_url).startswith("sqlite"):
        raise SystemExit(
            f"error: cannot serve SQLite with {settings.workers} workers: SQLite has one writer and worker "
            "processes do not share its lock, so concurrent requests can execute an action twice. "
            "Use PostgreSQL (CASEWAY_DATABASE_URL=postgresql://...) for several workers, or serve with --workers 1."
        )


def serve(settings: Settings, demo_data: bool) -> None:
    """Prepare the database (migrate; ``demo_data``: load the demo and print a token), then run
    uvicorn with the settings' workers, each of which reads them from the environment."""
    _refuse_unsafe(settings)
    check_port_free(settings.host, settings.port)  # before the token is printed
    asyncio.run(demo(settings, print_token=True) if demo_data else migrate(settings))
    # Workers are separate processes: they read the same settings from the environment.
    os.environ.update({"CASEWAY_DATABASE_URL": settings.database_url})
    if not settings.secret_key:  # one key for every worker's signed download links
        from server.documents import SERVE_LINK_KEY

        os.environ.setdefault(SERVE_LINK_KEY, secrets.token_hex(32))
    made = None
    if settings.workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # /metrics sums every worker's values from files here (server/metrics.py)
        made = os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="caseway-metrics-")
    try:
        _uvicorn(settings)
    finally:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)


def _uvicorn(settings: Settings) -> None:
    import uvicorn

    from server.access_log import logging_config

    uvicorn.run(
        "server.asgi:app",
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_level="info",
        log_config=logging_config(settings.log_format),
        access_log=False,  # server/access_log.py writes one line per request
        # Live events are small JSON frames: compressing each one for each subscriber cost
        # more CPU than it saved bytes, and a zlib state per connection.
        ws_per_message_deflate=False,
        # A WebSocket message is bounded as a request body is (uvicorn's default: 16 MiB);
        # a larger one closes the connection with 1009.
        ws_max_size=settings.max_body_bytes,
        # uvicorn believes X-Forwarded-For from 127.0.0.1 by default: any local process could then
        # pick the address the login throttle counts. Only the proxies named are believed.
        proxy_headers=bool(settings.forwarded_allow_ips),
        forwarded_allow_ips=settings.forwarded_allow_ips or None,
        # A worker that does not answer its supervisor's ping in time is killed and reported as
        # "died" with no traceback (server/asgi.py); 5 s was seen to pass while one started.
        timeout_worker_healthcheck=30,
    )
