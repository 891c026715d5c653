"""SQL conditions for "the viewer may see this row" . The rules themselves are
``engine.people.visibility``'s, one per kind of row; the read layer takes them from here."""

import json
from typing import Any

from sqlalchemy import ColumnElement, String, cast, func

from engine.people.visibility import (
    entry_readable,
    grant_entries_readable,
    item_log_readable,
    item_visible,
    items_reached,
    notification_readable,
    project_visible,
    subproject_visible,
)

__all__ = [
    "contains_pattern",
    "entry_readable",
    "grant_entries_readable",
    "has_tag",
    "item_log_readable",
    "item_visible",
    "items_reached",
    "name_contains",
    "name_like",
    "notification_readable",
    "project_visible",
    "subproject_visible",
    "tag_pattern",
    "tags_like",
]


def has_tag(column: ColumnElement[object], tag: str) -> ColumnElement[bool]:
    """Tags are a JSON list of strings: match the quoted element in its text form."""
    return tags_like(column, tag_pattern(tag))


def tags_like(column: ColumnElement[object], pattern: Any) -> ColumnElement[bool]:
    """``has_tag`` over a pattern (a value or a bound parameter: a compiled read's)."""
    return cast(column, String).like(pattern, escape="\\")


def tag_pattern(tag: str) -> str:
    """The LIKE pattern of a tag: written as JSON writes it (a backslash or a quote escaped),
    then escaped for LIKE."""
    as_json = json.dumps(tag)[1:-1]  # as the JSON column stores it: non-ASCII as \\u escapes
    escaped = as_json.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f'%"{escaped}"%'


def name_contains(column: ColumnElement[str], text: str) -> ColumnElement[bool]:
    return name_like(column, contains_pattern(text))


def name_like(column: ColumnElement[str], pattern: Any) -> ColumnElement[bool]:
    """``name_contains`` over a pattern (a value or a bound parameter: a compiled read's)."""
    return func.lower(column).like(pattern, escape="\\")


def contains_pattern(text: str) -> str:
    """The LIKE pattern of "contains ``text``", case aside."""
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
