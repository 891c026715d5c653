"""The last-holder rule: every project, subproject and item keeps a party that may act on its
``.intent.grantPermission``, counting the grants that reach it from above
(engine/people/inheritance.py). Revoking, removing a group's last member and disabling a user
each ask it before they commit; each takes the grants' locks first (``lock_grant_holders``), so
two concurrent changes on one resource run one after the other."""

from typing import Any

from sqlalchemy import ColumnElement, Select, and_, exists, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from engine.errors import DomainError, ErrorCode
from engine.people.inheritance import ancestors_of
from engine.people.intents import ANCESTORS, GRANT_INTENTS, PREFIX_BY_KIND
from models import GroupMember, Permission, Project, Subproject, User, WorkflowItem, kind_of

_MODELS: dict[str, Any] = {"Project": Project, "Subproject": Subproject, "WorkflowItem": WorkflowItem}
_LAST = "This is the last party that may grant permissions here; grant another one first."
_BELOW = (
    "Something below this resource would be left with nobody who may grant permissions on it; "
    "grant another party there (or on this resource, reaching down) first."
)


def _grant_intent(kind: str) -> str:
    return f"{PREFIX_BY_KIND[kind]}.intent.grantPermission"


def may_act(party_id: ColumnElement[str]) -> ColumnElement[bool]:
    """Whether a granted party can use its grant: a user who is not disabled, or a group with
    such a member (an empty group holds a grant nobody can use)."""
    member = aliased(User)
    return or_(
        exists().where(User.id == party_id, User.disabled.is_(False)),
        exists().where(GroupMember.group_id == party_id, member.id == GroupMember.user_id, member.disabled.is_(False)),
    )


def _acting_holder(kind: str, row: Any, excluded: tuple[str, str] | None = None) -> ColumnElement[bool]:
    """A party that may act holds grantPermission on the resource ``row`` (a row of ``kind``'s
    table, or an alias), by its own grant or one reaching it; ``excluded``: (resource, party),
    a grant about to go."""
    other = aliased(Permission)
    ways = [and_(other.resource_id == row.id, other.intent == _grant_intent(kind))]
    for above, column in ANCESTORS[kind]:
        ways.append(
            and_(other.resource_id == getattr(row, column), other.intent == _grant_intent(above), other.inherit)
        )
    where = [or_(*ways), may_act(other.party_id)]
    if excluded is not None:
        where.append(~and_(other.resource_id == excluded[0], other.party_id == excluded[1]))
    return exists().where(*where)


def _orphans_below(resource_id: str, excluded: tuple[str, str] | None) -> list[Select[Any]]:
    """For a reaching grantPermission on ``resource_id``: a select per kind below it of a
    resource there that would have no acting holder (``excluded`` gone)."""
    kind = kind_of(resource_id) or ""
    found = []
    for below, ancestors in ANCESTORS.items():
        column = dict(ancestors).get(kind)
        if column is None:
            continue
        row = aliased(_MODELS[below])
        found.append(
            select(row.id).where(getattr(row, column) == resource_id, ~_acting_holder(below, row, excluded)).limit(1)
        )
    return found


async def check_revoke(session: AsyncSession, *, resource_id: str, intent: str, party_id: str, reaching: bool) -> None:
    """Refuse (LAST_GRANT_HOLDER) to revoke the grantPermission intent ``intent`` on the resource
    from ``party_id`` when the resource, or (``reaching``: the grant reaches down) something
    below it, would be left with no party that may act on it."""
    kind = kind_of(resource_id) or ""
    above = ancestors_of(resource_id)
    await lock_grant_holders(
        session,
        [resource_id]
        if above is None
        else select(Permission.resource_id).where(
            or_(Permission.resource_id == resource_id, Permission.resource_id.in_(above))
        ),
    )
    row = aliased(_MODELS[kind])
    excluded = (resource_id, party_id)
    remains = await session.scalar(select(_acting_holder(kind, row, excluded)).where(row.id == resource_id))
    if not remains:
        raise DomainError(ErrorCode.LAST_GRANT_HOLDER, _LAST, ["partyId"])
    for orphans in _orphans_below(resource_id, excluded) if reaching else ():
        if await session.scalar(orphans) is not None:
            raise DomainError(ErrorCode.LAST_GRANT_HOLDER, _BELOW, ["partyId"])


def resources_granted_to(party_ids: list[str]) -> Select[tuple[str]]:
    """The resources on which any of ``party_ids`` holds the grantPermission intent."""
    return select(Permission.resource_id).where(
        Permission.party_id.in_(party_ids), Permission.intent.in_(GRANT_INTENTS)
    )


async def lock_grant_holders(session: AsyncSession, resource_ids: Select[tuple[str]] | list[str]) -> None:
    """Lock the grantPermission grants of ``resource_ids`` until commit (PostgreSQL; SQLite's
    one writer serializes anyway). Every change that can take the last holder from a resource
    (revoking, removing a group's last member, disabling a user) takes these locks before it
    counts, always in the same order, so such changes on one resource run one after the other
    and each counts what the one before it committed."""
    await session.execute(
        select(Permission.party_id)
        .where(Permission.resource_id.in_(resource_ids), Permission.intent.in_(GRANT_INTENTS))
        .order_by(Permission.resource_id, Permission.intent, Permission.party_id)
        .with_for_update()
    )


async def require_grant_holders_remain(session: AsyncSession, *, party_ids: list[str]) -> None:
    """After a change that may have left ``party_ids`` unable to act (a member removed, a user
    disabled): refuse it if some resource they held grantPermission on, or something below one
    of their reaching grants of it, has no party left that may act on it (counting the grants
    that reach it from above). The resource is not named: the caller may not be allowed to see
    it."""
    held = aliased(Permission)
    checks: list[Select[Any]] = []
    for kind, model in _MODELS.items():
        row = aliased(model)
        checks.append(
            select(row.id)
            .join(held, held.resource_id == row.id)
            .where(held.party_id.in_(party_ids), held.intent == _grant_intent(kind), ~_acting_holder(kind, row))
            .limit(1)
        )
    reaching = await session.scalars(
        select(held.resource_id).where(held.party_id.in_(party_ids), held.intent.in_(GRANT_INTENTS), held.inherit)
    )
    for resource_id in set(reaching):
        checks += _orphans_below(resource_id, None)
    for check in checks:
        if await session.scalar(check) is not None:
            raise DomainError(
                ErrorCode.LAST_GRANT_HOLDER,
                "This would leave a resource with nobody who may grant permissions on it; grant another party first.",
                ["userId"],
            )
