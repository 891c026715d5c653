"""What a token of ours is, before any lookup: its value (``issue_token_value``: ``cw_`` and 32
random bytes), how it is stored (``token_hash``: a plain SHA-256, the secret having 256 bits),
its shape, and why a request is not authenticated (``TokenProblem``). Session tokens and API
tokens (engine/people/api_tokens.py) share them; ``identity`` reads and checks them."""

import enum
import hashlib
import re
import secrets


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def issue_token_value() -> str:
    return "cw_" + secrets.token_urlsafe(32)


class TokenProblem(enum.StrEnum):
    """Why a request is not authenticated: each is told to the client in its own words
    (resolvers/errors.py), under the one code UNAUTHENTICATED."""

    MISSING = "missing"
    MALFORMED = "malformed"
    UNKNOWN = "unknown"
    EXPIRED = "expired"
    REVOKED = "revoked"
    DISABLED = "disabled"


# The shape of what ``issue_token_value`` makes; anything else cannot be a token and is not looked up.
_TOKEN_SHAPE = re.compile(r"cw_[A-Za-z0-9_-]{1,200}")


def token_shape_problem(token: str) -> TokenProblem | None:
    """MISSING or MALFORMED when ``token`` cannot be a token at all, without asking the database."""
    if not token:
        return TokenProblem.MISSING
    return None if _TOKEN_SHAPE.fullmatch(token) else TokenProblem.MALFORMED
