"""The state machine of a workflow as a Mermaid or Graphviz DOT diagram.

Each edge is an action in a state it is enabled in, labelled with its pretty name; an action
with outputs draws one edge per output (labelled with the output, which decides the new state),
and a timed action says when it fires by itself (``after 2 s``, ``after 7 d``).

Child scopes are drawn inside their parent: in Mermaid as composite states (the
subgraphs of a state diagram, ``state scope_<action> { ... }``), in DOT as ``subgraph
cluster_<action>``, nested as the spec nests them. A scope with states draws its own FSM; the
children of a scope without states (parallel, dynamic without states) are drawn as nodes side
by side. A parent's own edge, in its enclosing scope, says how it runs (``parallel``, ``for each
voters per_user``) and, for each ``complete_when`` output, when it fires.
"""

from engine.errors import DomainError, ErrorCode
from engine.spec.specs import ActionSpec, WorkflowSpec

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
    if action.trigger in ("workflow", "parallel"):
        notes.append(action.trigger)
    notes += [f"for each {role} {mapping}" for role, mapping in action.for_each]
    if action.timeout_seconds is not None:
        notes.append(f"after {duration(action.timeout_seconds)}")
    return f"{action.pretty_name} ({', '.join(notes)})" if notes else action.pretty_name


def _edges(spec: WorkflowSpec, parent: str | None = None) -> list[tuple[str, str, str]]:
    """The edges of one scope with states (the top level, or a parent's child FSM)."""
    edges = []
    for action in spec.scope_actions(parent):
        if action.trigger == "init":
            continue
        sources = [s.short_name for s in spec.scope_states(parent) if action.is_enabled_in(s.short_name)]
        # outputs decide the new state when an action has them; otherwise new_state (or none: a loop)
        targets: list[tuple[str | None, str | None]] = (
            list(action.outputs)
            or [(None if route.when is None else route.when.source, route.to) for route in action.routes]
            or [(None, action.new_state)]
        )
        for source in sources:
            for output, target in targets:
                edges.append((source, target or source, _label(action, output)))
    return edges


def _mermaid_text(text: str) -> str:
    return " ".join(text.split())  # a label is one line


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _parents(spec: WorkflowSpec, parent: str | None) -> list[ActionSpec]:
    return [a for a in spec.scope_actions(parent) if a.children]


def _mermaid_scope(spec: WorkflowSpec, parent: str | None, indent: str) -> list[str]:
    lines = []
    if spec.scope_states(parent):
        lines.append(f"{indent}[*] --> {spec.initial_state(parent)}")
        lines += [f"{indent}{a} --> {b}: {_mermaid_text(label)}" for a, b, label in _edges(spec, parent)]
        lines += [f"{indent}{s.short_name} --> [*]" for s in spec.scope_states(parent) if s.terminal]
    else:  # side by side: each child a node of its own
        for child in spec.scope_actions(parent):
            if not child.children:
                lines.append(f"{indent}{parent}__{child.short_name}: {_mermaid_text(child.pretty_name)}")
    for child in _parents(spec, parent):
        lines.append(f"{indent}state scope_{child.short_name} {{")
        lines += _mermaid_scope(spec, child.short_name, indent + "    ")
        lines.append(f"{indent}}}")
    return lines


def _dot_scope(spec: WorkflowSpec, parent: str | None, indent: str) -> list[str]:
    lines = []
    for s in spec.scope_states(parent):
        shape = "doublecircle" if s.terminal else "circle"
        lines.append(f'{indent}"{_dot_text(s.short_name)}" [shape={shape}, label="{_dot_text(s.pretty_name)}"];')
    if parent is not None and not spec.scope_states(parent):
        for child in spec.scope_actions(parent):
            if not child.children:
                node = _dot_text(f"{parent}__{child.short_name}")
                lines.append(f'{indent}"{node}" [shape=box, label="{_dot_text(child.pretty_name)}"];')
    lines += [
        f'{indent}"{_dot_text(a)}" -> "{_dot_text(b)}" [label="{_dot_text(label)}"];'
        for a, b, label in _edges(spec, parent)
    ]
    for child in _parents(spec, parent):
        lines.append(f'{indent}subgraph "cluster_{_dot_text(child.short_name)}" {{')
        lines.append(f'{indent}    label="{_dot_text(child.pretty_name)}";')
        lines += _dot_scope(spec, child.short_name, indent + "    ")
        lines.append(f"{indent}}}")
    return lines


def render(spec: WorkflowSpec, fmt: str = "MERMAID") -> str:
    if fmt.upper() == "MERMAID":
        return "\n".join(["stateDiagram-v2", *_mermaid_scope(spec, None, "    ")])
    if fmt.upper() == "DOT":
        lines = [f'digraph "{_dot_text(spec.short_name)}" {{', "    rankdir=LR;"]
        lines += _dot_scope(spec, None, "    ")
        lines.append("}")
        return "\n".join(lines)
    raise DomainError(ErrorCode.INVALID_INPUT, "format is MERMAID or DOT.", ["format"])
