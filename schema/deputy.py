"""Deputies as clients see them: setDeputy, removeDeputy and the Deputyship type
(engine/people/deputies.py holds the rules; docs/api.md "Deputies")."""

from datetime import datetime
from typing import Annotated

import strawberry

from engine.people import deputies
from resolvers.loaders import one
from resolvers.mutations import run
from schema.base import AppInfo, Node, UserError, by_id_prefix
from schema.execution import context_only

_User = Annotated["User", strawberry.lazy("schema.identity")]  # noqa: F821 - resolved lazily: identity lists deputyships


@strawberry.type(
    description="While active (from <= now < until) the deputy sees the absent user's tasks in myTasks and may "
    "perform them, reads the items, cases and logs of the cases where the absent user plays a role, and gets a copy "
    "of the absent user's notifications; while either user is disabled, nothing. Seen by its absent user, its deputy "
    "and admins."
)
class Deputyship(Node):
    comment: str
    created_at: datetime

    is_type_of = by_id_prefix("Deputyship")

    @strawberry.field(name="from", description="When it starts (inclusive).")
    def from_(self) -> datetime:
        return self.starts_at  # type: ignore[attr-defined,no-any-return]

    @strawberry.field(description="When it ends (exclusive).")
    def until(self) -> datetime:
        return self.ends_at  # type: ignore[attr-defined,no-any-return]

    @strawberry.field(
        description="Whether now is within its period (while either user is disabled it lends nothing even then)."
    )
    def active(self) -> bool:
        return bool(self.starts_at <= deputies.now() < self.ends_at)  # type: ignore[attr-defined]

    @strawberry.field(description="The absent user.")
    @context_only
    def user(self, info: AppInfo) -> _User:
        return one(info.context.loaders.party_by_id, self.user_id)  # type: ignore[attr-defined]

    @strawberry.field(description="Who stands in for them.")
    @context_only
    def deputy(self, info: AppInfo) -> _User:
        return one(info.context.loaders.party_by_id, self.deputy_id)  # type: ignore[attr-defined]

    @strawberry.field(description="Who named the deputy: the absent user, or an admin.")
    @context_only
    def created_by(self, info: AppInfo) -> _User | None:
        return one(info.context.loaders.party_by_id, self.created_by)  # type: ignore[attr-defined]


@strawberry.input(
    description="Name a deputy. Without userId, your own; with it, an admin names another user's. The period must "
    f"end after it starts and after now, and last at most {deputies.MAX_PERIOD.days} days; a user has at most "
    f"{deputies.MAX_OPEN} current and coming deputyships."
)
class SetDeputyInput:
    deputy_id: strawberry.ID = strawberry.field(description="The user who stands in (not a group, not yourself).")
    until: datetime = strawberry.field(description="When it ends (exclusive).")
    from_: datetime | None = strawberry.field(name="from", default=None, description="When it starts; default now.")
    comment: str | None = strawberry.field(default=None, description=f"At most {deputies.MAX_COMMENT} characters.")
    user_id: strawberry.ID | None = strawberry.field(
        default=None, description="Admins only: the absent user whose deputy this is; default yourself."
    )


@strawberry.type
class SetDeputyPayload:
    deputyship: Deputyship | None = None
    user_errors: list[UserError] = strawberry.field(default_factory=list)


@strawberry.input
class RemoveDeputyInput:
    id: strawberry.ID = strawberry.field(description="The deputyship; its absent user, its deputy or an admin.")


@strawberry.type
class RemoveDeputyPayload:
    id: strawberry.ID | None = strawberry.field(default=None, description="The deputyship removed.")
    user_errors: list[UserError] = strawberry.field(default_factory=list)


async def set_deputy(info: AppInfo, input: SetDeputyInput) -> SetDeputyPayload:
    made, errors = await run(
        info.context,
        lambda s, a: deputies.set_deputy(
            s,
            actor=a,
            deputy_id=input.deputy_id,
            until=input.until,
            starts=input.from_,
            comment=input.comment,
            user_id=input.user_id,
        ),
    )
    return SetDeputyPayload(deputyship=made, user_errors=errors)  # type: ignore[arg-type]


async def remove_deputy(info: AppInfo, input: RemoveDeputyInput) -> RemoveDeputyPayload:
    removed, errors = await run(info.context, lambda s, a: deputies.remove_deputy(s, actor=a, id=input.id))
    return RemoveDeputyPayload(id=removed, user_errors=errors)  # type: ignore[arg-type]
