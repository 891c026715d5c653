"""Grants that reach down: a grant on a project or subproject made with ``inherit`` also holds,
with the same suffix (engine/people/intents.py), on everything below it, now and later.

It is stored once, as the grant's own row with ``inherit`` set, never copied onto the rows
below: bringing a team onto a subproject of 500 running items is one row, revoking it one
delete, and an item created tomorrow is covered by the row that exists today. The rules ask
for it by the rows' parent ids (an item names its subproject and project, a subproject its
project):

- visibility (engine/people/visibility.py): "the row's parent is one of those the viewer's
  reaching grants cover" is an uncorrelated ``IN`` (``reached``), which the database reads once
  per statement and hashes, so a page or a count of a subproject's items costs no grant lookup
  per item for a viewer who holds the subproject's view by inheritance;
- one resource's intents (engine/people/permissions.py) and the listing of who holds what
  (``effective_grants``): its own rows and its ancestors' reaching rows, in one statement.
"""

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, Select, false, literal, null, select, union_all
from sqlalchemy.orm import aliased

from engine.people.actors import Actor
from engine.people.intents import ANCESTORS, counterpart
from models import Permission, Subproject, WorkflowItem, kind_of

# Made once (building an alias costs CPU on every read: engine/people/role_players.py).
_REACH_SUBPROJECT = aliased(Subproject, name="reach_subproject")
_KIND_MODELS = {"Subproject": Subproject, "WorkflowItem": WorkflowItem}


def _reaching_grants(intent: str, actor: Actor) -> Select[tuple[str]]:
    """The resources on which one of the actor's parties holds ``intent`` reaching down.
    Uncorrelated whatever query encloses it (that query may read ``permission`` itself)."""
    return (
        select(Permission.resource_id)
        .where(Permission.party_id.in_(actor.party_ids), Permission.intent == intent, Permission.inherit)
        .correlate(None)
    )


def reached_parents(kind: str, intent: str, actor: Actor) -> Select[tuple[str]] | None:
    """The parents (a subproject's project, an item's subproject) under which every row of
    ``kind`` holds ``intent`` for the actor by a reaching grant; None when no grant above can
    hold it. An item's are its subproject's reaching grants and the subprojects of its project's,
    so an item is asked by its subproject id alone (in the index of its subproject's items)."""
    sources = [(above, counterpart(intent, above)) for above, _ in ANCESTORS.get(kind, ())]
    parts: list[Select[tuple[str]]] = []
    for above, source in sources:
        if source is None:
            continue
        if kind == "WorkflowItem" and above == "Project":
            parts.append(
                select(_REACH_SUBPROJECT.id)
                .where(_REACH_SUBPROJECT.project_id.in_(_reaching_grants(source, actor)))
                .correlate(None)
            )
        else:
            parts.append(_reaching_grants(source, actor))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else union_all(*parts).subquery("reached").select().correlate(None)


def reached(kind: str, intent: str, actor: Actor, parent: Any) -> ColumnElement[bool]:
    """Rows of ``kind`` (whose parent id is the column ``parent``) on which the actor holds
    ``intent`` by a grant above that reaches down."""
    parents = reached_parents(kind, intent, actor)
    return false() if parents is None else parent.in_(parents)


def ancestors_of(resource_id: str) -> Select[tuple[str]] | None:
    """The ids of the resource's project and subproject (as a subquery, read in the statement
    that asks), None for a project."""
    kind = kind_of(resource_id) or ""
    model = _KIND_MODELS.get(kind)
    if model is None:
        return None
    parts = [select(getattr(model, column)).where(model.id == resource_id) for _, column in ANCESTORS[kind]]
    return parts[0] if len(parts) == 1 else union_all(*parts).subquery("ancestors").select()


class Holding(NamedTuple):
    """One party's hold of an intent on a resource: made there (``source`` None; ``reaches``
    whether it reaches down) or reaching it from the ancestor ``source``."""

    party_id: str
    source: str | None
    reaches: bool


def effective_grants(
    resource_ids: Iterable[str], party_ids: Any = None, among: Callable[[Any, Any], Any] | None = None
) -> Select[Any]:
    """Every grant that holds on the resources, as rows (resource, intent as stored, party,
    source: the ancestor whose reaching grant it is or NULL, inherit), one statement whatever
    the kinds; ``party_ids``: those parties' alone; ``among``: how ``column IN ids`` is written
    (the read layer's array form). ``hold`` maps the stored intents."""
    ids = list(dict.fromkeys(resource_ids))
    among = among or (lambda column, values: column.in_(values))
    mine = [] if party_ids is None else [Permission.party_id.in_(party_ids)]
    parts = [
        select(
            Permission.resource_id.label("target"),
            Permission.intent,
            Permission.party_id,
            null().label("source"),
            Permission.inherit,
        ).where(among(Permission.resource_id, ids), *mine)
    ]
    for kind, model in _KIND_MODELS.items():
        of_kind = [i for i in ids if kind_of(i) == kind]
        for _, column in ANCESTORS[kind] if of_kind else ():
            parts.append(
                select(
                    model.id.label("target"),
                    Permission.intent,
                    Permission.party_id,
                    Permission.resource_id.label("source"),
                    literal(False).label("inherit"),
                )
                .join(Permission, Permission.resource_id == getattr(model, column))
                .where(among(model.id, of_kind), Permission.inherit, *mine)
            )
    return parts[0] if len(parts) == 1 else union_all(*parts)


_ORDER = {None: 0, "Subproject": 1, "Project": 2}  # made here first, then the nearest ancestor's


def hold(rows: Iterable[Any]) -> dict[str, dict[str, list[Holding]]]:
    """``effective_grants``'s rows by resource and intent (as it is called on the resource),
    each intent's holdings by party, then made here before inherited; a stored intent with no
    counterpart on the resource is left out."""
    found: dict[str, dict[str, list[Holding]]] = defaultdict(lambda: defaultdict(list))
    for target, intent, party_id, source, inherit in rows:
        mapped = intent if source is None else counterpart(intent, kind_of(target) or "")
        if mapped is not None:
            found[target][mapped].append(Holding(party_id, source, bool(inherit) and source is None))
    result: dict[str, dict[str, list[Holding]]] = {}
    for target, intents in found.items():
        result[target] = {
            intent: sorted(holdings, key=lambda h: (h.party_id, _ORDER[kind_of(h.source) if h.source else None]))
            for intent, holdings in sorted(intents.items())
        }
    return result
