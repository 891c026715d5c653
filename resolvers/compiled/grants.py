"""The SQL forms of what the grants say: a resource's ``allowedIntents`` and ``permissions``,
and a ``PermissionGrant``'s ``parties`` and ``holders``.

A resource holds its own grants and the grants of its subproject and project made to reach
down (engine/people/inheritance.py), with the intent called as the resource's kind calls it
(``project.view`` is ``workflowItem.view`` on an item; an intent with no counterpart is left
out). ``_holdings`` writes that union once over a row's own id and its parent ids, and each
form reads it; each answers what its resolver answers (``schema/project.py``, the
``grants_by_resource`` and ``intents_by_resource`` loaders, ``engine.people.inheritance.hold``):

- ``allowedIntents``: the viewer's intents, each once, in code-point order (``COLLATE "C"`` on
  PostgreSQL, whose default collation may sort otherwise; SQLite compares bytes); every intent
  of the kind for an admin.
- ``permissions``: null unless the viewer holds the kind's ``intent.listPermissions``; else a
  ``PermissionGrant`` per intent held on the resource, in code-point order. Its ``parties``:
  each holding party once, by id; ``holders``: each hold, by party id, the resource's own
  before its subproject's before its project's. A party that no longer exists is left out
  (an intent whose parties are all gone stays, with none).
- ``PermissionHolder.inheritedFrom``: the ancestor's id when the viewer may see it, else null.
"""

import json
from typing import Any

from sqlalchemy import String, case, exists, false, func, literal, literal_column, null, or_, select, union_all
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.sql.util import ClauseAdapter

from engine.people.intents import ANCESTORS, INTENTS_BY_KIND, PREFIX_BY_KIND
from models import Group, Permission, Project, Subproject, User
from resolvers import visibility
from resolvers.compiled.build import Build
from resolvers.compiled.form import LEAF, OBJECT, PARTIES, Form, column, party

__all__ = ["FORMS", "allowed_intents", "grantors", "permissions", "strings"]

_PERMISSION, _USER, _GROUP = Permission.__table__, User.__table__, Group.__table__
_PROJECT, _SUBPROJECT = Project.__table__, Subproject.__table__
_INTENT_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.")
# A hold's rank among one party's holds: made here, then the nearest ancestor's.
_RANK = {"Subproject": 1, "Project": 2}


def _constant(b: Build, value: list[str]) -> Any:
    """A constant JSON list of intents, written into the statement (an admin's statement is
    its own: a plan builds one per kind of viewer)."""
    assert all(set(v) <= _INTENT_LETTERS for v in value)  # the engine's names: nothing to quote
    text = json.dumps(value, separators=(",", ":"))
    return literal_column(f"'{text}'::json") if b.json.postgres else func.json(literal_column(f"'{text}'"))


def _code_point(b: Build, value: Any) -> Any:
    return value.collate("C") if b.json.postgres else value


def _mapped(intent: Any, above: str, kind: str) -> Any:
    """An ancestor's stored intent as ``kind`` calls it (NULL-free: the caller keeps only the
    intents with a counterpart, ``_reaching_intents``)."""
    cut = len(PREFIX_BY_KIND[above]) + 1
    return literal(PREFIX_BY_KIND[kind], String).concat(func.substr(intent, cut))


def _reaching_intents(above: str, kind: str) -> list[Any]:
    """The intents of ``above`` that hold something on ``kind`` when they reach down."""
    suffixes = {i.partition(".")[2] for i in INTENTS_BY_KIND[kind]}
    found = [i for i in INTENTS_BY_KIND[above] if i.partition(".")[2] in suffixes]
    return [literal_column(f"'{i}'") for i in found]


