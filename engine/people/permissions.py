"""Intents: who may do what to which resource.

Grants are rows (resource_id, intent, party_id); a party is a user or a group, and the actor's
``party_ids`` already include their groups. Admins pass every check.
"""

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from sqlalchemy import ColumnElement, Select, delete, exists, or_, select, true
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from engine.errors import DomainError, ErrorCode, not_found
from engine.history import activity
from engine.history.activity import RESOURCE_MODELS
from engine.people.actors import Actor
from engine.people.role_players import plays_role
from models import Group, GroupMember, Permission, Project, Subproject, User, WorkflowItem, kind_of
from models.db import insert_for

GLOBAL = "global"
GLOBAL_INTENTS = ("global.createProject", "global.createUser", "global.createGroup", "global.defineWorkflow")
_RESOURCE_SUFFIXES = (
    "view",
    "viewHistory",
    "update",
    "assign",
    "close",
    "intent.listPermissions",
    "intent.grantPermission",
    "intent.revokePermission",
)
PROJECT_INTENTS = tuple(f"project.{s}" for s in (*_RESOURCE_SUFFIXES, "createSubproject"))
SUBPROJECT_INTENTS = tuple(
    f"subproject.{s}" for s in (*_RESOURCE_SUFFIXES, "createWorkflowItem", "reorderWorkflowItems")
)
WORKFLOW_ITEM_INTENTS = tuple(f"workflowItem.{s}" for s in _RESOURCE_SUFFIXES if s != "close")
_INTENTS_BY_KIND = {
    "Project": PROJECT_INTENTS,
    "Subproject": SUBPROJECT_INTENTS,
    "WorkflowItem": WORKFLOW_ITEM_INTENTS,
}
_PREFIX_BY_KIND = {"Project": "project", "Subproject": "subproject", "WorkflowItem": "workflowItem"}
# The intents whose last holder cannot be revoked, one per kind of resource.
GRANT_INTENTS = tuple(f"{prefix}.intent.grantPermission" for prefix in _PREFIX_BY_KIND.values())


def intents_for(resource_id: str) -> tuple[str, ...]:
    if resource_id == GLOBAL:
        return GLOBAL_INTENTS
    return _INTENTS_BY_KIND.get(kind_of(resource_id) or "", ())


def intent_prefix(resource_id: str) -> str:
    return _PREFIX_BY_KIND[kind_of(resource_id) or ""]


async def held_intents(session: AsyncSession, *, actor: Actor, resource_id: str) -> set[str]:
    if actor.is_admin:
        return set(intents_for(resource_id))
    rows = await session.scalars(
        select(Permission.intent).where(Permission.resource_id == resource_id, Permission.party_id.in_(actor.party_ids))
    )
    return set(rows)


async def has_intent(session: AsyncSession, *, actor: Actor, resource_id: str, intent: str) -> bool:
    if actor.is_admin:
        return True
    found = await session.scalar(
        select(Permission.intent)
        .where(
            Permission.resource_id == resource_id,
            Permission.intent == intent,
            Permission.party_id.in_(actor.party_ids),
        )
        .limit(1)
    )
    return found is not None


async def require(
    session: AsyncSession,
    *,
    actor: Actor,
    resource_id: str,
    intent: str,
    what: str,
    field: str = "id",
    visible: bool | None = None,
) -> None:
    """Raise unless the actor holds ``intent``. Someone who cannot even view the resource (engine/
    visibility.py's rule) is told it does not exist (NOT_FOUND), exactly as for an unknown id."""
    held = await held_intents(session, actor=actor, resource_id=resource_id)
    if intent in held:
        return
    can_view = visible if visible is not None else f"{intent_prefix(resource_id)}.view" in held
    if not can_view and visible is None and kind_of(resource_id) == "WorkflowItem":
        # A player of the item's case sees the item without a grant: told "not
        # allowed", as anyone who sees it is. Asked only on this refusal's path.
        can_view = bool(await session.scalar(select(plays_role(actor, resource_id))))
    if not can_view:
        raise not_found(what, resource_id, field)
    raise DomainError(ErrorCode.NOT_ALLOWED, f"You may not do {intent} on this {what}.", [field])


async def require_global(session: AsyncSession, *, actor: Actor, intent: str) -> None:
    if not await has_intent(session, actor=actor, resource_id=GLOBAL, intent=intent):
        raise DomainError(ErrorCode.NOT_ALLOWED, f"You need the {intent} permission.")


