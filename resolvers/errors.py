"""Turning failures into what clients see."""

from dataclasses import dataclass

from graphql import GraphQLError

from engine.errors import DomainError, DomainErrors, ErrorCode
from engine.people.identity import TokenProblem
from engine.people.oidc_identities import SignInRefused


@dataclass(frozen=True, slots=True)
class UserErrorRow:
    """A DomainError as data: graphql-core treats an exception object in a list as raised."""

    code: ErrorCode
    message: str
    field: list[str] | None


def user_errors(error: DomainError) -> list[UserErrorRow]:
    errors = error.errors if isinstance(error, DomainErrors) else [error]
    return [UserErrorRow(e.code, e.message, e.field) for e in errors]


# One sentence per reason a request is not authenticated, the same over HTTP (an error with the
# code UNAUTHENTICATED) and WebSocket (the close reason: at most 123 bytes).
AUTH_MESSAGES = {
    TokenProblem.MISSING: "Authentication required: send Authorization: Bearer <token>.",
    TokenProblem.MALFORMED: "The Authorization header is malformed: expected Bearer and a token that login returned.",
    TokenProblem.UNKNOWN: "The token is unknown: log in to get a new one.",
    TokenProblem.EXPIRED: "The token has expired: log in again.",
    TokenProblem.REVOKED: "The token was revoked (logged out): log in again.",
    TokenProblem.DISABLED: "The token's user is disabled.",
}


def auth_message(problem: TokenProblem | SignInRefused) -> str:
    """The sentence for ``problem``: a provider's token is refused in words of its own
    (server/oidc.py, engine/people/oidc_identities.py)."""
    return problem.message if isinstance(problem, SignInRefused) else AUTH_MESSAGES[problem]


def unauthenticated(problem: TokenProblem | SignInRefused = TokenProblem.MISSING) -> GraphQLError:
    return GraphQLError(auth_message(problem), extensions={"code": "UNAUTHENTICATED"})


def is_client_error(error: GraphQLError) -> bool:
    """Errors clients may read as they are; everything else is masked as unexpected."""
    original = error.original_error
    return original is None or isinstance(original, GraphQLError)
