"""Built-in side effects: named callbacks run after an action's state change, in its transaction."""

from dataclasses import dataclass, field
from typing import Any

from engine.cases.context import CaseContext
from engine.errors import DomainError, ErrorCode
from engine.people.actors import Actor
from engine.registry import register_side_effect
from engine.spec.specs import ActionSpec


@dataclass
class Execution:
    """What an ``on_fire`` callback and a side effect see: the action fired, who fired it, the
    input values, the output taken (the caller's, until ``on_fire`` picks one), the resolution
    code, and ``log_data``, the data of the activity entry being written (a side effect may add
    to it)."""

    ctx: CaseContext
    action: ActionSpec
    actor: Actor
    values: dict[str, Any]
    log_data: dict[str, Any] = field(default_factory=dict)
    output: str | None = None
    resolution: str | None = None


@register_side_effect("capture_resolution")
async def capture_resolution(execution: Execution) -> None:
    """Kept for specs written before ``resolutions``: it moves a free-text ``data.resolution``
    into the log entry. An action that declares ``resolutions`` has its code checked against
    them and logged by the engine (``executeAction(input: {resolution})``); this does nothing there."""
    if execution.action.resolutions:
        return
    code = execution.values.get("resolution")
    if code is None:
        return
    if not isinstance(code, str) or not code.strip() or len(code) > 64:
        raise DomainError(
            ErrorCode.INVALID_INPUT, 'resolution is a short code such as "fixed".', ["data", "resolution"]
        )
    execution.log_data["resolution"] = code.strip()
