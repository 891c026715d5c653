"""What each setting allows, said once from its declaration in server/settings.py: in the
sentence that refuses a value at start (server/cli.py) and in the README's table of settings,
which is generated here and checked by tests/test_readme.py.

A new setting needs only its declaration: a default, a ``description`` and, for a number, its
bounds (``ge``/``gt`` and ``le``/``lt``); then ``python -m server.settings_table README.md``
rewrites the table.

    python -m server.settings_table [README.md]   # print the table, or rewrite it in the file
"""

import json
import sys
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic.fields import FieldInfo

from server.settings import Settings

BEGIN, END = "<!-- settings -->", "<!-- /settings -->"


def _number(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _base(annotation: Any) -> Any:
    """``int | None`` is ``int``: what a value must be when one is given."""
    if get_origin(annotation) in (Union, types.UnionType):
        given = [a for a in get_args(annotation) if a is not type(None)]
        return given[0] if len(given) == 1 else annotation
    return annotation


def bounds(field: FieldInfo) -> str | None:
    """A number's range in words ("1 to 65535", "more than 0, at most 2147483647"); None if it
    declares none."""
    low = high = None
    for rule in field.metadata:
        if isinstance(rule, annotated_types.Ge):
            low = _number(rule.ge)  # type: ignore[arg-type]
        elif isinstance(rule, annotated_types.Gt):
            low = f"more than {_number(rule.gt)}"  # type: ignore[arg-type]
        elif isinstance(rule, annotated_types.Le):
            high = _number(rule.le)  # type: ignore[arg-type]
        elif isinstance(rule, annotated_types.Lt):
            high = f"less than {_number(rule.lt)}"  # type: ignore[arg-type]
    if low is None and high is None:
        return None
    if low is not None and high is not None:
        return f"{low} to {high}" if not low.startswith("more") else f"{low}, at most {high}"
    return f"at least {low}" if high is None else f"at most {high}"


def is_number(field: FieldInfo) -> bool:
    return _base(field.annotation) in (int, float)


def allowed(field: FieldInfo) -> str:
    """What a value of the setting may be, for a person."""
    base = _base(field.annotation)
    if base is bool:
        return "`true` or `false`"
    if base in (int, float):
        kind = "a whole number" if base is int else "a number"
        return f"{kind}, {bounds(field) or 'any'}"
    if get_origin(base) is Literal:
        return " or ".join(f"`{choice}`" for choice in get_args(base))
    if base is Path:
        return "a path"
    if get_origin(base) is dict:
        return "a JSON object"
    if get_origin(base) is list:
        return "a JSON list"
    return "text"


def shown(value: Any) -> str:
    """A default as the README writes it."""
    if value is None or value == "":
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and value.is_integer():
        return f"`{int(value)}`"
    if isinstance(value, list | dict):
        return f"`{json.dumps(value)}`"
    return f"`{value}`"


def table() -> list[str]:
    """The README's table of every setting, between its markers."""
    lines = [BEGIN, "| variable | default | allowed | meaning |", "| --- | --- | --- | --- |"]
    for name, field in Settings.model_fields.items():
        lines.append(
            f"| `CASEWAY_{name.upper()}` | {shown(field.default)} | {allowed(field)} | {field.description or ''} |"
        )
    return [*lines, END]


def rewrite(path: Path) -> None:
    """Put the table into the file in place of the one between its markers."""
    text = path.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    path.write_text(text[:start] + "\n".join(table()) + text[end:])


if __name__ == "__main__":
    if len(sys.argv) > 1:
        rewrite(Path(sys.argv[1]))
    else:
        print("\n".join(table()))
