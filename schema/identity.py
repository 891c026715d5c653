"""Users, groups and login."""

import enum
from typing import TYPE_CHECKING, Annotated, Any

import strawberry
from graphql import FragmentSpreadNode, GraphQLError, InlineFragmentNode, OperationType, SelectionSetNode
from graphql.validation import ValidationRule

from engine.people import identity
from engine.people.deputies import MAX_OPEN, MAX_STANDING_IN
from resolvers import delivery as delivery_reads
from resolvers import login as logins
from resolvers.mutations import run
from schema.base import AppInfo, Node, UserError, by_id_prefix
from schema.execution import context_only
from schema.limits import MAX_ITEMS

if TYPE_CHECKING:
    from schema.delivery import NotificationDelivery
    from schema.deputy import Deputyship


UserKind = strawberry.enum(identity.UserKind, name="UserKind", description="A person, or a service (a machine).")


@strawberry.type(description="A person who signs in, or a service user (an integration) that uses API tokens.")
class User(Node):
    login: str
    display_name: str
    organization: str
    is_admin: bool = strawberry.field(name="admin")
    disabled: bool = strawberry.field(description="A disabled user cannot log in, and none of their tokens works.")
    kind: UserKind = strawberry.field(
        description="PERSON signs in with a password; SERVICE (an integration) cannot log in and uses API tokens."
    )

    is_type_of = by_id_prefix("User")

    # How notifications reach the user (schema/delivery.py): theirs and admins' to read, else null.
    @strawberry.field(description="Where email reaches them; null unless you are they or an admin.")
    def email(self, info: AppInfo) -> str | None:
        return self.email if delivery_reads.may_read(info.context, self.id) else None  # type: ignore[attr-defined]

    @strawberry.field(description="Their IANA time zone (digests follow it); null unless you are they or an admin.")
    def time_zone(self, info: AppInfo) -> str | None:
        return self.time_zone if delivery_reads.may_read(info.context, self.id) else None  # type: ignore[attr-defined]

    @strawberry.field(
        description="The hour of their time zone a DAILY digest goes out; null unless you are they or an admin."
    )
    def digest_hour(self, info: AppInfo) -> int | None:
        return self.digest_hour if delivery_reads.may_read(info.context, self.id) else None  # type: ignore[attr-defined]

    @strawberry.field(
        description="The global intents granted to this user itself (not through a group), e.g. "
        "global.createProject; null unless you are they or an admin."
    )
    async def global_intents(self, info: AppInfo) -> list[str] | None:
        if not delivery_reads.may_read(info.context, self.id):
            return None
        return await info.context.loaders.global_intents_by_party.load(self.id)

    @strawberry.field(description="How each notification level reaches them; null unless you are they or an admin.")
    async def notification_delivery(
        self, info: AppInfo
    ) -> list[Annotated["NotificationDelivery", strawberry.lazy("schema.delivery")]] | None:
        return await delivery_reads.choices(info.context, self)  # type: ignore[return-value]

    @strawberry.field(
        description="This user's current and coming deputyships (those who stand in for them), soonest first: "
        "shown to this user, their deputies and admins; empty for anyone else.",
        metadata={MAX_ITEMS: MAX_OPEN},
    )
    async def deputies(self, info: AppInfo) -> list[Annotated["Deputyship", strawberry.lazy("schema.deputy")]]:
        return await info.context.loaders.deputyships_by_user.load(self.id)

    @strawberry.field(
        description="The current and coming deputyships in which this user stands in for someone, soonest first: "
        "shown to this user, the absent users and admins.",
        metadata={MAX_ITEMS: MAX_STANDING_IN},
    )
    async def deputy_for(self, info: AppInfo) -> list[Annotated["Deputyship", strawberry.lazy("schema.deputy")]]:
        return await info.context.loaders.deputyships_by_deputy.load(self.id)


@strawberry.enum(description="Who sets a group's members besides its admins.")
class GroupManager(enum.Enum):
    OIDC = strawberry.enum_value(
        "OIDC",
        description="The identity provider: at each new token, the groups claim sets who of its users is in the "
        "group (by the group's name).",
    )


@strawberry.type(description="A named set of users; grants and roles given to a group reach its members.")
class Group(Node):
    name: str
    display_name: str

    is_type_of = by_id_prefix("Group")

    @strawberry.field(description="OIDC: the identity provider's groups claim sets its members; null: admins do.")
    def managed(self) -> GroupManager | None:
        return GroupManager(self.managed) if self.managed else None  # type: ignore[attr-defined]

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
    password: str | None = strawberry.field(
        default=None, description="At least 8 characters; required for a PERSON, refused for a SERVICE."
    )
    display_name: str | None = None
    organization: str | None = None
    admin: bool = False
    kind: UserKind = strawberry.field(
        default=identity.UserKind.PERSON,
        description="SERVICE: a user for an integration, with no password; it cannot log in, an admin gives it "
        "API tokens (createApiToken).",
    )