def visible_filter(
    column: ColumnElement[str], intent: str, actor: Actor, *, probe: bool = False
) -> ColumnElement[bool]:
    """Rows whose id the actor holds ``intent`` on (admins: all). A correlated EXISTS, so the
    database probes the permission key once per candidate row instead of first collecting every
    id the actor may see (10,000 for a user who sees 10,000 items, on each nested read).
    ``probe``: fenced (OFFSET 0), so PostgreSQL cannot make it a join either: a nested page of a
    few rows (a project's subprojects) otherwise merged them with the actor's whole range of
    grants of the intent, once per project (issue 52: 20,000 grants, the projects page 360 ms)."""
    if actor.is_admin:
        return true()
    held = (Permission.resource_id == column, Permission.intent == intent, Permission.party_id.in_(actor.party_ids))
    if probe:
        return select(Permission.resource_id).where(*held).offset(0).exists()
    return exists().where(*held)


async def grant_raw(session: AsyncSession, *, resource_id: str, intent: str, party_id: str) -> None:
    """Insert a grant unless it exists (a concurrent equal grant is harmless)."""
    await _insert_grants(session, [(resource_id, intent, party_id)])


# Rows per INSERT: three parameters each, well under the drivers' limits (32,767 parameters).
_GRANTS_PER_INSERT = 1_000


async def _insert_grants(session: AsyncSession, grants: Iterable[tuple[str, str, str]]) -> None:
    """(resource, intent, party) rows in one statement (per thousand), those that exist skipped."""
    rows = [{"resource_id": r, "intent": i, "party_id": p} for r, i, p in dict.fromkeys(grants)]
    insert = insert_for(session)
    for start in range(0, len(rows), _GRANTS_PER_INSERT):
        chunk = rows[start : start + _GRANTS_PER_INSERT]
        await session.execute(insert(Permission).values(chunk).on_conflict_do_nothing())


async def grant_new_resource(
    session: AsyncSession, *, resource_id: str, creator_id: str, parent_id: str | None = None
) -> None:
    """A new child resource copies its parent's grants; its creator gets every
    intent. One read of the parent's grants and one insert, however many grants there are:
    creating an item must not cost a statement per grantee of its subproject."""
    grants = [(resource_id, intent, creator_id) for intent in intents_for(resource_id)]
    if parent_id is not None:
        grants += await _copied_grants(session, source_id=parent_id, target_id=resource_id)
    await _insert_grants(session, grants)


async def _copied_grants(session: AsyncSession, *, source_id: str, target_id: str) -> list[tuple[str, str, str]]:
    """The parent's grants for a new child resource, mapped intent by intent
    (project.view -> subproject.view); intents the child does not have are skipped."""
    source_prefix, target_prefix = intent_prefix(source_id), intent_prefix(target_id)
    target_intents = set(intents_for(target_id))
    rows = (
        await session.execute(select(Permission.intent, Permission.party_id).where(Permission.resource_id == source_id))
    ).all()
    mapped = [(target_prefix + intent.removeprefix(source_prefix), party_id) for intent, party_id in rows]
    return [(target_id, intent, party_id) for intent, party_id in mapped if intent in target_intents]


async def grants_of(session: AsyncSession, resource_id: str) -> dict[str, list[str]]:
    rows = (
        await session.execute(
            select(Permission.intent, Permission.party_id)
            .where(Permission.resource_id == resource_id)
            .order_by(Permission.intent, Permission.party_id)
        )
    ).all()
    result: dict[str, list[str]] = defaultdict(list)
    for intent, party_id in rows:
        result[intent].append(party_id)
    return dict(result)


async def _check_party(session: AsyncSession, party_id: str) -> None:
    """The party exists; its row is share-locked until commit, so a concurrent removal of a
    group's last member or a user's disabling (which lock it for update) either sees this grant
    or happens before it, and never leaves the resource granted to nobody who may act."""
    kind = kind_of(party_id)
    model = User if kind == "User" else Group if kind == "Group" else None
    found = None
    if model is not None:
        found = await session.scalar(select(model.id).where(model.id == party_id).with_for_update(read=True))
    if found is None:
        raise not_found("user or group", party_id, "partyId")


async def _resource(session: AsyncSession, resource_id: str) -> Project | Subproject | WorkflowItem:
    model = RESOURCE_MODELS.get(kind_of(resource_id) or "")
    resource = None if model is None else await session.get(model, resource_id)
    if resource is None:
        raise not_found("resource", resource_id, "resourceId")
    return resource


async def _log_change(
    session: AsyncSession, *, kind: str, actor: Actor, resource: Any, intent: str, party_id: str
) -> None:
    """A grant or revocation, in the history of the resource it changes (each
    resource's log), read by whoever may read that history (engine/people/visibility.py). Global
    grants (no resource, admins only) have no history to go in."""
    if resource is not None:
        await activity.record(
            session, kind=kind, actor_id=actor.user_id, about=resource, data={"intent": intent, "partyId": party_id}
        )


