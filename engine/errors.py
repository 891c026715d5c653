"""Typed domain errors. The API layer turns each into one ``userErrors`` entry."""

from enum import StrEnum


class ErrorCode(StrEnum):
    INVALID_INPUT = "INVALID_INPUT"
    NOT_FOUND = "NOT_FOUND"
    NOT_ALLOWED = "NOT_ALLOWED"
    INVALID_CREDENTIALS = "INVALID_CREDENTIALS"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    RESOURCE_CLOSED = "RESOURCE_CLOSED"
    OPEN_CHILDREN = "OPEN_CHILDREN"
    UNKNOWN_ITEM = "UNKNOWN_ITEM"
    LAST_GRANT_HOLDER = "LAST_GRANT_HOLDER"
    INVALID_SPEC = "INVALID_SPEC"
    ACTION_NOT_ENABLED = "ACTION_NOT_ENABLED"
    UNKNOWN_ACTION = "UNKNOWN_ACTION"
    CASE_NOT_ACTIVE = "CASE_NOT_ACTIVE"
    CASE_NOT_SUSPENDED = "CASE_NOT_SUSPENDED"
    VERSION_CONFLICT = "VERSION_CONFLICT"
    PREVIOUS_ITEMS_OPEN = "PREVIOUS_ITEMS_OPEN"
    IDEMPOTENCY_KEY_REUSED = "IDEMPOTENCY_KEY_REUSED"
    PARTY_NOT_ALLOWED = "PARTY_NOT_ALLOWED"
    UNKNOWN_ROLE = "UNKNOWN_ROLE"
    WORKFLOW_LOOP = "WORKFLOW_LOOP"
    TOO_MANY_ATTEMPTS = "TOO_MANY_ATTEMPTS"
    JOB_NOT_FAILED = "JOB_NOT_FAILED"
    JOB_NOT_STALLED = "JOB_NOT_STALLED"
    AMBIGUOUS_ACTION = "AMBIGUOUS_ACTION"
    TOO_MANY_INSTANCES = "TOO_MANY_INSTANCES"
    TOO_LARGE = "TOO_LARGE"
    TOO_MANY_DOCUMENTS = "TOO_MANY_DOCUMENTS"
    SELF_DEPUTY = "SELF_DEPUTY"
    TOO_MANY_DEPUTIES = "TOO_MANY_DEPUTIES"
    WORKFLOW_RETIRED = "WORKFLOW_RETIRED"
    STATE_NOT_MAPPED = "STATE_NOT_MAPPED"
    STATE_STRANDED = "STATE_STRANDED"
    MISSING_IN_VERSION = "MISSING_IN_VERSION"
    ALREADY_ON_VERSION = "ALREADY_ON_VERSION"
    TOKEN_SCOPE = "TOKEN_SCOPE"  # the request's API token does not reach the mutation (resolvers/token_scopes.py)
    INVALID_FIELD = "INVALID_FIELD"  # a case field's value (engine/cases/case_fields.py)
    CONDITION_FAILED = "CONDITION_FAILED"  # a rule that could not be evaluated (engine/spec/rules.py)


class DomainError(Exception):
    """A business rule said no. ``field`` is the input path the error is about."""

    def __init__(self, code: ErrorCode, message: str, field: list[str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field


class DomainErrors(DomainError):
    """Several independent problems with one input, reported together."""

    def __init__(self, errors: list[DomainError]) -> None:
        super().__init__(errors[0].code, errors[0].message, errors[0].field)
        self.errors = errors


def not_found(what: str, id_: str, field: str = "id") -> DomainError:
    # Missing and invisible are deliberately the same answer: an id never tells whether it exists.
    return DomainError(ErrorCode.NOT_FOUND, f"No {what} with id {id_!r} exists.", [field])
