"""Turning failures into what clients see."""

from graphql import GraphQLError

from engine.errors import DomainError, DomainErrors


def user_errors(error: DomainError) -> list[DomainError]:
    return list(error.errors) if isinstance(error, DomainErrors) else [error]


def unauthenticated() -> GraphQLError:
    return GraphQLError("Authentication required: send Authorization: Bearer <token>.",
                        extensions={"code": "UNAUTHENTICATED"})


def is_client_error(error: GraphQLError) -> bool:
    """Errors clients may read as they are; everything else is masked as unexpected."""
    original = error.original_error
    return original is None or isinstance(original, GraphQLError)
