"""Who may see which row (hidden is the same as missing): one rule per kind of row, written once.

Every read path asks these, so no path shows more than another: the loaders, pages and
``node`` (``resolvers``), notifications (written and read), pick lists, mutations' "not found"
answers, and the live streams (``audiences``, the same rule in Python over rows read once per
batch of entries).

A grant "of an intent" on a resource is its own grant, or the same-suffix grant of its
subproject or project made to reach down (engine/people/inheritance.py).

- A **project** or **subproject**: a grant of its ``.view`` intent.
- A **workflow item** (and its case): a grant of ``workflowItem.view``, or a role in its case
  (one's own, or an absent player's one stands in for: engine/people/deputies.py, in
  engine/people/role_players.py's ``plays_role``).
- An **activity entry** (its comment and data): a grant of ``.viewHistory`` on any resource the
  entry is about (its project, subproject or workflow item), or a role in the case of its
  workflow item. ``workflowItem.view`` alone shows the item, not its log. A role in the case
  lets one read the whole log of that item (what the live stream has always shown its
  players), entries without a case (item created, updated) included: the player can read the
  item's fields anyway.
- A **permission entry** (``permission_granted`` / ``permission_revoked``): a grant of
  ``.intent.listPermissions`` on the resource whose grants it changed (the entry's most specific
  resource), the rule that shows that resource's ``permissions``: the log tells no one more
  about who holds what than the list does. Role players and viewHistory alone do not read it.
- A **notification**: its activity entry's rule, checked when it is read, so revoking a grant
  hides what it revealed at once.

Admins see everything. ``actor.party_ids`` already holds the user and their groups.
"""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, or_, select, true
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from engine.people.actors import Actor
from engine.people.deputies import deputies_of_parties
from engine.people.inheritance import reached
from engine.people.permissions import visible_filter
from engine.people.role_players import plays_role
from models import Activity, Case, CaseRoleParty, Permission, Project, Subproject, WorkflowItem

# activity column -> the intent on that resource that lets a party read the entry
HISTORY_INTENTS = {
    "project_id": "project.viewHistory",
    "subproject_id": "subproject.viewHistory",
    "workflow_item_id": "workflowItem.viewHistory",
}

# Entries about a grant, and the intent (on the resource whose grants changed) that reads them.
PERMISSION_KINDS = ("permission_granted", "permission_revoked")
LIST_INTENTS = {
    "project_id": "project.intent.listPermissions",
    "subproject_id": "subproject.intent.listPermissions",
    "workflow_item_id": "workflowItem.intent.listPermissions",
}


def project_visible(actor: Actor) -> ColumnElement[bool]:
    return visible_filter(Project.id, "project.view", actor)


def subproject_visible(actor: Actor, *, probe: bool = False) -> ColumnElement[bool]:
    """Subprojects: a grant of subproject.view, or project.view on its project reaching down.
    ``probe``: one probe per subproject, never a join (``visible_filter``): a project's page."""
    if actor.is_admin:
        return true()
    return or_(
        reached("Subproject", "subproject.view", actor, Subproject.project_id),
        visible_filter(Subproject.id, "subproject.view", actor, probe=probe),
    )


def item_visible(actor: Actor, item_id: Any = WorkflowItem.id) -> ColumnElement[bool]:
    """Workflow items: a grant of workflowItem.view, one of view reaching down from its
    subproject or project, or a role in the item's case. The reaching grants are asked first,
    by the item's subproject id: one set per statement (engine/people/inheritance.py), so a
    viewer who holds a subproject's view that way costs no grant lookup per item. Over
    ``item_id`` when given (a column holding an item's id), so a read that has the id needs no
    join to the item (a pick list); its subproject is then read by the item's key."""
    if actor.is_admin:
        return true()
    if item_id is WorkflowItem.id:
        parent: Any = WorkflowItem.subproject_id
    else:
        holder = aliased(WorkflowItem, name="reached_item")
        parent = select(holder.subproject_id).where(holder.id == item_id).scalar_subquery()
    return or_(
        items_reached(actor, parent),
        visible_filter(item_id, "workflowItem.view", actor),
        plays_role(actor, item_id),
    )


