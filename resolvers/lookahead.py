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
    "timers": {"case", "enabled"},
    "myActions": {"case", "enabled", "roles", "intents"},
    "roles": {"case", "roles"},
    "assignees": {"parties"},
    "assignee": {"parties"},
}


def field_names(selections: list[Any], *, deep: bool = True) -> set[str]:
    """The names of the fields selected, through fragments; ``deep=False`` stops at the first
    level of fields (a connection's own ``totalCount``, not one further down)."""
    names: set[str] = set()
    stack = list(selections)
    while stack:
        node = stack.pop()
        if isinstance(node, SelectedField):
            names.add(node.name)
            if deep:
                stack.extend(node.selections)
        elif isinstance(node, InlineFragment | FragmentSpread):
            stack.extend(node.selections)
    return names


def item_prefetch(info: Any) -> frozenset[str]:
    """The related data a workflow-item connection's selection will read."""
    wanted: set[str] = set()
    for name in field_names(info.selected_fields):
        wanted |= _WANTS.get(name, set())
    return frozenset(wanted)


def selects(info: Any, name: str) -> bool:
    """Whether the field being resolved selects ``name`` directly."""
    return name in field_names([node for field in info.selected_fields for node in field.selections], deep=False)
