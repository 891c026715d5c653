"""GraphQL over HTTP's two response media types (the GraphQL-over-HTTP specification).

``application/graphql-response+json`` is answered when the client's Accept header prefers it;
then a *request error* — the document did not parse, did not validate, or its variables could
not be coerced: nothing was executed — is answered with status 400 and without a ``data``
entry, and an unexpected failure before execution with 500. Everything else (field errors,
``data: null`` from a failed non-null root field, a timeout during execution) is 200.

``application/json`` keeps the legacy rules: status 200 for every well-formed request, with
``data: null`` on a request error. It is answered when there is no Accept header, when it is
preferred, or when Accept names neither type (a wildcard such as ``*/*`` included).
"""

from typing import Any

from strawberry.types.execution import PreExecutionError

GRAPHQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"

# The code of variables that could not be coerced (schema/execution.py): refused before execution.
_BAD_VARIABLES = "BAD_USER_INPUT"


def negotiate(accept: str | None) -> str:
    """The media type of the answer to a request with this Accept header."""
    if not accept or GRAPHQL_RESPONSE not in accept:  # the common case, without parsing
        return JSON
    best, best_q = JSON, -1.0
    for part in accept.split(","):
        media, *params = (p.strip() for p in part.split(";"))
        if media not in (GRAPHQL_RESPONSE, JSON):
            continue
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        # a higher q wins; at equal q the earlier one
        if q > best_q and q > 0:
            best, best_q = media, q
    return best


def request_error_status(result: Any) -> int | None:
    """400 for a request error, 500 for an unexpected failure before execution (a masked
    error, without a code), None for an execution's result (answered with 200). strawberry
    tells parse and validation failures apart (``PreExecutionError``); variables that could
    not be coerced are graphql-core's, told by their code and the absence of a path."""
    if result.data is not None or not result.errors:
        return None
    codes = [(error.extensions or {}).get("code") for error in result.errors]
    if isinstance(result, PreExecutionError) or all(
        code == _BAD_VARIABLES and error.path is None for code, error in zip(codes, result.errors, strict=True)
    ):
        return 400 if all(codes) else 500
    return None


def without_data(body: dict[str, Any]) -> dict[str, Any]:
    """A request error's answer under the new media type: errors, no ``data`` entry."""
    body.pop("data", None)
    return body


__all__ = ["GRAPHQL_RESPONSE", "JSON", "negotiate", "request_error_status", "without_data"]
