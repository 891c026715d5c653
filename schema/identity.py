"""Users, groups and login."""

from typing import Annotated

import strawberry

from engine import identity
from resolvers import queries
from resolvers.mutations import run
from schema.base import AppInfo, Connection, Node, UserError, by_id_prefix, connection
from schema.execution import context_only


@strawberry.type(description="A person who signs in.")
class User(Node):
    login: str
    display_name: str
    organization: str
    is_admin: bool = strawberry.field(name="admin")

    is_type_of = by_id_prefix("User")


@strawberry.type(description="A named set of users; grants and roles given to a group reach its members.")
class Group(Node):
    name: str
    display_name: str

    is_type_of = by_id_prefix("Group")

    @strawberry.field
    @context_only
    async def members(self, info: AppInfo) -> list[User]:
        return await info.context.loaders.members_by_group.load(self.id)


Party = Annotated[User | Group, strawberry.union("Party", description="A user or a group.")]


@strawberry.input
class LoginInput:
    login: str
    password: str


@strawberry.type
class LoginPayload:
    token: str | None = None
    user: User | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


@strawberry.input
class CreateUserInput:
    login: str
    password: str
    display_name: str | None = None
    organization: str | None = None
    admin: bool = False


@strawberry.type
class UserPayload:
    user: User | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


@strawberry.input
class CreateGroupInput:
    name: str
    display_name: str | None = None


@strawberry.input
class GroupMemberInput:
    group_id: strawberry.ID
    user_id: strawberry.ID


@strawberry.type
class GroupPayload:
    group: Group | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


async def login(info: AppInfo, input: LoginInput) -> LoginPayload:
    ttl = info.context.settings.token_ttl
    result, errors = await run(
        info.context,
        lambda s, _: identity.login(s, login=input.login, password=input.password, ttl_seconds=ttl),
        authenticated=False,
    )
    token, user = result if result else (None, None)
    return LoginPayload(token=token, user=user, user_errors=errors)


async def create_user(info: AppInfo, input: CreateUserInput) -> UserPayload:
    user, errors = await run(
        info.context,
        lambda s, a: identity.create_user(
            s,
            actor=a,
            login=input.login,
            password=input.password,
            display_name=input.display_name,
            organization=input.organization or "",
            admin=input.admin,
        ),
    )
    return UserPayload(user=user, user_errors=errors)


async def create_group(info: AppInfo, input: CreateGroupInput) -> GroupPayload:
    group, errors = await run(
        info.context, lambda s, a: identity.create_group(s, actor=a, name=input.name, display_name=input.display_name)
    )
    return GroupPayload(group=group, user_errors=errors)


async def add_group_member(info: AppInfo, input: GroupMemberInput) -> GroupPayload:
    group, errors = await run(
        info.context, lambda s, a: identity.add_group_member(s, actor=a, group_id=input.group_id, user_id=input.user_id)
    )
    return GroupPayload(group=group, user_errors=errors)


async def remove_group_member(info: AppInfo, input: GroupMemberInput) -> GroupPayload:
    group, errors = await run(
        info.context,
        lambda s, a: identity.remove_group_member(s, actor=a, group_id=input.group_id, user_id=input.user_id),
    )
    return GroupPayload(group=group, user_errors=errors)


async def viewer(info: AppInfo) -> User:
    user = await info.context.loaders.party_by_id.load(info.context.viewer.user_id)
    return user


async def users(info: AppInfo, first: int | None = None, after: str | None = None) -> Connection[User]:
    return connection(await queries.users(info.context, first=first, after=after))
