"""API tokens as clients see them: createApiToken, revokeApiToken, the apiTokens query and the
ApiToken type (engine/people/api_tokens.py holds the rules; docs/api.md "Service users and API
tokens"). The secret is in createApiToken's payload alone, once; nothing else ever shows it."""

from datetime import datetime

import strawberry

from engine.people import api_tokens
from engine.people.scopes import Scope
from models import utcnow
from resolvers.mutations import run
from schema.base import AppInfo, UserError

TokenScope = strawberry.enum(
    Scope,
    name="ApiTokenScope",
    description="What an API token may do, within what its user may: READ queries and subscribes; EXECUTE also "
    "executes actions (with their comments and data) and attaches documents; WRITE does everything its user may.",
)


@strawberry.type(description="An API token, without its secret (shown once, by createApiToken).")
class ApiToken:
    id: strawberry.ID
    name: str = strawberry.field(description="What the activity log shows as `via` for what the token does.")
    created_at: datetime
    last_used_at: datetime | None = strawberry.field(
        description="When it was last used, to the minute (written at most once a minute); null: never."
    )
    expires_at: datetime

    @strawberry.field(description="The scopes it was given; the highest one decides.")
    def scopes(self) -> list[TokenScope]:  # type: ignore[valid-type]
        return [Scope(s) for s in self.scopes.split(",")]  # type: ignore[attr-defined]


@strawberry.input(
    description=f"A token for userId: yourself, or anyone for an admin. The name is 1 to {api_tokens.MAX_NAME} "
    f"characters, unique among the user's tokens; a user has at most {api_tokens.MAX_TOKENS_PER_USER} tokens "
    "(revoked ones do not count, expired ones do); expiresAt is in the future and at most "
    f"{api_tokens.MAX_LIFETIME.days} days ahead (default {api_tokens.DEFAULT_LIFETIME.days} days; through an API "
    "token, not after that token's own)."
)
class CreateApiTokenInput:
    user_id: strawberry.ID
    name: str
    scopes: list[TokenScope]  # type: ignore[valid-type]
    expires_at: datetime | None = None


@strawberry.type
class CreateApiTokenPayload:
    token: str | None = strawberry.field(
        default=None, description="The secret, a bearer token: shown this once, stored only as its hash."
    )
    api_token: ApiToken | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


@strawberry.input
class RevokeApiTokenInput:
    id: strawberry.ID = strawberry.field(description="The token (ApiToken.id): yours, or anyone's for an admin.")


@strawberry.type
class RevokeApiTokenPayload:
    id: strawberry.ID | None = strawberry.field(default=None, description="The token revoked.")
    user_errors: list[UserError] = strawberry.field(default_factory=list)


async def create_api_token(info: AppInfo, input: CreateApiTokenInput) -> CreateApiTokenPayload:
    made, errors = await run(
        info.context,
        lambda s, a: api_tokens.create_api_token(
            s,
            actor=a,
            user_id=input.user_id,
            name=input.name,
            scopes=[str(scope) for scope in input.scopes],
            expires_at=input.expires_at,
            now=utcnow(),
        ),
    )
    secret, token = made if made else (None, None)
    return CreateApiTokenPayload(token=secret, api_token=token, user_errors=errors)  # type: ignore[arg-type]


async def revoke_api_token(info: AppInfo, input: RevokeApiTokenInput) -> RevokeApiTokenPayload:
    revoked, errors = await run(info.context, lambda s, a: api_tokens.revoke_api_token(s, actor=a, id=input.id))
    return RevokeApiTokenPayload(id=revoked, user_errors=errors)  # type: ignore[arg-type]


async def api_tokens_query(info: AppInfo, user_id: strawberry.ID | None = None) -> list[ApiToken]:
    viewer = info.context.viewer
    found = await api_tokens.api_tokens(info.context.session, actor=viewer, user_id=user_id or viewer.user_id)  # type: ignore[arg-type]
    return found  # type: ignore[return-value]


api_tokens_field = strawberry.field(
    resolver=api_tokens_query,
    description="The unrevoked API tokens of userId (default: yours), newest first, without their secrets; "
    "another user's are empty unless you are an admin.",
)
