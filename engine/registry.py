"""Named callbacks a spec can refer to: default-assignee callbacks, side effects, ``on_fire``
callbacks (which output an action takes) and enable conditions (whether an action may be enabled).

Every callback registers the same way: by name, into the tables below. The built-ins
(engine/cases/assignment.py, engine/cases/conditions.py, engine/cases/side_effects.py) register themselves when
they are imported, which the engine package does (engine/__init__.py), so this module, which
they import, imports none of them; plugins add more through the entry point groups
``caseway.assignees``, ``caseway.side_effects``, ``caseway.on_fire`` and
``caseway.enable_conditions`` (each entry point names an async callable), loaded when a table
is first read.
"""

from collections.abc import Awaitable, Callable
from importlib.metadata import entry_points
from typing import Any

AssigneeCallback = Callable[[Any], Awaitable[list[str]]]
SideEffect = Callable[[Any], Awaitable[None]]
# Given the engine.cases.side_effects.Execution about to happen, the output the action takes (one of
# its declared outputs), or None to keep the one the caller chose.
OnFire = Callable[[Any], Awaitable[str | None]]
# Given an engine.cases.transitions.EnableCheck, whether the action may be enabled now.
EnableCondition = Callable[[Any], Awaitable[bool]]

_assignees: dict[str, AssigneeCallback] = {}
_side_effects: dict[str, SideEffect] = {}
_on_fire: dict[str, OnFire] = {}
_enable_conditions: dict[str, EnableCondition] = {}
_plugins_loaded = False

_GROUPS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("caseway.assignees", _assignees),
    ("caseway.side_effects", _side_effects),
    ("caseway.on_fire", _on_fire),
    ("caseway.enable_conditions", _enable_conditions),
)


def _registrar(table: dict[str, Any], name: str) -> Callable[[Any], Any]:
    def decorator(fn: Any) -> Any:
        table[name] = fn
        return fn

    return decorator


def register_assignee(name: str) -> Callable[[AssigneeCallback], AssigneeCallback]:
    return _registrar(_assignees, name)


def register_side_effect(name: str) -> Callable[[SideEffect], SideEffect]:
    return _registrar(_side_effects, name)


def register_on_fire(name: str) -> Callable[[OnFire], OnFire]:
    return _registrar(_on_fire, name)


def register_enable_condition(name: str) -> Callable[[EnableCondition], EnableCondition]:
    return _registrar(_enable_conditions, name)


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for group, table in _GROUPS:
        for ep in entry_points(group=group):
            table.setdefault(ep.name, ep.load())


def assignee_callbacks() -> dict[str, AssigneeCallback]:
    _load_plugins()
    return _assignees


def side_effects() -> dict[str, SideEffect]:
    _load_plugins()
    return _side_effects


def on_fire_callbacks() -> dict[str, OnFire]:
    _load_plugins()
    return _on_fire


def enable_conditions() -> dict[str, EnableCondition]:
    _load_plugins()
    return _enable_conditions
