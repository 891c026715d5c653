"""Case fields declared in a workflow spec (``fields``), and what actions and states say about
them: an action's ``fields``, ``required_fields``, ``enabled_when``, ``routes`` and
``log_title``, a state's ``hidden_fields`` (docs/workflows.md, "Fields and rules").

Why at definition: a field an action names must exist, a bound must fit its type, a rule must
read fields that exist with the types it compares, and a title may only show what every reader
of the log may see; each is a diagnostic of the spec, in the shape every other check speaks
(engine/spec/diagnostics.py), so a definition reports them all at once.
"""

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

import re2

from engine.spec.rules import Rule, RuleError, compile_rule
from engine.spec.spec_checker import MAX_NAMES, MAX_PRETTY, SpecChecker, kind

__all__ = [
    "FIELD_KEYS",
    "FIELD_TYPES",
    "MAX_FIELDS",
    "FieldSpec",
    "Hiding",
    "Route",
    "action_fields",
    "field_specs",
    "hiding",
    "title_placeholders",
]

FIELD_TYPES = ("string", "text", "integer", "number", "money", "boolean", "date", "datetime", "enum", "user")
FIELD_KEYS = {"type", "label", "help", "required", "max_length", "pattern", "min", "max", "choices"}
MAX_FIELDS = 100
MAX_STRING = 1000  # a string field's default and largest max_length
MAX_TEXT = 20000  # a text field's
MAX_PATTERN = 200
MAX_HELP = 1000
MAX_ROUTES = 20
MAX_TITLE = 300
MAX_NUMBER = 10**15  # integers, numbers and amounts stay within what a double holds exactly
_FIELD_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
TITLE_NAMES = ("actor", "item", "action", "state", "resolution")


@dataclass(frozen=True, slots=True)
class FieldSpec:
    name: str
    type: str
    label: str
    help: str | None = None
    required: bool = False
    max_length: int | None = None
    pattern: str | None = None
    low: float | int | None = None  # min
    high: float | int | None = None  # max
    choices: tuple[tuple[str, str], ...] = ()  # (code, label) of an enum
    # ``pattern`` compiled with the spec (specs are cached per version): compiling it at each
    # value checked was a third to a half of what checking ten fields cost (bench W1r)
    matcher: Any = dataclasses.field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Route:
    """One of an action's routes: the state it leads to when ``when`` holds (None: always)."""

    to: str
    when: Rule | None = None


@dataclass(frozen=True, slots=True)
class Hiding:
    """A state's ``hidden_fields``: the names hidden, and the roles that see them anyway
    (admins always do)."""

    names: tuple[str, ...] = ()
    visible_to: tuple[str, ...] = ()


def field_specs(c: SpecChecker, value: Any) -> dict[str, FieldSpec]:
    """The workflow's ``fields``: name -> declaration, each checked."""
    found: dict[str, FieldSpec] = {}
    lowered: set[str] = set()
    for name, body in c.entries(value, ["fields"], "field", MAX_FIELDS).items():
        path = ["fields", name]
        if not _FIELD_NAME.fullmatch(name):
            c.fail(path, f"Field name {name!r} must start with a small letter, then small letters, digits or '_'.")
            continue
        if name.lower() in lowered:
            c.fail(path, f"Field {name!r} is named twice.")
            continue
        lowered.add(name.lower())
        body = c.mapping(body, path)
        c.unknown_keys(body, FIELD_KEYS, path)
        field_type = body.get("type")
        if field_type not in FIELD_TYPES:
            c.fail([*path, "type"], f"Field {name!r} has type {field_type!r}; one of {', '.join(FIELD_TYPES)}.")
            continue
        found[name] = _field(c, path, name, field_type, body)
    return found