async def grant(session: AsyncSession, *, actor: Actor, resource_id: str, intent: str, party_id: str) -> None:
    """Grant ``intent`` to a party, logged as ``permission_granted``; granting what the party
    already holds changes nothing and logs nothing."""
    resource = await _check_change(session, actor=actor, resource_id=resource_id, intent=intent, verb="grantPermission")
    await _check_party(session, party_id)
    inserted = await session.execute(
        insert_for(session)(Permission)
        .values(resource_id=resource_id, intent=intent, party_id=party_id)
        .on_conflict_do_nothing()
        .returning(Permission.intent)
    )
    if inserted.first() is not None:
        await _log_change(
            session, kind="permission_granted", actor=actor, resource=resource, intent=intent, party_id=party_id
        )


async def revoke(session: AsyncSession, *, actor: Actor, resource_id: str, intent: str, party_id: str) -> None:
    """Take ``intent`` on a resource from a party. The last party that may act on a resource's
    grantPermission intent keeps it (LAST_GRANT_HOLDER): the intent's grants are locked first,
    so two concurrent revokes of its last two holders cannot both see the other one remain.
    Logged as ``permission_revoked``; revoking a grant that does not exist changes nothing and
    logs nothing."""
    resource = await _check_change(
        session, actor=actor, resource_id=resource_id, intent=intent, verb="revokePermission"
    )
    if intent in GRANT_INTENTS:
        await lock_grant_holders(session, [resource_id])
        acting = set(
            await session.scalars(
                select(Permission.party_id).where(
                    Permission.resource_id == resource_id, Permission.intent == intent, may_act(Permission.party_id)
                )
            )
        )
        if acting == {party_id}:
            raise DomainError(
                ErrorCode.LAST_GRANT_HOLDER,
                "This is the last party that may grant permissions here; grant another one first.",
                ["partyId"],
            )
    deleted = await session.execute(
        delete(Permission)
        .where(Permission.resource_id == resource_id, Permission.intent == intent, Permission.party_id == party_id)
        .returning(Permission.intent)
    )
    if deleted.first() is not None:
        await _log_change(
            session, kind="permission_revoked", actor=actor, resource=resource, intent=intent, party_id=party_id
        )


def may_act(party_id: ColumnElement[str]) -> ColumnElement[bool]:
    """Whether a granted party can use its grant: a user who is not disabled, or a group with
    such a member (an empty group holds a grant nobody can use)."""
    member = aliased(User)
    return or_(
        exists().where(User.id == party_id, User.disabled.is_(False)),
        exists().where(GroupMember.group_id == party_id, member.id == GroupMember.user_id, member.disabled.is_(False)),
    )


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
    disabled): refuse it if some resource they held grantPermission on has no party left that
    may act on it. The resource is not named: the caller may not be allowed to see it."""
    held, other = aliased(Permission), aliased(Permission)
    orphaned = await session.scalar(
        select(held.resource_id)
        .where(held.party_id.in_(party_ids), held.intent.in_(GRANT_INTENTS))
        .where(
            ~exists().where(other.resource_id == held.resource_id, other.intent == held.intent, may_act(other.party_id))
        )
        .limit(1)
    )
    if orphaned is not None:
        raise DomainError(
            ErrorCode.LAST_GRANT_HOLDER,
            "This would leave a resource with nobody who may grant permissions on it; grant another party first.",
            ["userId"],
        )


async def _check_change(
    session: AsyncSession, *, actor: Actor, resource_id: str, intent: str, verb: str
) -> Project | Subproject | WorkflowItem | None:
    """Check the actor may change this grant; returns the resource (None: global)."""
    resource = None
    if resource_id == GLOBAL:
        if not actor.is_admin:
            raise DomainError(ErrorCode.NOT_ALLOWED, "Only an admin may change global permissions.", ["resourceId"])
    else:
        resource = await _resource(session, resource_id)
        prefix = intent_prefix(resource_id)
        await require(
            session,
            actor=actor,
            resource_id=resource_id,
            intent=f"{prefix}.intent.{verb}",
            what="resource",
            field="resourceId",
        )
    if intent not in intents_for(resource_id):
        valid = intents_for(resource_id)
        raise DomainError(
            ErrorCode.INVALID_INPUT,
            f"{intent[:100]!r} is not an intent of this resource, whose intents are {', '.join(valid)}.",
            ["intent"],
        )
    return resource