@strawberry.type
class UserPayload:
    user: User | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


@strawberry.input
class CreateGroupInput:
    name: str
    display_name: str | None = None
    managed: GroupManager | None = strawberry.field(
        default=None, description="OIDC: the identity provider's groups claim naming this group sets its members."
    )


@strawberry.input
class GroupMemberInput:
    group_id: strawberry.ID
    user_id: strawberry.ID


@strawberry.type
class GroupPayload:
    group: Group | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


async def login(info: AppInfo, input: LoginInput) -> LoginPayload:
    result, errors = await logins.login(info.context, login=input.login, password=input.password)
    token, user = result if result else (None, None)
    return LoginPayload(token=token, user=user, user_errors=errors)


@strawberry.input
class LogoutInput:
    everywhere: bool = strawberry.field(default=False, description="Revoke every token of yours, not only this one.")


@strawberry.type
class LogoutPayload:
    revoked_tokens: int = strawberry.field(default=0, description="How many tokens were revoked.")
    user_errors: list[UserError] = strawberry.field(default_factory=list)


async def logout(info: AppInfo, input: LogoutInput | None = None) -> LogoutPayload:
    everywhere = bool(input and input.everywhere)
    token = info.context.token
    revoked, errors = await run(
        info.context, lambda s, a: identity.logout(s, actor=a, token=token, everywhere=everywhere)
    )
    return LogoutPayload(revoked_tokens=revoked or 0, user_errors=errors)


@strawberry.input(description="Exactly one of `token` and `userId`.")
class RevokeTokenInput:
    token: str | None = strawberry.field(default=None, description="A token's value: revoke that token.")
    user_id: strawberry.ID | None = strawberry.field(default=None, description="Revoke every token of this user.")


async def revoke_token(info: AppInfo, input: RevokeTokenInput) -> LogoutPayload:
    revoked, errors = await run(
        info.context, lambda s, a: identity.revoke_tokens(s, actor=a, token=input.token, user_id=input.user_id)
    )
    return LogoutPayload(revoked_tokens=revoked or 0, user_errors=errors)


@strawberry.input
class DisableUserInput:
    user_id: strawberry.ID
    disabled: bool = strawberry.field(default=True, description="false enables the user again.")


async def disable_user(info: AppInfo, input: DisableUserInput) -> UserPayload:
    user, errors = await run(
        info.context,
        lambda s, a: identity.set_disabled(s, actor=a, user_id=input.user_id, disabled=input.disabled),
    )
    return UserPayload(user=user, user_errors=errors)


class OneLoginPerOperation(ValidationRule):
    """A request may call ``login`` once: aliases would otherwise let one request try a
    hundred passwords, each hash costing the server tens of milliseconds, before any throttle
    could answer. Counts the distinct response keys of root ``login`` fields, fragments
    followed (fields with one response key merge and run once)."""

    def enter_operation_definition(self, node: Any, *_: Any) -> None:
        if node.operation != OperationType.MUTATION:
            return
        keys: set[str] = set()
        self._collect(node.selection_set, keys, set())
        if len(keys) > 1:
            self.report_error(
                GraphQLError(
                    "A request may log in only once; send each login in a request of its own.",
                    node,
                    extensions={"code": "TOO_MANY_LOGINS"},
                )
            )

    def _collect(self, selection_set: SelectionSetNode, keys: set[str], seen: set[str]) -> None:
        for selection in selection_set.selections:
            if isinstance(selection, InlineFragmentNode):
                self._collect(selection.selection_set, keys, seen)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                fragment = self.context.get_fragment(name)
                if fragment is not None and name not in seen:
                    seen.add(name)
                    self._collect(fragment.selection_set, keys, seen)
            elif selection.name.value == "login":  # type: ignore[attr-defined]
                keys.add(selection.alias.value if selection.alias else "login")  # type: ignore[attr-defined]


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
            kind=input.kind,
        ),
    )
    return UserPayload(user=user, user_errors=errors)


async def create_group(info: AppInfo, input: CreateGroupInput) -> GroupPayload:
    group, errors = await run(
        info.context,
        lambda s, a: identity.create_group(
            s,
            actor=a,
            name=input.name,
            display_name=input.display_name,
            managed=input.managed.value if input.managed else None,
        ),
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
