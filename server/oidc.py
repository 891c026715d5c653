"""The organization's OpenID Connect provider: its discovery document, its signing keys, and
the checks a token it issued must pass before anyone is signed in by it.

Keys are read through discovery (``{issuer}/.well-known/openid-configuration``, then its
``jwks_uri``) when first needed, kept, read again every ``MAX_AGE`` seconds (so a key the
provider withdrew stops working), and at once when a token names a key (``kid``) that is not
among them — but at most once a ``REFETCH_INTERVAL``, so a stream of tokens with made-up kids
cannot make the server hammer the provider. A provider that cannot be reached is a 503 with a
sentence (``SignInRefused.unavailable``), not a refusal of the token.

Only asymmetric signatures are accepted: ``none`` signs nothing, and an ``HS*`` token checked
against a public key would be signed with what anyone can read.
"""

import asyncio
import base64
import json
import logging
import math
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
from joserfc import jwt
from joserfc.errors import BadSignatureError, JoseError
from joserfc.jwk import ECKey, KeySet, OKPKey, RSAKey

from engine.people.oidc_identities import MAX_SUBJECT, SignInRefused, VerifiedClaims
from server.settings import Settings

log = logging.getLogger("caseway.oidc")

ASYMMETRIC = {
    **dict.fromkeys(("RS256", "RS384", "RS512", "PS256", "PS384", "PS512"), "RSA"),
    **dict.fromkeys(("ES256", "ES384", "ES512"), "EC"),
    "EdDSA": "OKP",
}
SKEW = 60  # seconds of clock difference allowed on exp and nbf
REFETCH_INTERVAL = 60.0  # seconds: an unknown kid reads the keys again at most this often
MAX_AGE = 600.0  # seconds the keys are kept before they are read again
FAILURE_BACKOFF = 5.0  # seconds after a failed read during which the provider is not asked again
FETCH_TIMEOUT = 5.0  # seconds a request to the provider may take
MAX_TOKEN = 16_000  # characters; a JWT of a few dozen claims is 1-2 KB
MAX_GROUPS = 1_000  # names in the groups claim
MAX_DOCUMENT = 1_000_000  # bytes of a discovery document or key set

# base64url header.payload.signature, the header a JSON object ("eyJ" is '{"' encoded).
_JWT_SHAPE = re.compile(r"eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")


def refused(why: str) -> SignInRefused:
    return SignInRefused(f"The token is refused: {why}.")


class ProviderUnavailable(Exception):
    """The provider could not be asked: its message is the client's sentence."""