def items_reached(actor: Actor, subproject_id: Any) -> ColumnElement[bool]:
    """Every item of the subproject ``subproject_id`` (a column or value) is visible to the
    actor by a grant reaching down: ``item_visible``'s first way in, asked once of the
    subproject, so that a count of its items needs no check per item when it holds."""
    return reached("WorkflowItem", "workflowItem.view", actor, subproject_id)


def item_log_readable(actor: Actor) -> ColumnElement[bool]:
    """Workflow items whose log the actor may read, by the rule of ``entry_readable``: viewHistory
    on the item, its subproject or its project, or a role in its case. What the log tells (a
    job's input, progress and key, made by an entry of it) is not for workflowItem.view alone."""
    if actor.is_admin:
        return true()

    def held(resource: Any, intent: str) -> ColumnElement[bool]:
        return exists().where(
            Permission.resource_id == resource, Permission.intent == intent, Permission.party_id.in_(actor.party_ids)
        )

    parent = aliased(Subproject, name="log_parent")
    by_project = exists().where(
        parent.id == WorkflowItem.subproject_id,
        Permission.resource_id == parent.project_id,
        Permission.intent == HISTORY_INTENTS["project_id"],
        Permission.party_id.in_(actor.party_ids),
    )
    return or_(
        held(WorkflowItem.id, HISTORY_INTENTS["workflow_item_id"]),
        held(WorkflowItem.subproject_id, HISTORY_INTENTS["subproject_id"]),
        by_project,
        plays_role(actor, WorkflowItem.id),
    )


def entry_readable(actor: Actor) -> ColumnElement[bool]:
    """Activity entries the actor may read (see the module docstring): one EXISTS per way in,
    each a probe of a primary key, so the database checks a page's rows, not every grant."""
    if actor.is_admin:
        return true()
    by_grant = [
        exists().where(
            Permission.resource_id == getattr(Activity, column),
            Permission.intent == intent,
            Permission.party_id.in_(actor.party_ids),
        )
        for column, intent in HISTORY_INTENTS.items()
    ]
    usual = or_(*by_grant, plays_role(actor, Activity.workflow_item_id))
    return or_(
        and_(Activity.kind.not_in(PERMISSION_KINDS), usual),
        and_(Activity.kind.in_(PERMISSION_KINDS), _grants_listable(actor)),
    )


def grant_entries_readable(actor: Actor) -> ColumnElement[bool]:
    """The part of ``entry_readable`` that viewHistory on the resource itself does not settle:
    permission entries (of it or of resources inside it) need listPermissions on theirs."""
    if actor.is_admin:
        return true()
    return or_(Activity.kind.not_in(PERMISSION_KINDS), _grants_listable(actor))


def _grants_listable(actor: Actor) -> ColumnElement[bool]:
    """The actor may list the grants of the entry's most specific resource (item, else
    subproject, else project): its own grant of listPermissions, or one reaching it from the
    entry's subproject or project."""

    def holds(column: str, *, reaching: bool = False) -> ColumnElement[bool]:
        return exists().where(
            Permission.resource_id == getattr(Activity, column),
            Permission.intent == LIST_INTENTS[column],
            Permission.party_id.in_(actor.party_ids),
            *([Permission.inherit] if reaching else []),
        )

    return or_(
        and_(
            Activity.workflow_item_id.is_not(None),
            or_(
                holds("workflow_item_id"),
                holds("subproject_id", reaching=True),
                holds("project_id", reaching=True),
            ),
        ),
        and_(
            Activity.workflow_item_id.is_(None),
            Activity.subproject_id.is_not(None),
            or_(holds("subproject_id"), holds("project_id", reaching=True)),
        ),
        and_(Activity.subproject_id.is_(None), holds("project_id")),
    )


