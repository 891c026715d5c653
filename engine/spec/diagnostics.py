"""Findings about a workflow spec, each a plain record: what is wrong (a code), how bad (an
ERROR refuses the definition, a WARNING comes back with it), where (a path into the spec), a
sentence and a hint at the fix (docs/workflows.md, "Checks at definition").

Every check speaks this one shape, so a definition reports everything at once: the key-by-key
checks (``engine.spec.spec_checker``), the whole-spec analysis (``engine.spec.spec_analysis``) and any
check that needs the database (a finding is appended to the same list).
"""

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from engine.errors import DomainError, DomainErrors, ErrorCode


class Severity(StrEnum):
    ERROR = "ERROR"  # the spec is refused (INVALID_SPEC)
    WARNING = "WARNING"  # the spec is defined; the finding comes back with it


# The codes of the whole-spec checks, each with its severity. The key-by-key checks report
# INVALID_SPEC (an unknown key, a wrong type, a name that does not exist), or one of these
# where it says more.
SEVERITIES: dict[str, Severity] = {
    "INVALID_SPEC": Severity.ERROR,
    "INVALID_CONDITION": Severity.ERROR,  # a CEL rule that does not parse or type-check (engine/spec/rules.py)
    "UNREACHABLE_STATE": Severity.ERROR,
    "NO_PATH_TO_TERMINAL": Severity.ERROR,
    "DEAD_ACTION": Severity.ERROR,
    "GUARD_UNSATISFIABLE": Severity.ERROR,
    "AUTO_LOOP": Severity.ERROR,
    "CHILD_WORKFLOW_MISSING": Severity.ERROR,
    "CHILD_RECURSION": Severity.ERROR,
    "ROLE_NEVER_FILLED": Severity.WARNING,
    "TIMER_REPEATS": Severity.WARNING,
    "STRANDS_CASES": Severity.WARNING,  # running cases of earlier versions (engine.spec.versions)
}


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding. ``path`` leads from the spec's top to the key at fault, e.g.
    ``("states", "review")``; empty for the spec as a whole."""

    code: str
    severity: Severity
    path: tuple[str, ...]
    message: str
    hint: str | None = None

    @property
    def where(self) -> str:
        """The path as people read it: ``states.review``, or ``spec`` for the whole."""
        return ".".join(self.path) or "spec"


def finding(code: str, path: Iterable[str], message: str, hint: str | None = None) -> Diagnostic:
    """A finding with the severity its code has."""
    return Diagnostic(code=code, severity=SEVERITIES[code], path=tuple(path), message=message, hint=hint)


def errors_of(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    return [d for d in diagnostics if d.severity == Severity.ERROR]


class InvalidSpec(DomainErrors):
    """A spec refused: one INVALID_SPEC user error per ERROR finding (``field`` is ``["spec",
    *path]``, as every spec error has always been), and ``diagnostics``, every finding
    (warnings included), for the clients that show them all."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        errors = errors_of(diagnostics)
        assert errors, "a refusal needs an error"  # programmer mistake: warnings alone define
        super().__init__([DomainError(ErrorCode.INVALID_SPEC, d.message, ["spec", *d.path]) for d in errors])
        self.diagnostics = diagnostics