class Provider:
    """One issuer's discovery, keys and token checks, shared by every request of a process.
    ``clock`` (monotonic seconds) paces the key reads; a test moves it on instead of waiting."""

    def __init__(
        self, settings: Settings, *, clock: Callable[[], float] = time.monotonic, http: httpx.AsyncClient | None = None
    ) -> None:
        self.issuer = settings.oidc_issuer
        self.audience = settings.oidc_audience
        self.login_claim = settings.oidc_login_claim
        self.groups_claim = settings.oidc_groups_claim
        self.clock = clock
        self.http = http or httpx.AsyncClient(timeout=FETCH_TIMEOUT, follow_redirects=False)
        self._discovery: dict[str, Any] | None = None
        self._keys: KeySet | None = None
        self._read_at = float("-inf")  # when the keys were last read
        self._failed: tuple[float, str] | None = None  # when a read last failed, and why
        self._lock = asyncio.Lock()
        self.key_reads = 0  # how often the keys were fetched: /metrics-like, read by tests

    @staticmethod
    def takes(token: str) -> bool:
        """Whether ``token`` has a JWT's shape (Caseway's own tokens start with ``cw_``)."""
        return _JWT_SHAPE.fullmatch(token) is not None

    async def close(self) -> None:
        await self.http.aclose()

    # --- the provider's documents ---

    async def _get_json(self, url: str, what: str) -> dict[str, Any]:
        try:
            response = await self.http.get(url, headers={"Accept": "application/json"})
        except httpx.HTTPError as failure:
            reason = str(failure) or type(failure).__name__
            raise ProviderUnavailable(
                f"The identity provider's {what} cannot be read ({url}: {reason}): try again shortly."
            ) from None
        if response.status_code != 200 or len(response.content) > MAX_DOCUMENT:
            raise ProviderUnavailable(
                f"The identity provider's {what} cannot be read ({url} answered {response.status_code}): "
                "try again shortly."
            )
        try:
            document = json.loads(response.content)
        except (ValueError, RecursionError):
            document = None
        if not isinstance(document, dict):
            raise ProviderUnavailable(f"The identity provider's {what} at {url} is not a JSON object.")
        return document

    async def discovery(self) -> dict[str, Any]:
        """The discovery document, read once per process (again after a failure)."""
        if self._discovery is None:
            url = self.issuer.rstrip("/") + "/.well-known/openid-configuration"
            document = await self._get_json(url, "discovery document")
            if not isinstance(document.get("jwks_uri"), str):
                raise ProviderUnavailable(f"The identity provider's discovery document at {url} names no jwks_uri.")
            self._discovery = document
        return self._discovery

    async def _read_keys(self) -> KeySet:
        document = await self._get_json((await self.discovery())["jwks_uri"], "signing keys")
        keys: list[Any] = []
        for entry in document.get("keys") or []:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue  # an encryption key, or junk
            kind = {"RSA": RSAKey, "EC": ECKey, "OKP": OKPKey}.get(entry.get("kty"))
            if kind is None:
                continue
            try:
                keys.append(kind.import_key(entry))
            except (JoseError, ValueError, TypeError):
                log.warning("the identity provider's key %s cannot be read; left out", entry.get("kid"))
        self.key_reads += 1
        return KeySet(keys)

    async def _key_set(self, kid: str | None) -> KeySet:
        """The provider's keys, read again when old, or when ``kid`` is not among them and the
        last read is more than ``REFETCH_INTERVAL`` ago. Raises ProviderUnavailable when there
        are no keys to use (never read, or ``kid`` unknown) and they cannot be read; after a
        failed read the provider is not asked again for ``FAILURE_BACKOFF`` seconds (the same
        answer is given), so a provider that is down is not hammered by every request."""
        async with self._lock:  # one read at a time: a burst of requests waits for the same one
            now = self.clock()
            old = now - self._read_at >= MAX_AGE
            unknown = kid is not None and self._keys is not None and _find(self._keys, kid) is None
            if self._keys is not None and not old and not (unknown and now - self._read_at >= REFETCH_INTERVAL):
                return self._keys
            if self._failed is not None and now - self._failed[0] < FAILURE_BACKOFF:
                failure = ProviderUnavailable(self._failed[1])
            else:
                try:
                    self._keys = await self._read_keys()
                except ProviderUnavailable as failed:
                    self._failed, failure = (now, str(failed)), failed
                else:
                    self._read_at, self._failed = now, None
                    return self._keys
            if self._keys is None or unknown:
                raise failure
            log.warning("the identity provider's keys could not be read again; the ones held are used")
            self._read_at = now - MAX_AGE + REFETCH_INTERVAL  # asked again in a minute
            return self._keys

    # --- a token ---

    async def verify(self, token: str) -> VerifiedClaims | SignInRefused:
        """The claims of a token the provider signed for this audience, valid now; or why not."""
        try:
            return await self._verify(token)
        except ProviderUnavailable as failure:
            return SignInRefused(str(failure), unavailable=True)

    async def _verify(self, token: str) -> VerifiedClaims | SignInRefused:
        if len(token) > MAX_TOKEN:
            return refused(f"it is longer than {MAX_TOKEN:,} characters")
        header = _header(token)
        if header is None:
            return refused("it is not a JSON Web Token (its header does not decode)")
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in ASYMMETRIC:
            shown = "none (unsigned)" if alg in ("none", None) else f"{alg}"
            kind = ", a shared secret" if isinstance(alg, str) and alg.startswith("HS") else ""
            return refused(
                f"its algorithm is {shown}{kind}; only the provider's public-key signatures "
                "(RS*, PS*, ES*, EdDSA) are accepted"
            )
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            return refused("its key id (kid) is not a string")
        keys = await self._key_set(kid)
        if kid is not None:
            key = _find(keys, kid)
            if key is None:
                return refused(f"its signing key (kid {kid!r}) is not among the identity provider's keys")
            candidates = [key]
        else:
            candidates = [k for k in keys.keys if k.key_type == ASYMMETRIC[alg]]
        claims = _verified_payload(token, candidates, alg, kid)
        if isinstance(claims, SignInRefused):
            return claims
        return self._checked(claims)

    def _checked(self, claims: dict[str, Any]) -> VerifiedClaims | SignInRefused:
        """iss, aud, exp, nbf and sub, each refusal naming the claim."""
        if claims.get("iss") != self.issuer:
            return refused(f"its issuer (iss) is {claims.get('iss')!r}, not {self.issuer!r}")
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.audience not in audiences:
            return refused(f"its audience (aud) is {audience!r}, not {self.audience!r}")
        now = time.time()
        exp, nbf = claims.get("exp"), claims.get("nbf")
        if not _is_number(exp):
            return refused("it has no expiry time (exp)")
        if now > exp + SKEW:
            return refused(f"it expired at {_iso(exp)} (exp)")
        if nbf is not None and (not _is_number(nbf) or now < nbf - SKEW):
            return refused(f"it is not valid before {_iso(nbf) if _is_number(nbf) else repr(nbf)} (nbf)")
        subject = claims.get("sub")
        if not isinstance(subject, str) or not 0 < len(subject) <= MAX_SUBJECT:
            return refused(f"its subject (sub) is missing or longer than {MAX_SUBJECT} characters")
        groups = claims.get(self.groups_claim, [])
        if isinstance(groups, str):
            groups = [groups]
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            return refused(f"its {self.groups_claim} claim is not a list of group names")
        if len(groups) > MAX_GROUPS:
            return refused(f"its {self.groups_claim} claim names more than {MAX_GROUPS:,} groups")
        login, name = claims.get(self.login_claim), claims.get("name")
        return VerifiedClaims(
            issuer=self.issuer,
            subject=subject,
            login=login if isinstance(login, str) else None,
            display_name=name if isinstance(name, str) else None,
            groups=frozenset(groups),
            expires_at=datetime.fromtimestamp(min(exp, 2**32) + SKEW, UTC),  # the skew allowed on exp, too
        )


