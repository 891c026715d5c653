"""The type checks and size limits of workflow specs (engine/spec/specs.py walks a spec with them).

A spec is client input: every value gets its type checked, with a message that names the key
and what it should be, and the whole spec is bounded so that no definition can make the engine
(or a diagram of it) work without limit. The limits below are documented in docs/workflows.md
("Validation errors").
"""

from collections.abc import Callable, Iterable
from typing import Any

from engine.spec.defaults import names
from engine.spec.diagnostics import Diagnostic, InvalidSpec, finding

MAX_ROLES = 50
MAX_STATES = 200  # in all scopes together
MAX_ACTIONS = 500  # in all scopes together, children included
# (action, state it is enabled in, output) triples: the edges of the workflow's diagram
MAX_TRANSITIONS = 5000
MAX_CHILD_DEPTH = 4  # levels of child workflows below the top level
MAX_NAME = 64  # characters of a short name (workflow, role, state, action, output, party id)
MAX_PRETTY = 200  # characters of a pretty name
MAX_DESCRIPTION = 2000
MAX_NAMES = 200  # names in one list (allowed_roles, enabled_states, static_parties, ...)
MAX_TIMEOUT = 365 * 24 * 3600  # timeout_seconds: at most a year
MAX_COUNT = 1000  # depends_on min and max
MAX_INSTANCES = 1000  # instances (or child workflows) one dynamic parent may create (engine.cases.children)
MAX_ERRORS = 50  # problems reported for one spec; the rest are not looked for


