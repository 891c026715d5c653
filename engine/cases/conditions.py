"""Enable conditions (docs/workflows.md, "Enable conditions"): named callbacks an action
lists in ``enable_conditions``, asked when the action is about to be enabled, after its states
and its gates (``depends_on``) allow it. A refusal records the instance as REFUSED; it is asked
again at the case's next change (engine.cases.transitions.recompute), not when the data it looked at
changes.

A condition receives an ``EnableCheck`` and returns whether the action may be enabled. It runs
inside the transaction of the change (dry runs included): it may read, it must not write.
Plugins add conditions through the entry point group ``caseway.enable_conditions``.
"""

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from engine.cases.context import CaseContext
from engine.registry import register_enable_condition
from engine.spec.specs import ActionSpec


@dataclass(frozen=True, slots=True)
class EnableCheck:
    """What an enable condition sees: the case (its item, states and role players) and the action."""

    ctx: CaseContext
    action: ActionSpec
    scope: str


@register_enable_condition("item_has_amount")
async def item_has_amount(check: EnableCheck) -> bool:
    """The workflow item states an amount (allocated or disbursed, above zero): e.g. "pay" is
    not offered for an item nobody has priced yet."""
    item = check.ctx.item
    if item.amount_type == "N/A" or not item.amount:
        return False
    try:
        return Decimal(item.amount) > 0
    except InvalidOperation:
        return False


@register_enable_condition("item_has_assignee")
async def item_has_assignee(check: EnableCheck) -> bool:
    """The workflow item has an assignee: work is not started before someone is responsible."""
    return check.ctx.item.assignee_id is not None
