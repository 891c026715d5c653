"""The SQL form of a case's log (``Case.log``): a page of the item's entries the viewer may read.

``resolvers.resources.history`` reads the page through the ``history_by_resource`` loader:
the entries of the item, oldest first (``seq``, which is also the cursor, as a decimal
string), ``first`` + 1 past the cursor, each one the viewer may read. The loader picks one of
two conditions by whether the viewer holds ``workflowItem.viewHistory`` on the item itself
(``grant_entries_readable``) or not (``entry_readable``); on the entries of one item the two
admit the same rows (viewHistory on the item is one of ``entry_readable``'s ways in, and both
ask listPermissions for grant entries), so the compiled page uses ``entry_readable`` alone.
"""

from typing import Any

from sqlalchemy import BigInteger, String, cast, func, select

from models import Activity
from resolvers import visibility
from resolvers.compiled.build import Build, Page
from resolvers.pagination import check_first, parse_seq_cursor

__all__ = ["case_log"]

_ACTIVITY = Activity.__table__


def case_log(b: Build, source: Any, field: Any) -> Any:
    """The log connection of the case row ``source`` (its item is ``object_id``)."""
    first, _ = b.arg(field, "first", check_first)
    limit, _ = b.arg(field, "first", lambda value: check_first(value) + 1)
    after, given = b.arg(field, "after", parse_seq_cursor, BigInteger())
    entry = _ACTIVITY
    where = [entry.c.workflow_item_id == source.c.object_id, visibility.entry_readable(b.actor)]
    cursor = cast(entry.c.seq, String)
    page = (
        select(
            b.edge(field.sub, entry, cursor).label("j"),
            cursor.label("c"),
            func.row_number().over(order_by=entry.c.seq).label("rn"),
        )
        .select_from(entry)
        .where(*where, *([entry.c.seq > after] if given is not None else []))
        .order_by(entry.c.seq)
        .limit(limit)
        .correlate_except(entry)
        .subquery("log_page")
    )
    total = None
    if b.counted(field.sub):
        total = select(func.count()).select_from(entry).where(*where).correlate_except(entry).scalar_subquery()
    return b.json.nested(b.connection(field.sub, Page(page, first, total)).correlate_except(page).scalar_subquery())
