"""Every mutation checks the request's API token's scope before it runs (resolvers/token_scopes.py
says which scope each needs): outside it, the mutation's payload answers one userErrors entry,
TOKEN_SCOPE, and its resolver is never called, so nothing changes. A payload without userErrors
(none today) would get the refusal as a client error with the same code and sentence."""

from collections.abc import Awaitable, Callable
from typing import Any

from graphql import GraphQLError
from strawberry.extensions import FieldExtension
from strawberry.types.field import StrawberryField

from resolvers import token_scopes


class TokenScope(FieldExtension):
    """Added to each field of ``Mutation`` (schema/__init__.py, ``scoped``)."""

    def apply(self, field: StrawberryField) -> None:
        self.field = field

    def _refused(self, info: Any) -> Any:
        errors = token_scopes.refusal(info.context, info.field_name)
        if errors is None:
            return None
        payload = self.field.type
        if "user_errors" not in {f.python_name for f in payload.__strawberry_definition__.fields}:
            raise GraphQLError(errors[0].message, extensions={"code": str(errors[0].code)})
        return payload(user_errors=errors)

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
