"""Named callbacks a spec can refer to: default-assignee callbacks and side effects.

Built-ins register themselves on import; plugins add more through the entry point groups
``caseway.assignees`` and ``caseway.side_effects`` (each entry point names an async callable).
"""

from collections.abc import Awaitable, Callable
from importlib.metadata import entry_points
from typing import Any

AssigneeCallback = Callable[[Any], Awaitable[list[str]]]
SideEffect = Callable[[Any], Awaitable[None]]

_assignees: dict[str, AssigneeCallback] = {}
_side_effects: dict[str, SideEffect] = {}
_plugins_loaded = False


def register_assignee(name: str) -> Callable[[AssigneeCallback], AssigneeCallback]:
    def decorator(fn: AssigneeCallback) -> AssigneeCallback:
        _assignees[name] = fn
        return fn

    return decorator


def register_side_effect(name: str) -> Callable[[SideEffect], SideEffect]:
    def decorator(fn: SideEffect) -> SideEffect:
        _side_effects[name] = fn
        return fn

    return decorator


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    # Importing the built-ins registers them.
    import engine.assignment
    import engine.side_effects  # noqa: F401

    for ep in entry_points(group="caseway.assignees"):
        _assignees.setdefault(ep.name, ep.load())
    for ep in entry_points(group="caseway.side_effects"):
        _side_effects.setdefault(ep.name, ep.load())


def assignee_callbacks() -> dict[str, AssigneeCallback]:
    _load_plugins()
    return _assignees


def side_effects() -> dict[str, SideEffect]:
    _load_plugins()
    return _side_effects
