"""Projected budgets of projects and subprojects: one value per organization and currency,
checked as given, written with the resource and replaced as a whole by an update.
"""

from dataclasses import dataclass

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from engine import validation
from models import ProjectedBudget

__all__ = ["BudgetInput", "add", "checked", "replace", "snapshot"]


@dataclass(frozen=True, slots=True)
class BudgetInput:
    organization: str
    currency: str
    value: str


def checked(budgets: list[BudgetInput] | None) -> list[BudgetInput]:
    """The budgets as given, each part checked, at most one per organization and currency."""
    result: list[BudgetInput] = []
    seen: set[tuple[str, str]] = set()
    for i, budget in enumerate(budgets or []):
        field = f"projectedBudgets.{i}"
        org = validation.require_text(budget.organization, f"{field}.organization")
        cur = validation.currency(budget.currency, f"{field}.currency")
        value = validation.decimal_string(budget.value, f"{field}.value")
        if (org, cur) in seen:
            raise validation.invalid(
                f"Two budgets for {org} in {cur}; there is one per organization and currency.", field
            )
        seen.add((org, cur))
        result.append(BudgetInput(org, cur, value))
    return result


async def replace(session: AsyncSession, resource_id: str, budgets: list[BudgetInput]) -> None:
    """An update's budgets: they replace the resource's, all of them."""
    await session.execute(delete(ProjectedBudget).where(ProjectedBudget.resource_id == resource_id))
    add(session, resource_id, budgets)


def add(session: AsyncSession, resource_id: str, budgets: list[BudgetInput]) -> None:
    """A new resource's budgets: it has none to replace."""
    for b in budgets:
        session.add(
            ProjectedBudget(resource_id=resource_id, organization=b.organization, currency=b.currency, value=b.value)
        )


def snapshot(budgets: list[BudgetInput]) -> list[dict[str, str]]:
    """The budgets as the log entry's data tells them."""
    return [{"organization": b.organization, "currency": b.currency, "value": b.value} for b in budgets]