def _field(c: SpecChecker, path: list[str], name: str, field_type: str, body: dict[str, Any]) -> FieldSpec:
    label = c.text(body.get("label"), [*path, "label"], name.replace("_", " ").capitalize(), max_len=MAX_PRETTY)
    help_text = c.text(body.get("help"), [*path, "help"], "", max_len=MAX_HELP) or None
    allowed = {"type", "label", "help", "required"}
    max_length = pattern = low = high = None
    choices: tuple[tuple[str, str], ...] = ()
    if field_type in ("string", "text"):
        allowed |= {"max_length", "pattern"} if field_type == "string" else {"max_length"}
        ceiling = MAX_STRING if field_type == "string" else MAX_TEXT
        max_length = c.whole(body.get("max_length"), [*path, "max_length"], low=1, high=ceiling) or ceiling
        pattern = _pattern(c, [*path, "pattern"], body.get("pattern"))
    elif field_type in ("integer", "number", "money"):
        allowed |= {"min", "max"}
        low = _bound(c, [*path, "min"], body.get("min"), field_type)
        high = _bound(c, [*path, "max"], body.get("max"), field_type)
        if low is not None and high is not None and high < low:
            c.fail([*path, "max"], f"Field {name!r} has max {high} below its min {low}.")
    elif field_type == "enum":
        allowed |= {"choices"}
        choices = tuple(
            (code, c.text(text, [*path, "choices", code], code))
            for code, text in c.entries(body.get("choices"), [*path, "choices"], "choice", MAX_NAMES).items()
        )
        if not choices:
            c.fail([*path, "choices"], f"Enum field {name!r} needs choices: {{code: label}}.")
    for key in body.keys() & (FIELD_KEYS - allowed):
        c.fail([*path, key], f"A {field_type} field takes no {key}.")
    return FieldSpec(
        name=name,
        type=field_type,
        label=label,
        help=help_text,
        required=c.flag(body.get("required"), [*path, "required"]),
        max_length=max_length,
        pattern=pattern,
        matcher=None if pattern is None else re2.compile(pattern),
        low=low,
        high=high,
        choices=choices,
    )


def _pattern(c: SpecChecker, path: list[str], value: Any) -> str | None:
    """A regular expression a string field's values must match whole; RE2's syntax, which runs in
    time linear in the value (no pattern can make a check slow)."""
    if value is None:
        return None
    if not isinstance(value, str) or not 0 < len(value) <= MAX_PATTERN:
        c.fail(path, f"{c.where(path)} must be a regular expression of 1 to {MAX_PATTERN} characters.")
        return None
    try:
        re2.compile(value)
    except re2.error:
        c.fail(path, f"{c.where(path)} is not a valid regular expression.")
        return None
    return value


def _bound(c: SpecChecker, path: list[str], value: Any, field_type: str) -> float | int | None:
    if value is None:
        return None
    whole = field_type == "integer"
    if isinstance(value, bool) or not isinstance(value, int if whole else int | float) or abs(value) > MAX_NUMBER:
        what = "a whole number" if whole else "a number"
        c.fail(path, f"{c.where(path)} must be {what} between -{MAX_NUMBER} and {MAX_NUMBER}, not {kind(value)}.")
        return None
    return value


def action_fields(
    c: SpecChecker,
    path: list[str],
    name: str,
    body: dict[str, Any],
    fields: dict[str, FieldSpec],
    scope_states: set[str],
) -> dict[str, Any]:
    """An action's ``fields``, ``required_fields``, ``enabled_when``, ``routes`` and
    ``log_title``, as ActionSpec's keyword arguments."""
    types = {field.name: field.type for field in fields.values()}
    editable = c.names(body.get("fields"), [*path, "fields"], "field name")
    required = c.names(body.get("required_fields"), [*path, "required_fields"], "field name")
    for key, names in (("fields", editable), ("required_fields", required)):
        if len(set(names)) != len(names):
            c.fail([*path, key], f"Action {name!r} names a field twice in {key}.")
        for field in names:
            if field not in fields:
                c.fail([*path, key], f"Action {name!r} names unknown field {field!r}.")
    trigger = body.get("trigger", "user")
    if editable and trigger != "user":
        c.fail([*path, "fields"], f"Only a USER action sets fields; {name!r} is {str(trigger).upper()}.")
    enabled_when = _rule(c, [*path, "enabled_when"], body.get("enabled_when"), types, with_actor=False)
    if enabled_when is not None and trigger == "init":
        c.fail([*path, "enabled_when"], f"INIT action {name!r} is never enabled; it has no enabled_when.")
    routes = _routes(c, [*path, "routes"], name, body, types, scope_states)
    title = _title(c, [*path, "log_title"], body.get("log_title"), fields)
    return {
        "fields": editable,
        "required_fields": required,
        "enabled_when": enabled_when,
        "routes": routes,
        "log_title": title,
    }


