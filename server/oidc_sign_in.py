"""Signing in with the organization's provider: a provider's token as a bearer token, the
re-check of live connections that came with one, and the dashboard's authorization-code
exchange (``GET /auth/oidc``, ``POST /auth/oidc/token``).

The token is checked by server/oidc.py; who it stands for is the engine's
(engine/people/oidc_identities.py): a read when nothing changed, a write transaction when the
user is new or their groups changed.
"""

import base64
import json
from typing import Any
from urllib.parse import quote, urlsplit

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from engine.people import identity, oidc_identities
from engine.people.actors import Actor
from engine.people.identity import TokenProblem
from engine.people.oidc_identities import SignInRefused, VerifiedClaims
from models import Database
from resolvers.errors import auth_message
from server.oidc import Provider, ProviderUnavailable
from server.request_limits import error_response
from server.settings import Settings

Checked = Actor | SignInRefused | TokenProblem
SCOPE = "openid profile"  # what the dashboard asks for: the login, name and (by the provider's mapping) groups
NOT_SET_UP = "Signing in with an identity provider is not set up on this server."
MAX_FIELD = 4_000  # characters of a code, verifier or redirect URI


class OidcSignIn:
    """The provider of ``settings`` and who its tokens stand for in ``db``."""

    def __init__(self, settings: Settings, db: Database, provider: Provider | None = None) -> None:
        self.settings = settings
        self.db = db
        self.provider = provider or Provider(settings)

    def takes(self, token: str) -> bool:
        return self.provider.takes(token)

    async def authenticate(self, token: str) -> Checked:
        """The actor a provider's token stands for, or why none: a verified token whose user is
        known and whose groups match is a read (three statements); a new user or a change of
        groups, a write transaction."""
        claims = await self.provider.verify(token)
        if isinstance(claims, SignInRefused):
            return claims
        create = self.settings.oidc_create_users
        async with self.db.reader.connect() as connection:
            found = await oidc_identities.look_up(connection, claims, create_users=create)
        if found is not None:
            return found
        try:
            return await self._sign_in(claims)
        except IntegrityError:  # the same identity's first sign-in, committed by another request meanwhile
            return await self._sign_in(claims)

    async def _sign_in(self, claims: VerifiedClaims) -> Checked:
        async with self.db.transaction() as session:
            return await oidc_identities.sign_in(
                session,
                claims,
                create_users=self.settings.oidc_create_users,
                login_claim=self.settings.oidc_login_claim,
            )

    # --- live connections (server/websockets.py's re-check) ---

    async def authenticate_many(self, session: AsyncSession, tokens: list[str]) -> dict[str, Actor]:
        """``identity.authenticate_many`` with the provider's tokens among them: each verified
        again (its expiry above all) and its user read as they are now; nothing written."""
        jwts = [t for t in tokens if self.takes(t)]
        actors = await identity.authenticate_many(session, [t for t in tokens if not self.takes(t)])
        for token, found in (await self._recheck(session, jwts)).items():
            if isinstance(found, Actor):
                actors[token] = found
        return actors

    async def token_problems(self, session: AsyncSession, tokens: list[str]) -> dict[str, Any]:
        jwts = [t for t in tokens if self.takes(t)]
        problems: dict[str, Any] = await identity.token_problems(session, [t for t in tokens if not self.takes(t)])
        for token, found in (await self._recheck(session, jwts)).items():
            problems[token] = TokenProblem.UNKNOWN if isinstance(found, Actor) else found
        return problems

    async def _recheck(self, session: AsyncSession, tokens: list[str]) -> dict[str, Checked]:
        checked: dict[str, Checked] = {}
        verified: dict[str, VerifiedClaims] = {}
        for token in tokens:
            claims = await self.provider.verify(token)
            if isinstance(claims, SignInRefused):
                checked[token] = claims
            else:
                verified[token] = claims
        found = await oidc_identities.actors_for(session, list(verified.values()))
        for token, claims in verified.items():
            checked[token] = found.get((claims.issuer, claims.subject), TokenProblem.UNKNOWN)
        return checked

    # --- the dashboard's sign-in: authorization code with PKCE ---

    async def config_endpoint(self, request: Request) -> Response:
        """What the dashboard needs to send a person to the provider; 204 (nothing) when the
        dashboard has no client there (CASEWAY_OIDC_CLIENT_ID unset)."""
        if not self.settings.oidc_client_id:
            return await no_provider(request)
        try:
            discovery = await self.provider.discovery()
        except ProviderUnavailable as failure:
            return error_response(503, str(failure), "UNAVAILABLE")
        endpoint = discovery.get("authorization_endpoint")
        if not isinstance(endpoint, str):
            return error_response(503, "The identity provider's discovery document names no authorization_endpoint.")
        return JSONResponse(
            {
                "name": urlsplit(self.settings.oidc_issuer).hostname,
                "issuer": self.settings.oidc_issuer,
                "authorizationEndpoint": endpoint,
                "clientId": self.settings.oidc_client_id,
                "scope": SCOPE,
            },
            headers={"Cache-Control": "no-store"},
        )

    async def token_endpoint(self, request: Request) -> Response:
        """Exchange the code the provider sent back (and the PKCE verifier the page kept) for the
        provider's tokens, here rather than in the page: the client secret, if any, stays on the
        server, and the pages connect to this server alone. Answers the token whose audience is
        CASEWAY_OIDC_AUDIENCE, after signing its holder in as any request would."""
        if not self.settings.oidc_client_id:
            return error_response(404, NOT_SET_UP, "NOT_FOUND")
        try:
            body = json.loads(await request.body())
        except (ValueError, RecursionError):  # RecursionError: JSON nested past the parser's depth
            body = None
        fields = [body.get(n) if isinstance(body, dict) else None for n in ("code", "codeVerifier", "redirectUri")]
        if not all(isinstance(f, str) and 0 < len(f) <= MAX_FIELD for f in fields):
            return error_response(
                400, f"Send a JSON object with code, codeVerifier and redirectUri (each 1 to {MAX_FIELD:,} characters)."
            )
        code, verifier, redirect_uri = fields
        try:
            tokens = await self._exchange(code, verifier, redirect_uri)
        except ProviderUnavailable as failure:
            return error_response(503, str(failure), "UNAVAILABLE")
        if isinstance(tokens, str):
            return error_response(400, tokens)
        token = self._for_audience(tokens)
        if token is None:
            return error_response(
                400,
                f"Neither the access token nor the ID token the identity provider gave is a JWT for the audience "
                f"{self.settings.oidc_audience!r} (CASEWAY_OIDC_AUDIENCE).",
            )
        checked = await self.authenticate(token)
        if not isinstance(checked, Actor):
            status = 503 if isinstance(checked, SignInRefused) and checked.unavailable else 401
            return error_response(status, auth_message(checked), "UNAUTHENTICATED" if status == 401 else "UNAVAILABLE")
        expires = checked.expires_at.isoformat().replace("+00:00", "Z") if checked.expires_at else None
        return JSONResponse({"token": token, "expiresAt": expires}, headers={"Cache-Control": "no-store"})

    async def _exchange(self, code: str, verifier: str, redirect_uri: str) -> dict[str, Any] | str:
        """The token endpoint's answer, or the provider's refusal in a sentence."""
        endpoint = (await self.provider.discovery()).get("token_endpoint")
        if not isinstance(endpoint, str):
            raise ProviderUnavailable("The identity provider's discovery document names no token_endpoint.")
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        }
        headers = {"Accept": "application/json"}
        client_id, secret = self.settings.oidc_client_id, self.settings.oidc_client_secret
        if secret:  # client_secret_basic, each part form-encoded first (RFC 6749, 2.3.1)
            pair = f"{quote(client_id, safe='')}:{quote(secret, safe='')}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        else:
            form["client_id"] = client_id
        try:
            response = await self.provider.http.post(endpoint, data=form, headers=headers)
        except Exception as failure:
            raise ProviderUnavailable(
                f"The identity provider's token endpoint cannot be reached ({endpoint}: {failure}): try again shortly."
            ) from None
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise ProviderUnavailable(f"The identity provider's token endpoint answered {response.status_code}.")
        if response.status_code != 200:
            reason = answer.get("error_description") or answer.get("error") or response.status_code
            return f"The identity provider refused the sign-in: {reason}."
        return answer

    def _for_audience(self, tokens: dict[str, Any]) -> str | None:
        for name in ("access_token", "id_token"):
            token = tokens.get(name)
            if isinstance(token, str) and self.takes(token):
                try:
                    payload = json.loads(_unpadded(token.split(".")[1]))
                except (ValueError, RecursionError):
                    continue
                audience = payload.get("aud") if isinstance(payload, dict) else None
                if self.settings.oidc_audience in (audience if isinstance(audience, list) else [audience]):
                    return token
        return None


async def no_provider(request: Request) -> Response:
    """No provider to sign in with: nothing to say (a 404 would be an error in the page's console)."""
    return Response(status_code=204, headers={"Cache-Control": "no-store"})


def oidc_routes(sign_in: OidcSignIn | None) -> list[Route]:
    """The dashboard's two routes; without a provider, only the answer that there is none."""
    if sign_in is None:
        return [Route("/auth/oidc", no_provider, methods=["GET"])]
    return [
        Route("/auth/oidc", sign_in.config_endpoint, methods=["GET"]),
        Route("/auth/oidc/token", sign_in.token_endpoint, methods=["POST"]),
    ]


def _unpadded(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


__all__ = ["OidcSignIn", "oidc_routes"]