def _holdings(kind: str, refs: dict[str, Any], parties: Any = None, intent: Any = None) -> Any:
    """The holds on one resource of ``kind`` as a subquery of (intent, party_id, source,
    reaches, rank): its own grants (``refs[kind]``: its id) and its ancestors' reaching ones
    (``refs``: their ids), of ``parties`` only when given, of the resource's ``intent`` only
    when given."""
    own = _PERMISSION.alias("own_grant")
    where = [own.c.resource_id == refs[kind]]
    if parties is not None:
        where.append(own.c.party_id.in_(parties))
    if intent is not None:
        where.append(own.c.intent == intent)
    parts = [
        select(
            own.c.intent.label("intent"),
            own.c.party_id.label("party_id"),
            null().label("source"),
            own.c.inherit.label("reaches"),
            literal(0).label("rank"),
        )
        .where(*where)
        .correlate_except(own)
    ]
    for above, _ in ANCESTORS[kind]:
        held = _PERMISSION.alias(f"reaching_{above.lower()}")
        mapped = _mapped(held.c.intent, above, kind)
        where = [held.c.resource_id == refs[above], held.c.inherit, held.c.intent.in_(_reaching_intents(above, kind))]
        if parties is not None:
            where.append(held.c.party_id.in_(parties))
        if intent is not None:
            where.append(mapped == intent)
        parts.append(
            select(
                mapped.label("intent"),
                held.c.party_id.label("party_id"),
                held.c.resource_id.label("source"),
                false().label("reaches"),
                literal(_RANK[above]).label("rank"),
            )
            .where(*where)
            .correlate_except(held)
        )
    return union_all(*parts).subquery() if len(parts) > 1 else parts[0].subquery()


def _refs(kind: str, source: Any) -> dict[str, Any]:
    """The resource's id and its ancestors' ids, columns of its row ``source``."""
    return {kind: source.c.id, **{above: source.c[name] for above, name in ANCESTORS[kind]}}


def strings(b: Build, rows: Any, value: Any, order: Any) -> Any:
    """The JSON list of the strings ``value`` of the subquery ``rows`` by ``order`` (SQLite:
    ``rows`` comes ordered), [] for none."""
    if b.json.postgres:
        aggregate = func.coalesce(func.json_agg(aggregate_order_by(value, order)), literal_column("'[]'::json"))
        return select(aggregate).select_from(rows).scalar_subquery()
    return b.json.nested(select(func.json_group_array(value)).select_from(rows).scalar_subquery())


def allowed_intents(kind: str) -> Form:
    """``allowedIntents`` of a kind."""
    every = sorted(INTENTS_BY_KIND[kind])

    def build(b: Build, source: Any, field: Any) -> Any:
        if b.actor.is_admin:
            return _constant(b, every)
        held = _holdings(kind, _refs(kind, source), parties=b.actor.party_ids)
        rows = (
            select(held.c.intent)
            .group_by(held.c.intent)
            .order_by(_code_point(b, held.c.intent))
            .correlate_except(held)
            .subquery("held_intents")
        )
        return strings(b, rows, rows.c.intent, _code_point(b, rows.c.intent))

    return Form(LEAF, build)


def permissions(kind: str) -> Form:
    """``permissions`` of a kind: a ``PermissionGrant`` per intent held on the resource (a row
    of ``grant_intents``: the intent and the resource's id and parent ids, which the grant's
    fields read its holds by)."""
    listing = f"{PREFIX_BY_KIND[kind]}.intent.listPermissions"

    def build(b: Build, source: Any, field: Any) -> Any:
        refs = _refs(kind, source)
        held = _holdings(kind, refs)
        intents = (
            select(
                held.c.intent,
                *(ref.label(f"ref_{name.lower()}") for name, ref in refs.items()),
            )
            .group_by(held.c.intent)
            .correlate_except(held)
            .subquery("grant_intents")
        )
        grants = b.rows(field.sub, intents, [], [_code_point(b, intents.c.intent)])
        if b.actor.is_admin:
            return grants
        listers = _holdings(kind, refs, parties=b.actor.party_ids, intent=literal_column(f"'{listing}'"))
        may_list = exists(select(listers.c.party_id).correlate_except(listers))
        return b.json.nested(case((may_list, grants)))

    return Form(OBJECT, build, "permission")


def _holds_of(source: Any) -> Any:
    """The holds of the grant row ``source``: its kind is the one whose refs the row carries."""
    names = {c.name for c in source.c}
    for kind in ("WorkflowItem", "Subproject", "Project"):
        wanted = {f"ref_{n.lower()}" for n in (kind, *(a for a, _ in ANCESTORS[kind]))}
        if wanted <= names:
            refs = {n: source.c[f"ref_{n.lower()}"] for n in (kind, *(a for a, _ in ANCESTORS[kind]))}
            return _holdings(kind, refs, intent=source.c.intent)
    raise AssertionError("a grant row names its resource")


