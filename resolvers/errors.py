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


# A database that refuses connections, has none left or is shutting down: the client may try
# again, and is told so (code UNAVAILABLE, HTTP 503 with Retry-After) rather than "Unexpected error."
UNAVAILABLE_MESSAGE = "The database is unavailable or has no connection free right now: try again in a few seconds."
RETRY_AFTER_SECONDS = 5
_UNAVAILABLE_STATES = ("08", "53", "57P01", "57P02", "57P03")  # connection, resources, shutdown, starting up
_UNAVAILABLE_NAMES = {
    "ConnectionRefusedError",
    "ConnectionResetError",
    "ConnectionDoesNotExistError",  # asyncpg: the server closed the connection mid-query
    "TimeoutError",  # SQLAlchemy's pool: no connection came free in time (a subclass of its own name)
    "gaierror",
}


def database_unavailable(error: BaseException | None) -> bool:
    """Whether the error, or one it wraps, says the database cannot be reached or has no
    connection to give: PostgreSQL's "too many clients" (SQLSTATE 53300), a refused or reset
    connection, a server shutting down or starting, SQLAlchemy's pool timing out."""
    seen: list[BaseException] = []
    while error is not None and not any(error is s for s in seen):
        seen.append(error)
        state = getattr(error, "sqlstate", None)
        if isinstance(state, str) and state.startswith(_UNAVAILABLE_STATES):
            return True
        if type(error).__name__ in _UNAVAILABLE_NAMES and type(error).__module__.split(".")[0] in (
            "builtins",
            "asyncpg",
            "sqlalchemy",
            "socket",
        ):
            return True
        error = getattr(error, "orig", None) or error.__cause__ or error.__context__
    return False


def unavailable(error: GraphQLError | None = None) -> GraphQLError:
    """The error a client sees for a database that is unavailable (see ``database_unavailable``)."""
    where = {"nodes": error.nodes, "path": error.path} if error is not None else {}
    return GraphQLError(UNAVAILABLE_MESSAGE, extensions={"code": "UNAVAILABLE"}, **where)  # type: ignore[arg-type]


def is_client_error(error: GraphQLError) -> bool:
    """Errors clients may read as they are; everything else is masked as unexpected."""
    original = error.original_error
    return original is None or isinstance(original, GraphQLError)
