"""Intents: who may do what to which resource.

Grants are rows (resource_id, intent, party_id, inherit); a party is a user or a group, and the
actor's ``party_ids`` already include their groups. A grant with ``inherit`` on a project or
subproject holds on everything below it too (engine/people/inheritance.py): every check here
counts it. Admins pass every check.
"""

from collections.abc import Iterable
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, exists, or_, select, true
from sqlalchemy.ext.asyncio import AsyncSession

from engine.errors import DomainError, ErrorCode, not_found
from engine.history import activity
from engine.history.activity import RESOURCE_MODELS
from engine.people.actors import Actor
from engine.people.grant_holders import (
    check_revoke,
    lock_grant_holders,
    may_act,
    require_grant_holders_remain,
    resources_granted_to,
)
from engine.people.inheritance import Holding, ancestors_of, effective_grants, hold
from engine.people.intents import (
    GLOBAL,
    GLOBAL_INTENTS,
    GRANT_INTENTS,
    PROJECT_INTENTS,
    SUBPROJECT_INTENTS,
    WORKFLOW_ITEM_INTENTS,
    counterpart,
    intent_prefix,
    intents_for,
    reaching,
)
from engine.people.role_players import plays_role
from models import Group, Permission, Project, Subproject, User, WorkflowItem, kind_of
from models.db import insert_for

__all__ = [
    "GLOBAL",
    "GLOBAL_INTENTS",
    "GRANT_INTENTS",
    "PROJECT_INTENTS",
    "RESOURCE_MODELS",
    "SUBPROJECT_INTENTS",
    "WORKFLOW_ITEM_INTENTS",
    "Holding",
    "grant",
    "grant_new_resource",
    "grant_raw",
    "grants_of",
    "has_intent",
    "held_intents",
    "holdings_of",
    "intent_prefix",
    "intents_for",
    "lock_grant_holders",
    "may_act",
    "require",
    "require_global",
    "require_grant_holders_remain",
    "resources_granted_to",
    "revoke",
    "visible_filter",
]


def _holds_here(resource_id: str, intents: list[str] | None = None) -> ColumnElement[bool]:
    """Grants that hold on ``resource_id``: its own, and its ancestors' reaching ones (of the
    intents ``reaching`` names for each of ``intents``, when given)."""
    own = [Permission.resource_id == resource_id]
    if intents is not None:
        own.append(Permission.intent.in_(intents))
    above = ancestors_of(resource_id)
    if above is None:
        return and_(*own)
    sources = None if intents is None else [source for i in intents for _, source in reaching(i)]
    inherited = [Permission.inherit, Permission.resource_id.in_(above)]
    if sources is not None:
        inherited.append(Permission.intent.in_(sources))
    return or_(and_(*own), and_(*inherited))


def _as_held(resource_id: str, rows: Any) -> set[str]:
    """The intents of ``(resource, intent)`` rows, as called on ``resource_id``."""
    kind = kind_of(resource_id) or ""
    found = {intent if source == resource_id else counterpart(intent, kind) for source, intent in rows}
    return {intent for intent in found if intent is not None}


async def held_intents(session: AsyncSession, *, actor: Actor, resource_id: str) -> set[str]:
    if actor.is_admin:
        return set(intents_for(resource_id))
    rows = await session.execute(
        select(Permission.resource_id, Permission.intent).where(
            Permission.party_id.in_(actor.party_ids), _holds_here(resource_id)
        )
    )
    return _as_held(resource_id, rows)


