"""SQL conditions for "the viewer may see this row" . The rules themselves are
``engine.visibility``'s, one per kind of row; the read layer takes them from here."""

from sqlalchemy import ColumnElement, String, cast, func

from engine.visibility import (
    entry_readable,
    grant_entries_readable,
    item_visible,
    notification_readable,
    project_visible,
    subproject_visible,
)

__all__ = [
    "entry_readable",
    "grant_entries_readable",
    "has_tag",
    "item_visible",
    "name_contains",
    "notification_readable",
    "project_visible",
    "subproject_visible",
]


def has_tag(column: ColumnElement[object], tag: str) -> ColumnElement[bool]:
    """Tags are a JSON list of strings: match the quoted element in its text form."""
    escaped = tag.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_").replace('"', '\\\\"')
    return cast(column, String).like(f'%"{escaped}"%', escape="\\")


def name_contains(column: ColumnElement[str], text: str) -> ColumnElement[bool]:
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return func.lower(column).like(f"%{escaped}%", escape="\\")
