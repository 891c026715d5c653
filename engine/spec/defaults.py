"""A workflow spec's defaults, written once: what a key means when the spec leaves it out (or
holds null there).

Both read roads answer from them. The resolvers read the parsed model, whose parser
(engine/spec/specs.py, action_specs.py) takes each default from here (``names``, ``VALUES``);
normalization drops a value equal to its default (``VALUES``), so a stored spec leaves them
out; and the compiled reads, which read the stored spec in SQL (resolvers/compiled/workflows.py,
actions.py, fields.py), write each default as the SQL of the same rule (``name_sql``,
``value_sql``). tests/test_layers.py fails when a module of resolvers/ or schema/ names a
defaulted key itself.

- A pretty name (a workflow's, role's, state's, action's, a resolution's) is the short name
  (a resolution's code) when not given; an action's past tense is its pretty name (``NAMED``).
- ``trigger`` is user, a flag (``terminal``, ``always_enabled``, ``attach_documents``) false, and
  ``timeout_seconds``, ``assigned_role``, ``new_state`` and ``on_fire`` none (``VALUES``).
"""

import re
from collections.abc import Callable
from typing import Any

from sqlalchemy import false, func, literal_column, null, true

__all__ = ["NAMED", "VALUES", "name_of", "name_sql", "names", "value_sql"]

# Each name a spec may leave out, in an order where a name comes after the one it falls back to,
# and what it falls back to: another name (as resolved), or None for the short name.
NAMED: dict[str, str | None] = {
    "pretty_name": None,
    "pretty_past_tense": "pretty_name",
}

# Each key whose absence means a value (normalization drops a key given its default).
VALUES: dict[str, Any] = {
    "trigger": "user",
    "always_enabled": False,
    "attach_documents": False,
    "terminal": False,
    "timeout_seconds": None,
    "assigned_role": None,
    "new_state": None,
    "on_fire": None,
}

_WORD = re.compile(r"[a-z_]+")


def names(
    given: Callable[[str, str], str], short_name: str, keys: tuple[str, ...] = ("pretty_name",)
) -> dict[str, str]:
    """The names ``keys`` of one spec object: ``given(key, default)`` is the parser's reading
    of the key (its checks included), ``default`` what it is when the spec leaves it out."""
    resolved: dict[str, str] = {}
    for key, fallback in NAMED.items():
        if key in keys:
            resolved[key] = given(key, short_name if fallback is None else resolved[fallback])
    return resolved


def name_of(found: Any, key: str, short_name: str) -> str:
    """The name ``key`` of an object of a parsed spec, ``found`` (None when the spec has none by
    that short name, as a log entry's action its workflow's version no longer has): then what
    a spec that left the name out would say."""
    if found is not None:
        return getattr(found, key)  # type: ignore[no-any-return]
    return names(lambda _, default: default, short_name, tuple(NAMED))[key]


def name_sql(key: str, text_of: Callable[[str], Any], short_name: Any) -> Any:
    """``names`` in SQL: ``text_of(key)`` is the SQL text of a key of the object (NULL when the
    spec leaves it out, or has no such object), ``short_name`` the SQL of its short name."""
    chain = []
    at: str | None = key
    while at is not None:
        chain.append(text_of(at))
        at = NAMED[at]
    return func.coalesce(*chain, short_name)


def value_sql(key: str, read: Callable[[str], Any]) -> Any:
    """The SQL of ``key``'s value: ``read(key)``, the SQL reading of the key (NULL when the spec
    leaves it out), else its default, written as a literal (a constant of ``VALUES``, never a
    client's)."""
    return func.coalesce(read(key), _constant(VALUES[key]))


def _constant(value: Any) -> Any:
    if value is None:
        return null()
    if isinstance(value, bool):
        return true() if value else false()
    if isinstance(value, str) and _WORD.fullmatch(value):
        return literal_column(f"'{value}'")
    raise ValueError(f"no SQL literal for the default {value!r}")