# The resource columns above each one, whose reaching grants hold on it.
_ABOVE = {"workflow_item_id": ("subproject_id", "project_id"), "subproject_id": ("project_id",), "project_id": ()}


def _own_resource(entry: Activity) -> tuple[str, str]:
    """The most specific resource column an entry is about, and its id."""
    for column in ("workflow_item_id", "subproject_id", "project_id"):
        if getattr(entry, column):
            return column, getattr(entry, column)
    return "project_id", ""


def notification_readable(actor: Actor, activity_id: Any) -> ColumnElement[bool]:
    """Notifications whose entry (``activity_id``, a column) the actor may read now."""
    if actor.is_admin:
        return true()
    return exists().where(Activity.id == activity_id, entry_readable(actor))


@dataclass(frozen=True, slots=True)
class Audience:
    """The parties that may read one entry (``entry_readable``, computed for a live event)."""

    parties: frozenset[str]

    def admits(self, actor: Actor) -> bool:
        return actor.is_admin or not self.parties.isdisjoint(actor.party_ids)


async def audiences(session: AsyncSession, entries: Sequence[Activity]) -> dict[str, Audience]:
    """``entry_readable`` for a batch of entries and every subscriber at once: three queries per
    batch (viewHistory holders, case players, the players' deputies now), whatever the number of
    subscribers."""
    resources = {getattr(e, column) for e in entries for column in HISTORY_INTENTS if getattr(e, column)}
    item_ids = {e.workflow_item_id for e in entries if e.workflow_item_id}
    holders: dict[tuple[str, str], set[str]] = defaultdict(set)
    intents = list(HISTORY_INTENTS.values())
    if any(e.kind in PERMISSION_KINDS for e in entries):  # rare: only then the listPermissions holders
        intents += LIST_INTENTS.values()
    reaching: dict[tuple[str, str], set[str]] = defaultdict(set)  # listPermissions reaching down
    if resources:
        rows = await session.execute(
            select(Permission.resource_id, Permission.intent, Permission.party_id, Permission.inherit).where(
                Permission.resource_id.in_(resources),
                Permission.intent.in_(intents),
            )
        )
        for resource_id, intent, party, inherit in rows:
            holders[(resource_id, intent)].add(party)
            if inherit:
                reaching[(resource_id, intent)].add(party)
    players: dict[str, set[str]] = defaultdict(set)
    if item_ids:
        for item_id, party in await session.execute(
            select(Case.object_id, CaseRoleParty.party_id)
            .join(CaseRoleParty, CaseRoleParty.case_id == Case.id)
            .where(Case.object_id.in_(item_ids))
        ):
            players[item_id].add(party)
        # The deputies standing in for a player now read what the player reads (engine/people/deputies.py).
        lent = await deputies_of_parties(session, {p for found in players.values() for p in found})
        for found in players.values():
            found |= {deputy for party in list(found) for deputy in lent.get(party, ())}
    result = {}
    for entry in entries:
        if entry.kind in PERMISSION_KINDS:
            column, resource = _own_resource(entry)
            listers = set(holders.get((resource, LIST_INTENTS[column]), ()))
            for above in _ABOVE[column]:  # the grants reaching the entry's resource (_grants_listable)
                listers |= reaching.get((getattr(entry, above) or "", LIST_INTENTS[above]), set())
            result[entry.id] = Audience(frozenset(listers))
            continue
        parties: set[str] = set(players.get(entry.workflow_item_id or "", ()))
        for column, intent in HISTORY_INTENTS.items():
            resource = getattr(entry, column)
            if resource:
                parties |= holders.get((resource, intent), set())
        result[entry.id] = Audience(frozenset(parties))
    return result


__all__ = [
    "HISTORY_INTENTS",
    "LIST_INTENTS",
    "PERMISSION_KINDS",
    "Audience",
    "audiences",
    "entry_readable",
    "grant_entries_readable",
    "item_visible",
    "items_reached",
    "notification_readable",
    "plays_role",
    "project_visible",
    "subproject_visible",
]