def _existing(held: Any) -> Any:
    """``held``'s rows whose party still exists, with the party's own columns joined."""
    return held.outerjoin(_USER, _USER.c.id == held.c.party_id).outerjoin(_GROUP, _GROUP.c.id == held.c.party_id)


def _grant_parties(b: Build, source: Any, field: Any) -> Any:
    """Each party holding the grant's intent once, by party id, those gone left out."""
    return _parties(b, _holds_of(source), field)


def grantors(kind: str) -> Form:
    """``grantors`` of a kind: the parties holding its ``intent.grantPermission``, as
    ``PermissionGrant.parties`` lists them."""
    intent = literal_column(f"'{PREFIX_BY_KIND[kind]}.intent.grantPermission'")

    def build(b: Build, source: Any, field: Any) -> Any:
        return _parties(b, _holdings(kind, _refs(kind, source), intent=intent), field)

    return Form(PARTIES, build, "party")


def _parties(b: Build, held: Any, field: Any) -> Any:
    """The parties of the holds ``held``, each once, by party id, those gone left out."""
    inner = (
        select(
            case(
                (_USER.c.id.is_not(None), b.object(field.sub["User"], _USER)),
                else_=b.object(field.sub["Group"], _GROUP),
            ).label("j"),
            _code_point(b, held.c.party_id).label("o0"),
        )
        .select_from(_existing(held))
        .where(or_(_USER.c.id.is_not(None), _GROUP.c.id.is_not(None)))
        .group_by(held.c.party_id, _USER.c.id, _GROUP.c.id)
        .order_by(_code_point(b, held.c.party_id))
        .correlate_except(held, _USER, _GROUP)
        .subquery("grant_parties")
    )
    return b.json.nested(select(b.json.array(inner.c.j, [inner.c.o0])).scalar_subquery())


def _grant_holders(b: Build, source: Any, field: Any) -> Any:
    """Each hold of the grant's intent: by party id, then made here before the nearest
    ancestor's; those of parties gone left out."""
    held = _holds_of(source)
    found = (
        select(held)
        .select_from(_existing(held))
        .where(or_(_USER.c.id.is_not(None), _GROUP.c.id.is_not(None)))
        .correlate_except(held, _USER, _GROUP)
        .subquery("grant_holders")
    )
    return b.rows(field.sub, found, [], [_code_point(b, found.c.party_id), found.c.rank])


def _holder_party(b: Build, source: Any, field: Any) -> Any:
    return b.json.nested(party(b, field.sub, source.c.party_id))


def _inherited(b: Build, source: Any, field: Any) -> Any:
    return b.json.boolean(source.c.source.is_not(None))


def _reaches(b: Build, source: Any, field: Any) -> Any:
    return b.json.boolean(source.c.reaches)


def _inherited_from(b: Build, source: Any, field: Any) -> Any:
    """The ancestor's id, when the viewer may see it (the loaders' rule, adapted to an alias)."""
    if b.actor.is_admin:
        return source.c.source
    seen = []
    for table, visible in ((_PROJECT, visibility.project_visible), (_SUBPROJECT, visibility.subproject_visible)):
        row = table.alias()
        condition = ClauseAdapter(row).traverse(visible(b.actor))
        seen.append(exists(select(row.c.id).where(row.c.id == source.c.source, condition).correlate_except(row)))
    return case((or_(*seen), source.c.source), else_=null())


FORMS: dict[str, dict[str, Form]] = {
    "PermissionGrant": {
        "intent": column("intent"),
        "parties": Form(PARTIES, _grant_parties, "party"),
        "holders": Form(OBJECT, _grant_holders, "holding"),
    },
    "PermissionHolder": {
        "party": Form(PARTIES, _holder_party, "party"),
        "inherited": Form(LEAF, _inherited),
        "reachesDown": Form(LEAF, _reaches),
        "inheritedFrom": Form(LEAF, _inherited_from),
    },
}