def kind(value: Any) -> str:
    """What a JSON value is, in words, for "must be X, not Y" messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def is_name(value: Any) -> bool:
    """A short name: 1 to MAX_NAME printable characters, no surrounding blanks."""
    return isinstance(value, str) and 0 < len(value) <= MAX_NAME and value.isprintable() and value.strip() == value


class SpecChecker:
    """Collects the problems of one spec (at most MAX_ERRORS), each an ERROR finding whose
    ``path`` leads to the offending key (engine.spec.diagnostics): code INVALID_SPEC, or the code
    of a whole-spec check where the problem is one (a child workflow missing, nesting without
    end, a gate that can never open)."""

    def __init__(
        self,
        known_callbacks: set[str],
        known_side_effects: set[str],
        *,
        known_on_fire: set[str] | None = None,
        known_enable_conditions: set[str] | None = None,
    ) -> None:
        self.findings: list[Diagnostic] = []
        self.known_callbacks = known_callbacks
        self.known_side_effects = known_side_effects
        self.known_on_fire = known_on_fire or set()
        self.known_enable_conditions = known_enable_conditions or set()
        # (kind, args) -> problems of that job declaration, None for no such kind (engine/jobs/outbox.py)
        self.check_job: Callable[[str, Any], list[str] | None] = lambda kind, args: None
        self.states = 0
        self.actions = 0
        self.fields: dict[str, Any] = {}  # the workflow's case fields (engine/spec/field_specs.py)

    @property
    def full(self) -> bool:
        return len(self.findings) >= MAX_ERRORS

    def fail(self, path: list[str], message: str, *, code: str = "INVALID_SPEC", hint: str | None = None) -> None:
        if not self.full:
            self.findings.append(finding(code, path, message, hint))

    def raise_if_failed(self) -> None:
        """Refuse the spec with every problem found (InvalidSpec: user errors and findings)."""
        if self.findings:
            raise InvalidSpec(self.findings)

    @staticmethod
    def where(path: list[str]) -> str:
        return ".".join(path) or "spec"

    def mapping(self, value: Any, path: list[str]) -> dict[str, Any]:
        """An object; null stands for an empty one."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(path, f"{self.where(path)} must be an object, not {kind(value)}.")
            return {}
        return value

    def entries(self, value: Any, path: list[str], what: str, limit: int) -> dict[str, Any]:
        """An object keyed by short names (roles, states, actions, outputs, dependencies), of at
        most ``limit`` entries; entries with an invalid name are reported and left out."""
        body = self.mapping(value, path)
        if len(body) > limit:
            self.fail(path, f"{self.where(path)} has {len(body)} {what}s; at most {limit}.")
            return {}
        good = {}
        for key, item in body.items():
            if is_name(key):
                good[key] = item
            else:
                self.fail(path, f"{self.where(path)} has a {what} name that is empty, too long or not printable.")
        return good

    def name(self, value: Any, path: list[str], what: str) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str):
            self.fail(path, f"{self.where(path)} must be {what} (a string), not {kind(value)}.")
            return None
        if not is_name(value):
            self.fail(path, f"{self.where(path)} must be {what} of 1 to {MAX_NAME} printable characters.")
            return None
        return value

    def names(self, value: Any, path: list[str], what: str = "name") -> tuple[str, ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            self.fail(path, f"{self.where(path)} must be a list of {what}s, not {kind(value)}.")
            return ()
        if len(value) > MAX_NAMES:
            self.fail(path, f"{self.where(path)} has {len(value)} items; at most {MAX_NAMES}.")
            return ()
        if not all(is_name(v) for v in value):
            self.fail(path, f"{self.where(path)} must be a list of {what}s (strings of 1 to {MAX_NAME} characters).")
            return ()
        return tuple(value)

    def text(self, value: Any, path: list[str], default: str, *, max_len: int = MAX_PRETTY) -> str:
        if value is None:
            return default
        if not isinstance(value, str) or not value.strip():
            self.fail(path, f"{self.where(path)} must be a non-empty string, not {kind(value)}.")
            return default
        if len(value) > max_len:
            self.fail(path, f"{self.where(path)} is longer than {max_len} characters.")
            return default
        if "\x00" in value or not _encodes(value):
            self.fail(path, f"{self.where(path)} contains a NUL character or a lone surrogate.")
            return default
        return value

    def flag(self, value: Any, path: list[str], default: bool = False) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            self.fail(path, f"{self.where(path)} must be true or false, not {kind(value)}.")
            return default
        return value

    def pretty(
        self, body: dict[str, Any], path: list[str], short_name: str, keys: tuple[str, ...] = ("pretty_name",)
    ) -> dict[str, str]:
        """The names ``keys`` of the spec object ``body`` at ``path``, each checked, with the
        spec's defaults (engine/spec/defaults.py: the short name, or another of its names)."""
        return names(lambda key, default: self.text(body.get(key), [*path, key], default), short_name, keys)

    def whole(self, value: Any, path: list[str], *, low: int, high: int, unit: str = "") -> int | None:
        """A whole number in [low, high], or None (not given, or refused)."""
        if value is None:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(path, f"{self.where(path)} must be a whole number{unit}, not {kind(value)}.")
            return None
        if not low <= value <= high:
            self.fail(path, f"{self.where(path)} must be a whole number{unit} between {low} and {high}.")
            return None
        return value

    def depends_on(self, value: Any, path: list[str]) -> tuple[tuple[str, int, int | None], ...]:
        """``{action: {min, max}}``: each dependency must have completed min times (default 1)
        and at most max times (default: no limit)."""
        depends: list[tuple[str, int, int | None]] = []
        for dep, limits in self.entries(value, path, "dependency", MAX_NAMES).items():
            dpath = [*path, dep]
            limits = self.mapping(limits, dpath)
            self.unknown_keys(limits, {"min", "max"}, dpath)
            low = self.whole(limits.get("min"), [*dpath, "min"], low=0, high=MAX_COUNT)
            high = self.whole(limits.get("max"), [*dpath, "max"], low=0, high=MAX_COUNT)
            low = 1 if low is None else low
            if high is not None and high < low:
                self.fail(
                    [*dpath, "max"],
                    f"{self.where([*dpath, 'max'])} must be at least min ({low}).",
                    code="GUARD_UNSATISFIABLE",
                    hint="No count of completions is both at least min and at most max: raise max or lower min.",
                )
                continue
            depends.append((dep, low, high))
        return tuple(depends)

    def count_transitions(self, states: Iterable[Any], actions: Iterable[Any]) -> None:
        """Bound the diagram: every (action, state it is enabled in, output) is one of its edges."""
        scope_sizes: dict[str | None, int] = {}
        for state in states:
            scope_sizes[state.scope] = scope_sizes.get(state.scope, 0) + 1
        total = 0
        for action in actions:
            if action.always_enabled:
                enabled = scope_sizes.get(action.parent, 0)
            else:
                enabled = len({*action.enabled_states, *action.assigned_states})
            total += enabled * max(1, len(action.outputs))
        if total > MAX_TRANSITIONS:
            self.fail(
                ["actions"],
                f"The spec has {total} transitions (an action in a state it is enabled in, once per output); "
                f"at most {MAX_TRANSITIONS}.",
            )

    def unknown_keys(self, obj: dict[str, Any], allowed: set[str], path: list[str]) -> None:
        for key in obj:
            if key not in allowed:
                shown = repr(key) if is_name(key) else "a key"
                self.fail(
                    [*path, key] if is_name(key) else path,
                    f"Unknown key {shown} in {self.where(path)}; known: {', '.join(sorted(allowed))}.",
                )


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True
