"""The SQL form of a case's log (``Case.log``) and of a resource's ``history``: a page of the
resource's entries the viewer may read.

``resolvers.resources.history`` reads the page through the ``history_by_resource`` loader:
the entries of the item, oldest first (``seq``, which is also the cursor, as a decimal
string), ``first`` + 1 past the cursor, each one the viewer may read. The loader picks one of
two conditions by whether the viewer holds ``workflowItem.viewHistory`` on the item itself
(``grant_entries_readable``) or not (``entry_readable``); on the entries of one item the two
admit the same rows (viewHistory on the item is one of ``entry_readable``'s ways in, and both
ask listPermissions for grant entries), so the compiled page uses ``entry_readable`` alone.
The same holds for a project's or subproject's history (viewHistory on the resource itself is
one of the ways in for each of its entries).
"""

from typing import Any

from sqlalchemy import BigInteger, String, case, cast, func, literal, select

from models import Activity, ArchivedChain
from resolvers import visibility
from resolvers.compiled.build import Build, Page
from resolvers.filters import HistoryFilterKey
from resolvers.pagination import check_first, parse_seq_cursor, past_id, seq_cursor_sql
from resolvers.timestamps import day_words_sql

__all__ = ["case_log", "history"]

_ACTIVITY = Activity.__table__
_ARCHIVED = ArchivedChain.__table__


def case_log(b: Build, source: Any, field: Any) -> Any:
    """The log connection of the case row ``source`` (its item is ``object_id``)."""
    return _page(
        b, field, [_ACTIVITY.c.workflow_item_id == source.c.object_id], ("workflow_item_id", source.c.object_id)
    )


def history(column: str) -> Any:
    """The form of a resource's ``history``: its entries are those whose ``column`` is its id."""

    def build(b: Build, source: Any, field: Any) -> Any:
        return _page(b, field, [_ACTIVITY.c[column] == source.c.id, *_filter(b, field)], (column, source.c.id))

    return build


def _filter_key(value: Any) -> HistoryFilterKey:
    """A ``HistoryFilter`` argument as the resolvers key it (its checks included)."""
    if value is None:
        return HistoryFilterKey()
    if isinstance(value, dict):
        return HistoryFilterKey(value.get("kind"), value.get("actor"), value.get("from"), value.get("to"))
    return HistoryFilterKey(value.kind, value.actor, value.from_, value.to)


def _filter(b: Build, field: Any) -> list[Any]:
    """``resolvers.filters.apply_history_filter`` with the filter's parts as parameters. Only the
    parts given are conditions (an empty kind or actor is not given either): the plan is cached
    per shape of the variables, which says which parts are given, and a condition written as
    ``(:part IS NULL OR column = :part)`` would keep PostgreSQL's generic plan (a prepared
    statement's from its sixth run) from the index on the part (``ix_activity_project_actor_seq``:
    a rare actor's page would walk the project's whole history)."""
    entry = _ACTIVITY
    at = entry.c.at.type
    parts = (
        (lambda value: _filter_key(value).kind or None, String(), lambda p: entry.c.kind == p),
        (lambda value: _filter_key(value).actor_id or None, String(), lambda p: entry.c.actor_id == p),
        (lambda value: _filter_key(value).since, at, lambda p: entry.c.at >= p),
        (lambda value: _filter_key(value).until, at, lambda p: entry.c.at <= p),
    )
    conditions = []
    for transform, type_, condition in parts:
        part, now = b.arg(field, "filter", transform, type_)
        if now is not None:
            conditions.append(condition(part))
    return conditions


def _page(b: Build, field: Any, within: list[Any], resource: tuple[str, Any]) -> Any:
    """The connection of the entries ``within`` selects that the viewer may read, by ``seq``;
    ``resource``: the history's column and the resource's id (for ``archived``)."""
    first, _ = b.arg(field, "first", check_first)
    limit, _ = b.arg(field, "first", lambda value: check_first(value) + 1)
    after, given = b.arg(field, "after", parse_seq_cursor, BigInteger())
    entry = _ACTIVITY
    where = [*within, visibility.entry_readable(b.actor)]
    cursor = seq_cursor_sql(entry.c.seq)
    page = (
        select(
            b.edge(field.sub, entry, cursor).label("j"),
            cursor.label("c"),
            func.row_number().over(order_by=entry.c.seq).label("rn"),
        )
        .select_from(entry)
        .where(*where, *([past_id(entry.c.seq, after)] if given is not None else []))
        .order_by(entry.c.seq)
        .limit(limit)
        .correlate_except(entry)
        .subquery("log_page")
    )
    total = None
    if b.counted(field.sub):
        total = select(func.count()).select_from(entry).where(*where).correlate_except(entry).scalar_subquery()
    archived = _archived(b, resource, after, given) if b.asked(field.sub, "archived") else None
    connection = b.connection(field.sub, Page(page, first, total, archived))
    return b.json.nested(connection.correlate_except(page).scalar_subquery())


def _archived(b: Build, resource: tuple[str, Any], after: Any, given: Any) -> Any:
    """``resolvers.resources.archived`` in SQL: the sentence when the resource's chains had
    entries archived and the page starts where the entries kept begin."""
    column, resource_id = resource
    end = _ARCHIVED.alias("archived_end")
    last = func.max(end.c.seq)
    # the archive ends past the cursor: the page starts in (or at the end of) the archived part
    reaches = last.is_not(None) if given is None else past_id(last, after)
    sentence = (
        literal("Entries before seq ", String())
        + cast(last + 1, String())
        + ", the newest written "
        + day_words_sql(func.max(end.c.at), postgres=b.json.postgres)
        + ", are archived: they left the database on "
        + day_words_sql(func.max(end.c.archived_at), postgres=b.json.postgres)
        + " for the archive an administrator keeps (caseway archive-history)."
    )
    return select(case((reaches, sentence))).where(end.c[column] == resource_id).correlate_except(end).scalar_subquery()
