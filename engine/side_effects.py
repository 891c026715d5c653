"""Built-in side effects: named callbacks run after an action's state change, in its transaction."""

from dataclasses import dataclass, field
from typing import Any

from engine.actors import Actor
from engine.context import CaseContext
from engine.errors import DomainError, ErrorCode
from engine.registry import register_side_effect
from engine.specs import ActionSpec


@dataclass
class Execution:
    """What a side effect sees: the action fired, who fired it, the input values, and
    ``log_data``, the data of the activity entry being written (a side effect may add to it)."""

    ctx: CaseContext
    action: ActionSpec
    actor: Actor
    values: dict[str, Any]
    log_data: dict[str, Any] = field(default_factory=dict)


@register_side_effect("capture_resolution")
async def capture_resolution(execution: Execution) -> None:
    """Keep the action's resolution code (``data.resolution``) as a first-class log field."""
    code = execution.values.get("resolution")
    if code is None:
        return
    if not isinstance(code, str) or not code.strip() or len(code) > 64:
        raise DomainError(
            ErrorCode.INVALID_INPUT, 'resolution is a short code such as "fixed".', ["data", "resolution"]
        )
    execution.log_data["resolution"] = code.strip()
