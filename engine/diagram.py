"""The state machine of a workflow as a Mermaid or Graphviz DOT diagram.

Each edge is an action in a state it is enabled in, labelled with its pretty name; an action
with outputs draws one edge per output (labelled with the output, which decides the new state),
and a timed action says when it fires by itself (``after 2 s``, ``after 7 d``).
"""

from engine.errors import DomainError, ErrorCode
from engine.specs import ActionSpec, WorkflowSpec

# (seconds in the unit, its symbol), largest first: a timeout is shown in the largest unit it is
# a whole number of (90 s stays "90 s", 7,200 s is "2 h").
_UNITS = ((86_400, "d"), (3_600, "h"), (60, "min"), (1, "s"))


def duration(seconds: int) -> str:
    """A timeout in human units: ``2 s``, ``90 s``, ``5 min``, ``2 h``, ``7 d``."""
    for size, symbol in _UNITS:
        if seconds and seconds % size == 0:
            return f"{seconds // size} {symbol}"
    return f"{seconds} s"


def _label(action: ActionSpec, output: str | None) -> str:
    notes = [output] if output is not None else []
    if action.timeout_seconds is not None:
        notes.append(f"after {duration(action.timeout_seconds)}")
    return f"{action.pretty_name} ({', '.join(notes)})" if notes else action.pretty_name


def _edges(spec: WorkflowSpec) -> list[tuple[str, str, str]]:
    edges = []
    for action in spec.actions.values():
        if action.parent is not None or action.trigger == "init":
            continue
        sources = [s.short_name for s in spec.scope_states(None) if action.is_enabled_in(s.short_name)]
        # outputs decide the new state when an action has them; otherwise new_state (or none: a loop)
        targets: list[tuple[str | None, str | None]] = list(action.outputs) or [(None, action.new_state)]
        for source in sources:
            for output, target in targets:
                edges.append((source, target or source, _label(action, output)))
    return edges


def _mermaid_text(text: str) -> str:
    return " ".join(text.split())  # a label is one line


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(spec: WorkflowSpec, fmt: str = "MERMAID") -> str:
    initial = spec.initial_state()
    if fmt.upper() == "MERMAID":
        lines = ["stateDiagram-v2", f"    [*] --> {initial}"]
        lines += [f"    {a} --> {b}: {_mermaid_text(label)}" for a, b, label in _edges(spec)]
        lines += [f"    {s.short_name} --> [*]" for s in spec.scope_states(None) if s.terminal]
        return "\n".join(lines)
    if fmt.upper() == "DOT":
        lines = [f'digraph "{_dot_text(spec.short_name)}" {{', "    rankdir=LR;"]
        for s in spec.scope_states(None):
            shape = "doublecircle" if s.terminal else "circle"
            lines.append(f'    "{_dot_text(s.short_name)}" [shape={shape}, label="{_dot_text(s.pretty_name)}"];')
        lines += [
            f'    "{_dot_text(a)}" -> "{_dot_text(b)}" [label="{_dot_text(label)}"];' for a, b, label in _edges(spec)
        ]
        lines.append("}")
        return "\n".join(lines)
    raise DomainError(ErrorCode.INVALID_INPUT, "format is MERMAID or DOT.", ["format"])
