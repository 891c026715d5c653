"""The state machine of a workflow as a Mermaid or Graphviz DOT diagram."""

from engine.errors import DomainError, ErrorCode
from engine.specs import WorkflowSpec


def _edges(spec: WorkflowSpec) -> list[tuple[str, str, str]]:
    edges = []
    for action in spec.actions.values():
        if action.parent is not None or action.trigger == "init":
            continue
        sources = [s.short_name for s in spec.scope_states(None) if action.is_enabled_in(s.short_name)]
        targets = [action.new_state] if action.new_state else [t for _, t in action.outputs]
        for source in sources:
            for target in targets or [source]:
                edges.append((source, target, action.pretty_name))
    return edges


def render(spec: WorkflowSpec, fmt: str = "MERMAID") -> str:
    initial = spec.initial_state()
    if fmt.upper() == "MERMAID":
        lines = ["stateDiagram-v2", f"    [*] --> {initial}"]
        lines += [f"    {a} --> {b}: {label}" for a, b, label in _edges(spec)]
        lines += [f"    {s.short_name} --> [*]" for s in spec.scope_states(None) if s.terminal]
        return "\n".join(lines)
    if fmt.upper() == "DOT":
        lines = [f'digraph "{spec.short_name}" {{', "    rankdir=LR;"]
        for s in spec.scope_states(None):
            shape = "doublecircle" if s.terminal else "circle"
            lines.append(f'    "{s.short_name}" [shape={shape}, label="{s.pretty_name}"];')
        lines += [f'    "{a}" -> "{b}" [label="{label}"];' for a, b, label in _edges(spec)]
        lines.append("}")
        return "\n".join(lines)
    raise DomainError(ErrorCode.INVALID_INPUT, "format is MERMAID or DOT.", ["format"])
