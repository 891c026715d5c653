"""Email out of Caseway: the SMTP server of ``CASEWAY_SMTP_URL``, the job rows that send
(kind ``email``, one per message: engine/notify/delivery.py runs them), the links into the
dashboard a message carries (only with ``CASEWAY_PUBLIC_URL``: a link to a guessed address would
lead nowhere), and the signed one-click unsubscribe links every message carries (RFC 8058;
``server/unsubscribe.py`` answers them).

A message is a durable job of no case: written in the transaction that decided to send it (a
notification's, or a digest window's), sent after the commit by the job runner, retried with
backoff while the server is away (STALLED), FAILED when it refuses for good (5xx). Its
``idempotency_key`` names what it is about (``email:<notification>``,
``digest:<user>:<frequency>:<window end>``) and is unique among jobs, so a message is made once
however many processes decide it; its Message-ID is built from that key, so a resend after a
crash (a job reconciled mid-send) is the same message to the receiving side.
"""

import hashlib
import hmac
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from email.message import EmailMessage
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import aiosmtplib

from engine.jobs.kinds import Permanent, Transient
from engine.jobs.outbox import jobs_were_written
from models import Database, Job, new_id
from models.db import insert_for

KIND = "email"
SMTP_TIMEOUT = 30.0  # seconds one message may take to send
_SCHEMES = {"smtp": (25, False), "smtps": (465, True)}


@dataclass(frozen=True, slots=True)
class MailConfig:
    """Where mail goes and how links in it are made: the SMTP server, the sender, the server's
    address (for unsubscribe links: the public one, else the one it listens on), the public
    address the dashboard's links start with (None: ``CASEWAY_PUBLIC_URL`` is unset, and a
    message links to nothing but its unsubscribe page) and the key that signs unsubscribe links."""

    hostname: str
    port: int
    use_tls: bool
    username: str | None
    password: str | None
    sender: str
    public_url: str
    key: bytes
    links_url: str | None = None


def parse_smtp_url(url: str) -> tuple[str, int, bool, str | None, str | None]:
    """``smtp://[user:password@]host[:port]`` (STARTTLS when the server offers it) or ``smtps://``
    (TLS from the start); ValueError names what is wrong, so a misconfigured server does not start."""
    parts = urlsplit(url)
    if parts.scheme not in _SCHEMES or not parts.hostname:
        raise ValueError("CASEWAY_SMTP_URL is smtp://host:port or smtps://host:port (user:password@ optional)")
    default_port, tls = _SCHEMES[parts.scheme]
    try:
        port = parts.port or default_port
    except ValueError:
        raise ValueError("CASEWAY_SMTP_URL has a port that is not a number from 1 to 65535") from None
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password else None
    return parts.hostname, port, tls, user, password


def make_config(
    *, smtp_url: str, sender: str, public_url: str, secret_key: str, links_url: str | None = None
) -> MailConfig:
    host, port, tls, user, password = parse_smtp_url(smtp_url)
    if not secret_key:
        raise ValueError(
            "CASEWAY_SMTP_URL needs CASEWAY_SECRET_KEY: it signs the unsubscribe links in emails, which must "
            "keep working in every server process and after restarts"
        )
    key = hmac.new(secret_key.encode(), b"caseway unsubscribe links", hashlib.sha256).digest()
    links = links_url.rstrip("/") if links_url else None
    return MailConfig(host, port, tls, user, password, sender, public_url.rstrip("/"), key, links)


# The process's mail setup (``configure``: the CLI's commands), and the one of the app whose
# request or background task is running (``app_setup``, a context variable the app sets around
# each of its calls): two apps in one process each keep their own.
_process: tuple[MailConfig | None, Database | None] = (None, None)
_app: ContextVar[tuple[MailConfig | None, Database | None] | None] = ContextVar("caseway_mail", default=None)


def configure(config: MailConfig | None, db: Database | None = None) -> None:
    """Set this process's mail server (``caseway run-jobs`` does, from settings); None: no email
    (choosing EMAIL is refused, and no message is made). A server's app sets its own (``app_setup``)."""
    global _process
    _process = (config, db)


def app_setup() -> ContextVar[tuple[MailConfig | None, Database | None] | None]:
    """The context variable an app sets to its own (config, database) around its calls."""
    return _app


def _setup() -> tuple[MailConfig | None, Database | None]:
    return _app.get() or _process


def config() -> MailConfig | None:
    return _setup()[0]


def database() -> Database | None:
    """The database a message is composed from when it is sent (what its reader may see then)."""
    return _setup()[1]


# --- Links into the dashboard -----------------------------------------------------------

TASKS_PATH = "/#/tasks"  # the dashboard's list of the reader's tasks (web/src/main.jsx)


