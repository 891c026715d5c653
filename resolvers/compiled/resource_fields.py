"""The SQL forms of what projects, subprojects and items carry besides their core columns:
tags and additional data, the viewer's intents and the grants, dates, a subproject's item
ordering, projected budgets and an item's documents (joined into ``forms.FORMS``).

Each answers what its resolver answers (``schema/project.py``, ``schema/item.py``):

- ``tags``, ``additionalData``: the stored JSON text, which both databases keep as written
  (key order, number forms; PostgreSQL's column is ``json``, not ``jsonb``).
- ``allowedIntents``, ``permissions``: ``resolvers/compiled/grants.py``.
- ``dueDate``, ``billingDate``: GraphQL's Date (``YYYY-MM-DD``: resolvers/timestamps.py).
- ``workflowItemOrdering``: the ordering's ids of the items the viewer may view, in order.
- ``projectedBudgets``: by organization, then currency. ``documents``: by id, removed ones
  included; a document's ``url`` and ``link`` are signed per request and have no form (a
  selection of either is resolved).
"""

from typing import Any

from sqlalchemy import func, select

from models import Document, ProjectedBudget, User, WorkflowItem
from resolvers import visibility
from resolvers.compiled import grants
from resolvers.compiled.build import Build
from resolvers.compiled.form import LEAF, OBJECT, Form, column, timestamp
from resolvers.timestamps import date_sql

__all__ = ["FORMS"]

_BUDGET, _DOCUMENT = ProjectedBudget.__table__, Document.__table__
_ITEM, _USER = WorkflowItem.__table__, User.__table__


def _stored_json(name: str) -> Form:
    """A JSON column as stored (tags, additional data)."""
    return Form(LEAF, lambda b, source, field: b.json.nested(source.c[name]))


def _date(name: str) -> Form:
    """A Date leaf, as GraphQL's Date writes it (resolvers/timestamps.py)."""

    def build(b: Build, source: Any, field: Any) -> Any:
        return date_sql(source.c[name], postgres=b.json.postgres)

    return Form(LEAF, build)


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
    return grants.strings(b, rows, rows.c.id, rows.c.place)


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


def _resource(kind: str) -> dict[str, Form]:
    return {
        "tags": _stored_json("tags"),
        "additionalData": _stored_json("additional_data"),
        "allowedIntents": grants.allowed_intents(kind),
        "permissions": grants.permissions(kind),
    }


_BUDGETS = Form(OBJECT, _budgets, "projected_budget")

FORMS: dict[str, dict[str, Form]] = {
    "Project": {**_resource("Project"), "projectedBudgets": _BUDGETS},
    "Subproject": {
        **_resource("Subproject"),
        "projectedBudgets": _BUDGETS,
        "workflowItemOrdering": Form(LEAF, _item_ordering),
        "grantors": grants.grantors("Subproject"),
    },
    "WorkflowItem": {
        **_resource("WorkflowItem"),
        "dueDate": _date("due_date"),
        "billingDate": _date("billing_date"),
        "documents": Form(OBJECT, _documents, "document"),
    },
    **grants.FORMS,
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
