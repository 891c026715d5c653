"""SQL conditions for "the viewer may see this row" . The rules themselves are
``engine.visibility``'s, one per kind of row; the read layer takes them from here."""

import json

from sqlalchemy import ColumnElement, String, cast, func

from engine.visibility import (
    entry_readable,
    grant_entries_readable,
    item_log_readable,
    item_visible,
    notification_readable,
    project_visible,
    subproject_visible,
)

__all__ = [
    "entry_readable",
    "grant_entries_readable",
    "has_tag",
    "item_log_readable",
    "item_visible",
    "name_contains",
    "notification_readable",
    "project_visible",
    "subproject_visible",
]


def has_tag(column: ColumnElement[object], tag: str) -> ColumnElement[bool]:
    """Tags are a JSON list of strings: match the quoted element in its text form, so the tag is
    written as JSON writes it (a backslash or a quote escaped) before it is escaped for LIKE."""
    as_json = json.dumps(tag)[1:-1]  # as the JSON column stores it: non-ASCII as \\u escapes
    escaped = as_json.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return cast(column, String).like(f'%"{escaped}"%', escape="\\")


def name_contains(column: ColumnElement[str], text: str) -> ColumnElement[bool]:
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return func.lower(column).like(f"%{escaped}%", escape="\\")
