"""The identity provider's settings (server/settings.py joins them; server/oidc.py reads them;
docs/api.md "Sign in with your identity provider")."""

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class OidcSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CASEWAY_")

    # The OpenID Connect issuer, exactly as its tokens' iss says it; its discovery document is read
    # from {issuer}/.well-known/openid-configuration. Empty: only Caseway's own tokens are accepted.
    oidc_issuer: str = Field(
        "",
        max_length=2048,
        description=(
            "the organization's OpenID Connect provider, exactly as its tokens' `iss` says it "
            "(`https://keycloak.example/realms/acme`); its discovery document is read from "
            "`{issuer}/.well-known/openid-configuration`, and its JWTs are then accepted as bearer tokens beside "
            "Caseway's own ([docs/api.md](docs/api.md#sign-in-with-your-identity-provider-openid-connect))"
        ),
    )
    oidc_audience: str = Field(
        "",
        max_length=2048,
        description=(
            "the audience (`aud`) a provider's token must carry to be accepted here; needed with an issuer "
            "(the server refuses to start without it)"
        ),
    )
    oidc_client_id: str = Field(
        "",
        max_length=2048,
        description=(
            'the dashboard\'s client at the provider: the sign-in page then offers "Sign in with …" '
            "(authorization code with PKCE)"
        ),
    )
    oidc_client_secret: str = Field(
        "",
        max_length=2048,
        description=(
            "that client's secret, when the provider gave it one; it stays on the server, which exchanges the code"
        ),
    )
    oidc_login_claim: str = Field(
        "preferred_username", max_length=200, description="the claim whose value becomes a new user's login"
    )
    oidc_groups_claim: str = Field(
        "groups",
        max_length=200,
        description=(
            "the claim listing the provider's groups; it sets the user's memberships in the groups created with "
            "`managed: OIDC` of those names, at each new token"
        ),
    )
    oidc_create_users: bool = Field(
        True,
        description=(
            "whether a provider's user Caseway has not seen becomes a new user; `false`: only identities an admin "
            "linked (`linkIdentity`) sign in"
        ),
    )

    @model_validator(mode="after")
    def _oidc_is_complete(self) -> "OidcSettings":
        """Refused at start, in one sentence: an issuer without an audience would accept a token
        the provider issued to any of its other clients."""
        if self.oidc_issuer and not self.oidc_issuer.startswith(("https://", "http://")):
            raise ValueError("CASEWAY_OIDC_ISSUER is the provider's URL: it starts with https://")
        if self.oidc_issuer and not self.oidc_audience:
            raise ValueError(
                "CASEWAY_OIDC_ISSUER needs CASEWAY_OIDC_AUDIENCE, the audience (aud) the provider's tokens "
                "carry for Caseway"
            )
        for name in ("audience", "client_id", "client_secret"):
            if getattr(self, f"oidc_{name}") and not self.oidc_issuer:
                raise ValueError(f"CASEWAY_OIDC_{name.upper()} needs CASEWAY_OIDC_ISSUER, the provider's URL")
        if self.oidc_issuer and not (self.oidc_login_claim and self.oidc_groups_claim):
            raise ValueError("CASEWAY_OIDC_LOGIN_CLAIM and CASEWAY_OIDC_GROUPS_CLAIM name claims: they are not empty")
        return self