def _rule(
    c: SpecChecker, path: list[str], value: Any, types: dict[str, str], *, with_actor: bool = True
) -> Rule | None:
    if value is None:
        return None
    try:
        return compile_rule(value, types, with_actor=with_actor)
    except RuleError as error:
        c.fail(path, f"{c.where(path)}: {error}", code="INVALID_CONDITION")
        return None


def _routes(
    c: SpecChecker,
    path: list[str],
    name: str,
    body: dict[str, Any],
    types: dict[str, str],
    scope_states: set[str],
) -> tuple[Route, ...]:
    """``[{when, to}, ..., {to}]``: the first whose condition holds decides the new state; the
    last has no ``when`` and is taken when none holds."""
    value = body.get("routes")
    if value is None:
        return ()
    if not isinstance(value, list) or not 0 < len(value) <= MAX_ROUTES:
        c.fail(path, f"{c.where(path)} must be a list of 1 to {MAX_ROUTES} routes, not {kind(value)}.")
        return ()
    if body.get("new_state") is not None or body.get("outputs"):
        c.fail(path, f"Action {name!r} has routes, which decide its new state; drop new_state and outputs.")
    routes: list[Route] = []
    for n, route in enumerate(value):
        rpath = [*path, str(n)]
        route = c.mapping(route, rpath)
        c.unknown_keys(route, {"when", "to"}, rpath)
        target = c.name(route.get("to"), [*rpath, "to"], "a state name")
        if target is None or target not in scope_states:
            c.fail([*rpath, "to"], f"Route {n + 1} of {name!r} names unknown state {target!r}.")
            continue
        last = n == len(value) - 1
        if last and "when" in route:
            c.fail(
                [*rpath, "when"],
                f"The routes of {name!r} need a default: the last route has no when.",
                code="INVALID_CONDITION",
            )
        if not last and "when" not in route:
            c.fail([*rpath, "when"], f"Route {n + 1} of {name!r} needs a when; only the last is the default.")
        routes.append(Route(to=target, when=None if last else _rule(c, [*rpath, "when"], route.get("when"), types)))
    return tuple(routes)


def title_placeholders(template: str) -> list[str]:
    return _PLACEHOLDER.findall(template)


def _title(c: SpecChecker, path: list[str], value: Any, fields: dict[str, FieldSpec]) -> str | None:
    """``log_title``: a sentence with placeholders ({actor}, {item}, {action}, {state},
    {resolution}, {fields.NAME}), each known at definition."""
    if value is None:
        return None
    title = c.text(value, path, "", max_len=MAX_TITLE)
    for placeholder in title_placeholders(title):
        if placeholder in TITLE_NAMES:
            continue
        if placeholder.startswith("fields.") and placeholder[7:] in fields:
            continue
        c.fail(
            path,
            f"{c.where(path)} has unknown placeholder {{{placeholder}}}; "
            f"known: {', '.join(TITLE_NAMES)} and fields.NAME of a declared field.",
        )
    return title or None


def hiding(c: SpecChecker, path: list[str], value: Any) -> Hiding:
    """A state's ``hidden_fields``: a list of names (hidden from all but admins), or
    ``{names: [...], visible_to: [roles]}``."""
    if isinstance(value, dict):
        c.unknown_keys(value, {"names", "visible_to"}, path)
        return Hiding(
            names=c.names(value.get("names"), [*path, "names"], "field name"),
            visible_to=c.names(value.get("visible_to"), [*path, "visible_to"], "role name"),
        )
    return Hiding(names=c.names(value, path, "field name"))
