"""The SQL forms of what projects, subprojects and items carry besides their core columns:
tags and additional data, the viewer's intents and the grants, dates, a subproject's item
ordering, projected budgets and an item's documents (joined into ``forms.FORMS``).

Each answers what its resolver answers (``schema/project.py``, ``schema/item.py``):

- ``tags``, ``additionalData``: the stored JSON text, which both databases keep as written
  (key order, number forms; PostgreSQL's column is ``json``, not ``jsonb``).
- ``allowedIntents``: ``sorted`` of the viewer's intents on the resource (the
  ``intents_by_resource`` loader): every intent of the kind for an admin, else those granted
  to one of the viewer's parties, each once, in code-point order (``COLLATE "C"`` on
  PostgreSQL, whose default collation may sort otherwise; SQLite compares bytes).
- ``permissions``: null unless the viewer holds the kind's ``intent.listPermissions``, else
  every intent granted on the resource, each with its parties: the ``grants_by_resource``
  loader's ``ORDER BY intent, party_id`` (the database's own collation, as the loader's), a
  party that no longer exists left out (an intent whose parties are all gone stays, with none).
- ``dueDate``, ``billingDate``: GraphQL's Date (``date.isoformat()``, ``YYYY-MM-DD``).
- ``workflowItemOrdering``: the ordering's ids of the items the viewer may view, in order.
- ``projectedBudgets``: by organization, then currency. ``documents``: by id, removed ones
  included; a document's ``url`` and ``link`` are signed per request and have no form (a
  selection of either is resolved).
"""

import json
from typing import Any

from sqlalchemy import case, exists, func, literal_column, or_, select
from sqlalchemy.dialects.postgresql import aggregate_order_by

from engine.people.permissions import PROJECT_INTENTS, SUBPROJECT_INTENTS, WORKFLOW_ITEM_INTENTS
from models import Document, Group, Permission, ProjectedBudget, User, WorkflowItem
from resolvers import visibility
from resolvers.compiled.build import Build
from resolvers.compiled.form import LEAF, OBJECT, PARTIES, Form, column, timestamp

__all__ = ["FORMS"]

_PERMISSION, _BUDGET, _DOCUMENT = Permission.__table__, ProjectedBudget.__table__, Document.__table__
_ITEM, _USER, _GROUP = WorkflowItem.__table__, User.__table__, Group.__table__
_INTENT_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.")


def _stored_json(name: str) -> Form:
    """A JSON column as stored (tags, additional data)."""
    return Form(LEAF, lambda b, source, field: b.json.nested(source.c[name]))


def _date(name: str) -> Form:
    """A Date leaf: PostgreSQL formats its ``date``; SQLite stores the ISO text already."""

    def build(b: Build, source: Any, field: Any) -> Any:
        value = source.c[name]
        return func.to_char(value, "YYYY-MM-DD") if b.json.postgres else value

    return Form(LEAF, build)


def _strings(b: Build, rows: Any, value: Any, order: Any) -> Any:
    """The JSON list of the strings ``value`` of the subquery ``rows`` by ``order`` (SQLite:
    ``rows`` comes ordered), [] for none. ``JsonSql.array`` takes JSON values; an id or an
    intent is a bare string."""
    if b.json.postgres:
        aggregate = func.coalesce(func.json_agg(aggregate_order_by(value, order)), literal_column("'[]'::json"))
        return select(aggregate).select_from(rows).scalar_subquery()
    return b.json.nested(select(func.json_group_array(value)).select_from(rows).scalar_subquery())


def _constant(b: Build, value: list[str]) -> Any:
    """A constant JSON list of intents, written into the statement (an admin's statement is
    its own: a plan builds one per kind of viewer)."""
    assert all(set(v) <= _INTENT_LETTERS for v in value)  # the engine's names: nothing to quote
    text = json.dumps(value, separators=(",", ":"))
    return literal_column(f"'{text}'::json") if b.json.postgres else func.json(literal_column(f"'{text}'"))


def _allowed_intents(intents: tuple[str, ...]) -> Form:
    """``allowedIntents`` of a kind whose intents are ``intents``."""
    every = sorted(intents)

    def build(b: Build, source: Any, field: Any) -> Any:
        if b.actor.is_admin:
            return _constant(b, every)
        held = _PERMISSION.alias("held")
        rows = (
            select(held.c.intent)
            .where(held.c.resource_id == source.c.id, held.c.party_id.in_(b.actor.party_ids))
            .group_by(held.c.intent)
            .order_by(held.c.intent)
            .correlate_except(held)
            .subquery("held_intents")
        )
        # code-point order on PostgreSQL whatever the database's collation (SQLite's BINARY is)
        return _strings(b, rows, rows.c.intent, rows.c.intent.collate("C") if b.json.postgres else rows.c.intent)

    return Form(LEAF, build)


