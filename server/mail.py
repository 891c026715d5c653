"""A process's email settings (``CASEWAY_SMTP_URL``, ``CASEWAY_MAIL_FROM``, ``CASEWAY_PUBLIC_URL``)
applied to engine/notify/mail.py: by the server and by ``caseway run-jobs``, which send the messages."""

import logging

from engine.notify import mail
from models import Database
from server.settings import Settings

log = logging.getLogger("caseway.mail")

LINKS_OFF = (
    "email: messages carry no links to items or tasks; set CASEWAY_PUBLIC_URL (where people reach "
    "this server, e.g. https://caseway.example) to turn them on"
)


def mail_setup(settings: Settings, db: Database | None) -> tuple[mail.MailConfig | None, Database | None]:
    """No SMTP URL: no email (choosing EMAIL is refused). A bad one, or one without a secret key
    to sign unsubscribe links, raises ValueError naming it, so the process does not start.
    Links into the dashboard only with ``CASEWAY_PUBLIC_URL``: the address a server listens on
    (``0.0.0.0:8000`` behind a proxy) is rarely one a reader can open; unsubscribe links, which
    must work, fall back to it as they always have."""
    if not settings.smtp_url:
        return None, None
    public_url = settings.public_url or f"http://{settings.host}:{settings.port}"
    config = mail.make_config(
        smtp_url=settings.smtp_url,
        sender=settings.mail_from,
        public_url=public_url,
        secret_key=settings.secret_key,
        links_url=settings.public_url or None,
    )
    return config, db


def configure_mail(settings: Settings, db: Database | None) -> None:
    """This process's email (``caseway run-jobs``; and the newest app's, for what runs outside
    any app: an app's own calls read its own, server/wiring.py). Said once at start: email
    without links, and the setting that turns them on."""
    setup = mail_setup(settings, db)
    if setup[0] is not None and setup[0].links_url is None:
        log.info(LINKS_OFF)
    mail.configure(*setup)
