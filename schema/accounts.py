"""Admins change an existing account: its names (``updateUser``) and its password
(``resetPassword``); engine/people/accounts.py has the rules."""

from typing import Any

import strawberry

from engine.people import accounts
from resolvers.mutations import run
from schema.base import AppInfo
from schema.identity import UserPayload


def _given(value: Any) -> Any:
    """Strawberry's "not sent" becomes the engine's: that field keeps its value."""
    return accounts.UNSET if value is strawberry.UNSET else value


@strawberry.input(description="The fields given change; those left out keep their value. The login never changes.")
class UpdateUserInput:
    user_id: strawberry.ID
    display_name: str | None = strawberry.field(
        default=strawberry.UNSET, description="The name others see: not blank, at most 200 characters."
    )
    organization: str | None = strawberry.field(
        default=strawberry.UNSET, description="At most 200 characters; null or empty: none."
    )


@strawberry.input
class ResetPasswordInput:
    user_id: strawberry.ID
    password: str = strawberry.field(description="8 to 200 characters.")


async def update_user(info: AppInfo, input: UpdateUserInput) -> UserPayload:
    user, errors = await run(
        info.context,
        lambda s, a: accounts.update_user(
            s,
            actor=a,
            user_id=input.user_id,
            display_name=_given(input.display_name),
            organization=_given(input.organization),
        ),
    )
    return UserPayload(user=user, user_errors=errors)


async def reset_password(info: AppInfo, input: ResetPasswordInput) -> UserPayload:
    user, errors = await run(
        info.context,
        lambda s, a: accounts.reset_password(s, actor=a, user_id=input.user_id, password=input.password),
    )
    return UserPayload(user=user, user_errors=errors)
