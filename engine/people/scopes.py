"""What an API token's scopes allow. They only narrow what the token's user may do: READ (queries
and subscriptions), EXECUTE (also executing actions, with their comments and documents), WRITE
(everything the user may). Each includes the ones below it. Which mutation needs which scope is
the API's table (resolvers/token_scopes.py); ``allows`` is the one rule both read."""

import enum
from collections.abc import Iterable

from engine.people.actors import Actor


class Scope(enum.StrEnum):
    READ = "READ"
    EXECUTE = "EXECUTE"
    WRITE = "WRITE"


LEVEL = {Scope.READ: 0, Scope.EXECUTE: 1, Scope.WRITE: 2}


def highest(scopes: Iterable[str]) -> Scope:
    """What a token's scopes allow together."""
    return max((Scope(s) for s in scopes), key=LEVEL.__getitem__)


def allows(actor: Actor, needed: Scope) -> bool:
    """Whether ``actor``'s credential reaches ``needed`` (an actor without a scoped token: always)."""
    return actor.scope is None or LEVEL[Scope(actor.scope)] >= LEVEL[needed]


__all__ = ["LEVEL", "Scope", "allows", "highest"]