async def has_intent(session: AsyncSession, *, actor: Actor, resource_id: str, intent: str) -> bool:
    if actor.is_admin:
        return True
    rows = await session.execute(
        select(Permission.resource_id, Permission.intent)
        .where(Permission.party_id.in_(actor.party_ids), _holds_here(resource_id, [intent]))
        .limit(1)
    )
    return intent in _as_held(resource_id, rows)


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
    """Rows whose id the actor holds ``intent`` on by a grant made there (admins: all; the grants
    reaching a row from above are engine/people/inheritance.py's ``reached``, which the
    visibility rules add beside this one). A correlated EXISTS, so the
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
    # A reaching grant holds below already, and its revocation must take it back: not copied.
    rows = (
        await session.execute(
            select(Permission.intent, Permission.party_id).where(
                Permission.resource_id == source_id, Permission.inherit.is_(False)
            )
        )
    ).all()
    mapped = [(target_prefix + intent.removeprefix(source_prefix), party_id) for intent, party_id in rows]
    return [(target_id, intent, party_id) for intent, party_id in mapped if intent in target_intents]


async def holdings_of(session: AsyncSession, resource_id: str) -> dict[str, list[Holding]]:
    """Who holds each intent on the resource: its own grants and those reaching it from above
    (engine/people/inheritance.py), by intent, then party."""
    rows = await session.execute(effective_grants([resource_id]))
    return hold(rows).get(resource_id, {})


async def grants_of(session: AsyncSession, resource_id: str) -> dict[str, list[str]]:
    """The parties holding each intent on the resource, each once, however they hold it."""
    return {
        intent: list(dict.fromkeys(h.party_id for h in holdings))
        for intent, holdings in (await holdings_of(session, resource_id)).items()
    }


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
    session: AsyncSession, *, kind: str, actor: Actor, resource: Any, intent: str, party_id: str, inherit: bool
) -> None:
    """A grant or revocation, in the history of the resource it changes (each
    resource's log), read by whoever may read that history (engine/people/visibility.py). Global
    grants (no resource, admins only) have no history to go in. A reaching grant's entry says
    so (``inherit``); the others' read as they always have."""
    if resource is not None:
        data: dict[str, Any] = {"intent": intent, "partyId": party_id}
        if inherit:
            data["inherit"] = True
        await activity.record(session, kind=kind, actor_id=actor.user_id, about=resource, data=data)


async def grant(
    session: AsyncSession, *, actor: Actor, resource_id: str, intent: str, party_id: str, inherit: bool = False
) -> None:
    """Grant ``intent`` to a party, logged as ``permission_granted``; granting what the party
    already holds changes nothing and logs nothing. ``inherit``: on a project or subproject, the
    grant also holds on everything below it, now and later (engine/people/inheritance.py); a
    grant made without it gains that reach."""
    resource = await _check_change(session, actor=actor, resource_id=resource_id, intent=intent, verb="grantPermission")
    if inherit and kind_of(resource_id) not in ("Project", "Subproject"):
        raise DomainError(
            ErrorCode.INVALID_INPUT,
            "Only a project's or a subproject's grant can reach down: this resource has nothing below it.",
            ["inherit"],
        )
    await _check_party(session, party_id)
    insert = insert_for(session)(Permission).values(
        resource_id=resource_id, intent=intent, party_id=party_id, inherit=inherit
    )
    if inherit:
        keys = [Permission.resource_id, Permission.intent, Permission.party_id]
        insert = insert.on_conflict_do_update(
            index_elements=keys, set_={"inherit": True}, where=Permission.__table__.c.inherit.is_(False)
        )
    else:
        insert = insert.on_conflict_do_nothing()
    changed = await session.execute(insert.returning(Permission.intent))
    if changed.first() is not None:
        await _log_change(
            session,
            kind="permission_granted",
            actor=actor,
            resource=resource,
            intent=intent,
            party_id=party_id,
            inherit=inherit,
        )


async def revoke(
    session: AsyncSession, *, actor: Actor, resource_id: str, intent: str, party_id: str, inherit: bool = False
) -> None:
    """Take ``intent`` on a resource from a party. A grant that reaches down is revoked with
    ``inherit`` (it takes back the grant and its reach; grants made below stay), so that no one
    takes a team's access to everything below by revoking what looks like one grant. The last
    party that may act on a resource's grantPermission intent keeps it (LAST_GRANT_HOLDER,
    counting the grants reaching it, and for a reaching grant everything below:
    engine/people/grant_holders.py). Logged as ``permission_revoked``; revoking a grant that
    does not exist changes nothing and logs nothing."""
    resource = await _check_change(
        session, actor=actor, resource_id=resource_id, intent=intent, verb="revokePermission"
    )
    reaching = bool(
        await session.scalar(
            select(Permission.inherit).where(
                Permission.resource_id == resource_id, Permission.intent == intent, Permission.party_id == party_id
            )
        )
    )
    if reaching and not inherit:
        raise DomainError(
            ErrorCode.INVALID_INPUT,
            "This grant reaches everything below this resource: revoke it with inherit: true "
            "(grants made directly below stay).",
            ["inherit"],
        )
    if intent in GRANT_INTENTS and resource is not None:
        await check_revoke(session, resource_id=resource_id, intent=intent, party_id=party_id, reaching=reaching)
    deleted = await session.execute(
        delete(Permission)
        .where(Permission.resource_id == resource_id, Permission.intent == intent, Permission.party_id == party_id)
        .returning(Permission.intent)
    )
    if deleted.first() is not None:
        await _log_change(
            session,
            kind="permission_revoked",
            actor=actor,
            resource=resource,
            intent=intent,
            party_id=party_id,
            inherit=reaching,
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