def _header(token: str) -> dict[str, Any] | None:
    part = token.split(".", 1)[0]
    try:
        header = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (ValueError, RecursionError):  # RecursionError: JSON nested past the parser's depth
        return None
    return header if isinstance(header, dict) else None


def _find(keys: KeySet, kid: str) -> Any:
    return next((k for k in keys.keys if k.kid == kid), None)


def _verified_payload(token: str, candidates: list[Any], alg: str, kid: str | None) -> dict[str, Any] | SignInRefused:
    for key in candidates:
        try:
            claims = jwt.decode(token, key, algorithms=[alg]).claims
        except BadSignatureError:
            continue
        except JoseError as failure:  # the key does not fit the algorithm, a payload that is not JSON, ...
            if kid is not None:
                return refused(f"it cannot be checked with the provider's key ({failure.description or failure.error})")
            continue
        except ValueError:
            return refused("its payload is not a JSON object")
        return claims
    if kid is not None:
        return refused(f"its signature does not verify against the identity provider's key {kid!r}")
    return refused("its signature does not verify against any of the identity provider's keys")


def _is_number(value: Any) -> bool:
    """A time claim: a finite number of seconds from 1970 to 2106 (NaN, a negative or a huge one
    is no time: refused as missing rather than crashing the conversion to a date)."""
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and 0 <= value <= 2**32
    )


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(min(seconds, 2**32), UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


__all__ = ["Provider", "ProviderUnavailable", "SignInRefused"]
