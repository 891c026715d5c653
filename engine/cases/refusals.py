"""Why an action cannot be executed, said so the caller can fix it: an output or a resolution
it does not take, an action the workflow lacks (its actions named, for a typo) or that is not
enabled now, and an action that runs by itself (when it will). Built only on the refusal path.
"""

from engine.cases.context import CaseContext
from engine.errors import DomainError, ErrorCode
from engine.spec.child_specs import PARENT_TRIGGERS
from engine.spec.spec_checker import MAX_NAME
from engine.spec.specs import ActionSpec, WorkflowSpec

__all__ = ["MAX_NAMED_ACTIONS", "check_choices", "not_enabled", "runs_by_itself"]


def check_choices(action: ActionSpec, output: str | None, resolution: str | None) -> None:
    """An output only for an action with outputs (which one is checked as the state changes, as
    an ``on_fire`` callback may pick it); a resolution one of the action's codes, and required
    when it has some: the person resolving picks one. Messages name the allowed
    values, never echo the one given (it may be long)."""
    if output is not None and not action.outputs:
        raise DomainError(
            ErrorCode.INVALID_INPUT, f"{action.pretty_name} has no outputs; leave output out.", ["output"]
        )
    codes = [code for code, _ in action.resolutions]
    if resolution is None and not codes:
        return
    if not codes:
        raise DomainError(
            ErrorCode.INVALID_INPUT, f"{action.pretty_name} has no resolutions; leave resolution out.", ["resolution"]
        )
    if resolution not in codes:
        raise DomainError(
            ErrorCode.INVALID_INPUT,
            f"{action.pretty_name} needs a resolution, one of: {', '.join(codes)}."
            if resolution is None
            else f"That is not a resolution of {action.pretty_name}; one of: {', '.join(codes)}.",
            ["resolution"],
        )


# Action names an UNKNOWN_ACTION message lists: enough for any hand-written workflow, bounded for any.
MAX_NAMED_ACTIONS = 20


def not_enabled(spec: WorkflowSpec, action: str) -> DomainError:
    """Why ``action`` cannot run: the workflow has no such action (naming those it has, so a typo
    is easy to fix), or it exists but is not enabled now. Built only on the refusal path."""
    if action in spec.actions:
        return DomainError(ErrorCode.ACTION_NOT_ENABLED, f"{action!r} is not enabled in this case now.", ["action"])
    names = list(spec.actions)
    listed = ", ".join(names[:MAX_NAMED_ACTIONS])
    if len(names) > MAX_NAMED_ACTIONS:
        listed += f" and {len(names) - MAX_NAMED_ACTIONS} more"
    shown = action if len(action) <= MAX_NAME else action[:MAX_NAME] + "…"
    message = f"The workflow {spec.short_name!r} has no action {shown!r}; its actions: {listed}."
    return DomainError(ErrorCode.UNKNOWN_ACTION, message, ["action"])


def runs_by_itself(ctx: CaseContext, action: ActionSpec | None) -> DomainError | None:
    """Why an enabled parent or timed action cannot be executed by hand: it runs by itself, and
    the refusal says when (a parent when its children complete, a TIME action when its timer
    falls due). None when the action is not enabled now (or runs otherwise)."""
    if action is None or action.trigger not in ("time", *PARENT_TRIGGERS):
        return None
    due = [ea.fire_at for ea in ctx.enabled or () if ea.action == action.short_name and ea.status == "ENABLED"]
    if not due:
        return None
    if action.trigger == "time":
        when = min((at for at in due if at is not None), default=None)
        message = f"{action.short_name!r} runs when its timer falls due at {when.isoformat() if when else 'its time'}"
    else:
        message = f"{action.short_name!r} runs when its children complete"
    return DomainError(ErrorCode.ACTION_NOT_ENABLED, f"{message}; it cannot be executed by hand.", ["action"])
