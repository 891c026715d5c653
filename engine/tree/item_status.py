"""An item's status, written once: OPEN while its case runs or waits (ACTIVE or SUSPENDED, or
while it has none), CLOSED once the case completed or was canceled.

Here, in the tree wing, below the cases, so that what refuses a change to a closed item or
subproject (``resources``, ``ordering``, ``engine.cases.items``, ``engine.documents.records``)
reads it too. Every road reads it from here: ``WorkflowItem.status`` on the resolvers (``item_status``), its
compiled form (``item_status_sql``), and the ``status`` filter of a page of items on both roads
(``case_statuses``). tests/test_layers.py fails when one of them restates it."""

from typing import Any

from sqlalchemy import case

OPEN_CASE_STATUSES = ("ACTIVE", "SUSPENDED")
CLOSED_CASE_STATUSES = ("COMPLETED", "CANCELED")


def item_status(case_status: str | None) -> str:
    """OPEN or CLOSED, from the status of the item's case (None: it has none)."""
    return "CLOSED" if case_status in CLOSED_CASE_STATUSES else "OPEN"


def item_status_sql(case_status: Any) -> Any:
    """``item_status`` as SQL over a case status (a column or scalar subquery; NULL: OPEN)."""
    return case((case_status.in_(CLOSED_CASE_STATUSES), "CLOSED"), else_="OPEN")


def case_statuses(status: str) -> tuple[str, ...]:
    """The statuses of the cases whose items have ``status`` (OPEN or CLOSED)."""
    return OPEN_CASE_STATUSES if status == "OPEN" else CLOSED_CASE_STATUSES


__all__ = ["CLOSED_CASE_STATUSES", "OPEN_CASE_STATUSES", "case_statuses", "item_status", "item_status_sql"]
