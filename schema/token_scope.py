"""Every mutation checks the request's API token's scope before it runs (resolvers/token_scopes.py
says which scope each needs): outside it, the mutation's payload answers one userErrors entry,
TOKEN_SCOPE, and its resolver is never called, so nothing changes."""

from collections.abc import Awaitable, Callable
from typing import Any

from strawberry.extensions import FieldExtension
from strawberry.types.field import StrawberryField

from resolvers import token_scopes


class TokenScope(FieldExtension):
    """Added to each field of ``Mutation`` (schema/__init__.py, ``scoped``)."""

    def apply(self, field: StrawberryField) -> None:
        self.field = field

    def _refused(self, info: Any) -> Any:
        errors = token_scopes.refusal(info.context, info.field_name)
        return None if errors is None else self.field.type(user_errors=errors)  # every payload has userErrors

    def resolve(self, next_: Callable[..., Any], source: Any, info: Any, **kwargs: Any) -> Any:
        refused = self._refused(info)
        return refused if refused is not None else next_(source, info, **kwargs)

    async def resolve_async(self, next_: Callable[..., Awaitable[Any]], source: Any, info: Any, **kwargs: Any) -> Any:
        refused = self._refused(info)
        return refused if refused is not None else await next_(source, info, **kwargs)


def scoped(mutation_type: type) -> type:
    """``mutation_type`` with TokenScope on every field."""
    for field in mutation_type.__strawberry_definition__.fields:  # type: ignore[attr-defined]
        field.extensions.append(TokenScope())
    return mutation_type


__all__ = ["TokenScope", "scoped"]
