"""A process's email settings (``CASEWAY_SMTP_URL``, ``CASEWAY_MAIL_FROM``, ``CASEWAY_PUBLIC_URL``)
applied to engine/notify/mail.py: by the server and by ``caseway run-jobs``, which send the messages."""

from engine.notify import mail
from models import Database
from server.settings import Settings


def mail_setup(settings: Settings, db: Database | None) -> tuple[mail.MailConfig | None, Database | None]:
    """No SMTP URL: no email (choosing EMAIL is refused). A bad one, or one without a secret key
    to sign unsubscribe links, raises ValueError naming it, so the process does not start."""
    if not settings.smtp_url:
        return None, None
    public_url = settings.public_url or f"http://{settings.host}:{settings.port}"
    config = mail.make_config(
        smtp_url=settings.smtp_url, sender=settings.mail_from, public_url=public_url, secret_key=settings.secret_key
    )
    return config, db


def configure_mail(settings: Settings, db: Database | None) -> None:
    """This process's email (``caseway run-jobs``; and the newest app's, for what runs outside
    any app: an app's own calls read its own, server/wiring.py)."""
    mail.configure(*mail_setup(settings, db))
