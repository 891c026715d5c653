"""Signing in with the organization's identity provider: linking an identity to a user."""

import strawberry

from engine.people import oidc_identities
from resolvers.mutations import run
from schema.base import AppInfo
from schema.identity import UserPayload


@strawberry.input(description="A provider's identity (the iss and sub of its tokens) and the user it signs in as.")
class LinkIdentityInput:
    user_id: strawberry.ID
    issuer: str = strawberry.field(description="The provider's issuer, as its tokens' iss says it.")
    subject: str = strawberry.field(description="The person's subject at the provider, as its tokens' sub says it.")


async def link_identity(info: AppInfo, input: LinkIdentityInput) -> UserPayload:
    user, errors = await run(
        info.context,
        lambda s, a: oidc_identities.link_identity(
            s, actor=a, user_id=input.user_id, issuer=input.issuer, subject=input.subject
        ),
    )
    return UserPayload(user=user, user_errors=errors)
