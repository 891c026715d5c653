"""Turning failures into what clients see."""

from dataclasses import dataclass

from graphql import GraphQLError

from engine.errors import DomainError, DomainErrors, ErrorCode


@dataclass(frozen=True, slots=True)
class UserErrorRow:
    """A DomainError as data: graphql-core treats an exception object in a list as raised."""

    code: ErrorCode
    message: str
    field: list[str] | None


def user_errors(error: DomainError) -> list[UserErrorRow]:
    errors = error.errors if isinstance(error, DomainErrors) else [error]
    return [UserErrorRow(e.code, e.message, e.field) for e in errors]


def unauthenticated() -> GraphQLError:
    return GraphQLError(
        "Authentication required: send Authorization: Bearer <token>.", extensions={"code": "UNAUTHENTICATED"}
    )


def is_client_error(error: GraphQLError) -> bool:
    """Errors clients may read as they are; everything else is masked as unexpected."""
    original = error.original_error
    return original is None or isinstance(original, GraphQLError)
