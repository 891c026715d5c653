"""The state machine of a workflow as a Mermaid or Graphviz DOT diagram.

Each edge is an action in a state it is enabled in, labelled with its pretty name; an action
with outputs draws one edge per output (labelled with the output, which decides the new state),
and a timed action says when it fires by itself (``after 2 s``, ``after 7 d``).

States are drawn by their pretty names (Mermaid: ``state "In review" as review``; DOT: a
node's label), so that the dashboard's diagram reads as the rest of the page does.

Child scopes are drawn inside their parent: in Mermaid as composite states (the
subgraphs of a state diagram, ``state "Review" as scope_<action> { ... }``, titled by the
parent's pretty name), in DOT as ``subgraph cluster_<action>``, nested as the spec nests them.
A scope with states draws its own FSM; the children of a scope without states (parallel, dynamic
without states) are drawn as nodes side by side. In Mermaid the parent is a step on the way:
its edge leads from the states it is enabled in into its box, saying how it runs
(``parallel``, ``for each voters per_user``), and the box leads on to where each output (or its
new state) goes. DOT draws the same: the parent's edge ends at its cluster's border and the
cluster's edges leave from it (``compound=true``, ``lhead``/``ltail`` on an invisible anchor node,
``scope_<action>``, that each cluster holds).
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


def _edges(spec: WorkflowSpec, parent: str | None = None, *, boxed: bool = False) -> list[tuple[str, str, str]]:
    """The edges of one scope with states (the top level, or a parent's child FSM). ``boxed``: a
    parent action's edges go into its scope's box (``scope_<action>``) and out of it again."""
    edges: list[tuple[str, str, str]] = []
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
        if boxed and action.children:
            box = f"scope_{action.short_name}"
            edges += [(source, box, _label(action, None)) for source in sources]
            exits = [(box, target or source, output or "") for source in sources for output, target in targets]
            edges += [edge for n, edge in enumerate(exits) if edge not in exits[:n]]
            continue
        for source in sources:
            for output, target in targets:
                edges.append((source, target or source, _label(action, output)))
    return edges


def _mermaid_text(text: str) -> str:
    return " ".join(text.split())  # a label is one line


def _mermaid_name(text: str) -> str:
    """A pretty name inside Mermaid's quotes, which cannot hold one: a double quote becomes a single one."""
    return _mermaid_text(text).replace('"', "'")


def _mermaid_edge(a: str, b: str, label: str) -> str:
    return f"{a} --> {b}: {_mermaid_text(label)}" if label else f"{a} --> {b}"


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _parents(spec: WorkflowSpec, parent: str | None) -> list[ActionSpec]:
    return [a for a in spec.scope_actions(parent) if a.children]


def _mermaid_scope(spec: WorkflowSpec, parent: str | None, indent: str) -> list[str]:
    lines = []
    if spec.scope_states(parent):
        states = spec.scope_states(parent)
        lines += [f'{indent}state "{_mermaid_name(s.pretty_name)}" as {s.short_name}' for s in states]
        lines.append(f"{indent}[*] --> {spec.initial_state(parent)}")
        lines += [f"{indent}{_mermaid_edge(a, b, label)}" for a, b, label in _edges(spec, parent, boxed=True)]
        lines += [f"{indent}{s.short_name} --> [*]" for s in spec.scope_states(parent) if s.terminal]
    else:  # side by side: each child a node of its own
        for child in spec.scope_actions(parent):
            if not child.children:
                lines.append(f'{indent}state "{_mermaid_name(child.pretty_name)}" as {parent}__{child.short_name}')
    for child in _parents(spec, parent):
        lines.append(f'{indent}state "{_mermaid_name(child.pretty_name)}" as scope_{child.short_name} {{')
        lines += _mermaid_scope(spec, child.short_name, indent + "    ")
        lines.append(f"{indent}}}")
    return lines


def _dot_edge(a: str, b: str, label: str, clusters: dict[str, str]) -> str:
    """An edge; one into or out of a child scope's box ends at the box's border (``lhead`` and
    ``ltail`` naming the cluster of the box's anchor node, with the graph's ``compound=true``)."""
    clipped = [f'label="{_dot_text(label)}"']
    if b in clusters:
        clipped.append(f'lhead="{_dot_text(clusters[b])}"')
    if a in clusters:
        clipped.append(f'ltail="{_dot_text(clusters[a])}"')
    return f'"{_dot_text(a)}" -> "{_dot_text(b)}" [{", ".join(clipped)}];'


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
    clusters = {}  # a box's anchor node -> its cluster
    for child in _parents(spec, parent):  # each box first, with the anchor its edges end at
        anchor, cluster = f"scope_{child.short_name}", f"cluster_{child.short_name}"
        clusters[anchor] = cluster
        lines.append(f'{indent}subgraph "{_dot_text(cluster)}" {{')
        lines.append(f'{indent}    label="{_dot_text(child.pretty_name)}";')
        lines.append(f'{indent}    "{_dot_text(anchor)}" [shape=point, style=invis, width=0, height=0];')
        lines += _dot_scope(spec, child.short_name, indent + "    ")
        lines.append(f"{indent}}}")
    if spec.scope_states(parent):
        lines += [f"{indent}{_dot_edge(a, b, label, clusters)}" for a, b, label in _edges(spec, parent, boxed=True)]
    return lines


def render(spec: WorkflowSpec, fmt: str = "MERMAID") -> str:
    if fmt.upper() == "MERMAID":
        return "\n".join(["stateDiagram-v2", *_mermaid_scope(spec, None, "    ")])
    if fmt.upper() == "DOT":
        lines = [f'digraph "{_dot_text(spec.short_name)}" {{', "    rankdir=LR;", "    compound=true;"]
        lines += _dot_scope(spec, None, "    ")
        lines.append("}")
        return "\n".join(lines)
    raise DomainError(ErrorCode.INVALID_INPUT, "format is MERMAID or DOT.", ["format"])
