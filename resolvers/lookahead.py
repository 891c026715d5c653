"""What a connection's selection asks for below it, so its loader can prefetch in bulk."""

from typing import Any

from strawberry.types.nodes import FragmentSpread, InlineFragment, SelectedField

# Field name in the selection -> what to prefetch for a page of workflow items.
_WANTS = {
    "case": {"case"},
    "status": {"case"},
    "state": {"case", "states"},
    "states": {"case", "states"},
    "enabledActions": {"case", "enabled"},
    "myActions": {"case", "enabled", "roles", "intents"},
    "roles": {"case", "roles"},
    "assignees": {"parties"},
    "assignee": {"parties"},
}


def field_names(selections: list[Any]) -> set[str]:
    names: set[str] = set()
    stack = list(selections)
    while stack:
        node = stack.pop()
        if isinstance(node, SelectedField):
            names.add(node.name)
        if isinstance(node, SelectedField | InlineFragment | FragmentSpread):
            stack.extend(node.selections)
    return names


def item_prefetch(info: Any) -> frozenset[str]:
    """The related data a workflow-item connection's selection will read."""
    wanted: set[str] = set()
    for name in field_names(info.selected_fields):
        wanted |= _WANTS.get(name, set())
    return frozenset(wanted)


def selects(info: Any, name: str) -> bool:
    """Whether the field being resolved selects ``name`` directly (through fragments too, not
    in fields below): a connection's ``totalCount``, say."""
    stack = [selection for field in info.selected_fields for selection in field.selections]
    while stack:
        node = stack.pop()
        if isinstance(node, SelectedField):
            if node.name == name:
                return True
        elif isinstance(node, InlineFragment | FragmentSpread):
            stack.extend(node.selections)
    return False