def link(path: str | None) -> str | None:
    """The dashboard's address of ``path`` (a sentence's: ``/#/item/<id>[/<action>]``,
    engine/notify/sentences.py; or ``TASKS_PATH``); None without ``CASEWAY_PUBLIC_URL`` or a
    path. Following it shows the reader only what they may see then."""
    setup = config()
    if setup is None or setup.links_url is None or not path:
        return None
    return f"{setup.links_url}{path}"


# --- Unsubscribe links -------------------------------------------------------------------


def _signature(key: bytes, user_id: str, levels: str) -> str:
    return hmac.new(key, f"unsubscribe\n{user_id}\n{levels}".encode(), hashlib.sha256).hexdigest()


def unsubscribe_url(user_id: str, levels: list[str]) -> str:
    """The link that turns email off for ``levels`` of ``user_id``. It does not expire: a
    message read months later still unsubscribes."""
    setup = config()
    assert setup is not None, "mail is not configured"
    joined = ",".join(sorted(levels))
    sig = _signature(setup.key, user_id, joined)
    return f"{setup.public_url}/unsubscribe?user={quote(user_id)}&levels={quote(joined)}&sig={sig}"


def verify_unsubscribe(params: Mapping[str, str]) -> tuple[str, list[str]] | None:
    """The user and levels of a genuine link, else None (no mail configured, or a bad signature)."""
    setup = config()
    if setup is None:
        return None
    user_id, levels, sig = params.get("user", ""), params.get("levels", ""), params.get("sig", "")
    if not (user_id and levels and sig) or len(user_id) > 100 or len(levels) > 100:
        return None
    expected = _signature(setup.key, user_id, levels)
    if not hmac.compare_digest(sig.encode(), expected.encode()):
        return None
    return user_id, levels.split(",")


# --- Sending -----------------------------------------------------------------------------


def message_id(key: str) -> str:
    """The same for every send of one job: a receiver that dedupes by Message-ID sees one message."""
    return f"<{hashlib.sha256(key.encode()).hexdigest()[:32]}@caseway>"


def headers(message: EmailMessage, *, to: str, subject: str, key: str, unsubscribe: str) -> None:
    """The headers every message carries, one-click unsubscribe (RFC 8058) included."""
    setup = config()
    assert setup is not None, "mail is not configured"
    message["From"] = setup.sender
    message["To"] = to
    message["Subject"] = subject
    message["Message-ID"] = message_id(key)
    message["List-Unsubscribe"] = f"<{unsubscribe}>"
    message["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    message["Auto-Submitted"] = "auto-generated"


async def send(message: EmailMessage) -> None:
    """Hand the message to the SMTP server. Transient: it may work later (unreachable, timed out,
    a 4xx answer); Permanent: the server refused it for good (a 5xx answer)."""
    setup = config()
    if setup is None:
        raise Permanent("NO_SMTP", "No SMTP server is configured (CASEWAY_SMTP_URL).")
    try:
        await aiosmtplib.send(
            message,
            hostname=setup.hostname,
            port=setup.port,
            use_tls=setup.use_tls,
            username=setup.username,
            password=setup.password,
            timeout=SMTP_TIMEOUT,
        )
    except aiosmtplib.SMTPRecipientsRefused as refused:
        codes = sorted({r.code for r in refused.recipients})
        error = Permanent if all(code >= 500 for code in codes) else Transient
        raise error(f"SMTP_{codes[0]}", "The SMTP server refused the recipient.") from None
    except aiosmtplib.SMTPResponseException as answer:
        error = Permanent if answer.code >= 500 else Transient
        raise error(f"SMTP_{answer.code}", f"The SMTP server answered {answer.code}.") from None
    except (aiosmtplib.SMTPException, OSError, TimeoutError) as failure:
        raise Transient("CONNECTION", f"The SMTP server could not be reached ({type(failure).__name__}).") from None


# --- Job rows ----------------------------------------------------------------------------


async def enqueue(session: Any, *, key: str, input: dict[str, Any], now: datetime) -> bool:
    """Write the job of one message, due now, unless a job of ``key`` exists (another process
    made it): whether this call made it. A job of no case, seen by admins alone."""
    job_id = new_id("job")
    values = {
        "id": job_id,
        "kind": KIND,
        "state": "PENDING",
        "step": "",
        "attempts": 0,
        "claims": 0,
        "next_attempt_at": now,
        "input": input,
        "progress": {},
        "idempotency_key": key,
        "serialization_key": job_id,
        "created_at": now,
        "updated_at": now,
    }
    insert = insert_for(session)(Job).values(**values).on_conflict_do_nothing(index_elements=["idempotency_key"])
    made = (await session.execute(insert)).rowcount == 1
    if made:
        jobs_were_written(session)
    return made


__all__ = [
    "KIND",
    "TASKS_PATH",
    "MailConfig",
    "app_setup",
    "config",
    "configure",
    "database",
    "enqueue",
    "headers",
    "link",
    "make_config",
    "message_id",
    "parse_smtp_url",
    "send",
    "unsubscribe_url",
    "verify_unsubscribe",
]