def _permissions(prefix: str) -> Form:
    """``permissions`` of a kind whose intents start with ``prefix``: a ``PermissionGrant`` per
    intent granted on the resource (a row of ``grant_intents``: the resource and the intent)."""
    listing = f"{prefix}.intent.listPermissions"

    def build(b: Build, source: Any, field: Any) -> Any:
        granted = _PERMISSION.alias("granted")
        intents = (
            select(granted.c.resource_id, granted.c.intent)
            .where(granted.c.resource_id == source.c.id)
            .group_by(granted.c.resource_id, granted.c.intent)
            .correlate_except(granted)
            .subquery("grant_intents")
        )
        grants = b.rows(field.sub, intents, [], [intents.c.intent])
        if b.actor.is_admin:
            return grants
        lister = _PERMISSION.alias("lister")
        may_list = exists().where(
            lister.c.resource_id == source.c.id,
            lister.c.intent == listing,
            lister.c.party_id.in_(b.actor.party_ids),
        )
        return b.json.nested(case((may_list.correlate_except(lister), grants)))

    return Form(OBJECT, build, "permission")


def _grant_parties(b: Build, source: Any, field: Any) -> Any:
    """The parties holding the intent of a ``grant_intents`` row (``source``), by party id,
    those that no longer exist left out (``PermissionGrant.parties`` loads each by id and drops
    the missing)."""
    held = _PERMISSION.alias("holder")
    inner = (
        select(
            case(
                (_USER.c.id.is_not(None), b.object(field.sub["User"], _USER)),
                else_=b.object(field.sub["Group"], _GROUP),
            ).label("j"),
            held.c.party_id.label("o0"),
        )
        .select_from(
            held.outerjoin(_USER, _USER.c.id == held.c.party_id).outerjoin(_GROUP, _GROUP.c.id == held.c.party_id)
        )
        .where(
            held.c.resource_id == source.c.resource_id,
            held.c.intent == source.c.intent,
            or_(_USER.c.id.is_not(None), _GROUP.c.id.is_not(None)),
        )
        .order_by(held.c.party_id)
        .correlate_except(held, _USER, _GROUP)
        .subquery("holders")
    )
    return b.json.nested(select(b.json.array(inner.c.j, [inner.c.o0])).scalar_subquery())


def _item_ordering(b: Build, source: Any, field: Any) -> Any:
    """The ids of the subproject's ordering (``source``: its row) whose items the viewer may
    view, in the ordering's order."""
    ordering = source.c.workflow_item_ordering
    if b.json.postgres:
        listed = func.json_array_elements_text(ordering).table_valued("value", with_ordinality="place")
        listed = listed.render_derived("listed")
        place, listed_id = listed.c.place, listed.c.value
    else:
        listed = func.json_each(ordering).table_valued("key", "value").alias("listed")
        place, listed_id = listed.c.key, listed.c.value
    rows = (
        select(_ITEM.c.id, place.label("place"))
        .select_from(listed.join(_ITEM, _ITEM.c.id == listed_id))
        .where(visibility.item_visible(b.actor))
        .order_by(place)
        .correlate_except(_ITEM, listed)
        .subquery("ordered_items")
    )
    return _strings(b, rows, rows.c.id, rows.c.place)


def _budgets(b: Build, source: Any, field: Any) -> Any:
    where = [_BUDGET.c.resource_id == source.c.id]
    return b.rows(field.sub, _BUDGET, where, [_BUDGET.c.organization, _BUDGET.c.currency])


def _documents(b: Build, source: Any, field: Any) -> Any:
    return b.rows(field.sub, _DOCUMENT, [_DOCUMENT.c.workflow_item_id == source.c.id], [_DOCUMENT.c.id])


def _removed(b: Build, source: Any, field: Any) -> Any:
    return b.json.boolean(source.c.removed_at.is_not(None))


def _added_by(b: Build, source: Any, field: Any) -> Any:
    """The user who attached the document (null when unknown, or gone)."""
    return b.one(field.sub, _USER, "id", source.c.added_by)


def _resource(prefix: str, intents: tuple[str, ...]) -> dict[str, Form]:
    return {
        "tags": _stored_json("tags"),
        "additionalData": _stored_json("additional_data"),
        "allowedIntents": _allowed_intents(intents),
        "permissions": _permissions(prefix),
    }


_BUDGETS = Form(OBJECT, _budgets, "projected_budget")

FORMS: dict[str, dict[str, Form]] = {
    "Project": {**_resource("project", PROJECT_INTENTS), "projectedBudgets": _BUDGETS},
    "Subproject": {
        **_resource("subproject", SUBPROJECT_INTENTS),
        "projectedBudgets": _BUDGETS,
        "workflowItemOrdering": Form(LEAF, _item_ordering),
    },
    "WorkflowItem": {
        **_resource("workflowItem", WORKFLOW_ITEM_INTENTS),
        "dueDate": _date("due_date"),
        "billingDate": _date("billing_date"),
        "documents": Form(OBJECT, _documents, "document"),
    },
    "PermissionGrant": {"intent": column("intent"), "parties": Form(PARTIES, _grant_parties, "party")},
    "ProjectedBudget": {
        "organization": column("organization"),
        "currency": column("currency"),
        "value": column("value"),
    },
    "Document": {  # not url or link: signed per request, by their resolvers
        "id": column("id"),
        "fileName": column("file_name"),
        "sha256": column("sha256"),
        "size": column("size"),
        "contentType": column("content_type"),
        "addedAt": timestamp("added_at"),
        "removedAt": timestamp("removed_at"),
        "removed": Form(LEAF, _removed),
        "addedBy": Form(OBJECT, _added_by, "party"),
    },
}
