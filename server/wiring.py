"""What an app owns that the engine reads from the process: its mail server, its webhook
endpoints, its job retry policies and its publisher.

Why: they were module globals that ``create_app`` set, so the newest app of a process took the
others' over (two apps in one process, as tests and embedders make, sent each other's email and
webhooks, and published each other's writes to the newest hub). Now each app holds its own
``Wiring`` and sets it, as context variables, around each of its calls (``Wired``: every HTTP
request, WebSocket and lifespan message) and around its lifespan (so its background tasks,
created there, inherit it). The engine reads the app's value when one is set, else the process's
(the CLI's commands configure that one; ``create_app`` still sets it too, for what runs outside
any app, such as a test driving the engine directly).
"""

from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any

from engine.jobs import RetryPolicy, app_policies
from engine.jobs.webhook import Endpoint, app_endpoints
from engine.notify import mail
from models import Database
from models.unit_of_work import APP_PUBLISHER, Publisher
from server.job_runner import job_setup
from server.mail import mail_setup
from server.settings import Settings


@dataclass(frozen=True)
class Wiring:
    mail: tuple[mail.MailConfig | None, Database | None]
    endpoints: dict[str, Endpoint]
    policies: dict[str, RetryPolicy]
    publisher: Publisher

    @classmethod
    def of(cls, settings: Settings, db: Database, publisher: Publisher) -> "Wiring":
        """An app's wiring from its settings; a bad value raises ValueError naming it."""
        endpoints, policies = job_setup(settings)
        return cls(mail_setup(settings, db), endpoints, policies, publisher)

    def set(self) -> list[tuple[ContextVar[Any], Token[Any]]]:
        pairs: list[tuple[ContextVar[Any], Any]] = [
            (mail.app_setup(), self.mail),
            (app_endpoints(), self.endpoints),
            (app_policies(), self.policies),
            (APP_PUBLISHER, self.publisher),
        ]
        return [(var, var.set(value)) for var, value in pairs]

    @staticmethod
    def reset(tokens: list[tuple[ContextVar[Any], Token[Any]]]) -> None:
        for var, token in reversed(tokens):
            try:
                var.reset(token)
            except ValueError:  # ended in another context than it began (a test's fixture): undone there
                var.set(None if token.old_value is Token.MISSING else token.old_value)


class Wired:
    """ASGI middleware: the app's wiring set around each call."""

    def __init__(self, app: Any, wiring: Wiring) -> None:
        self.app = app
        self.wiring = wiring

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        tokens = self.wiring.set()
        try:
            await self.app(scope, receive, send)
        finally:
            self.wiring.reset(tokens)


__all__ = ["Wired", "Wiring"]
