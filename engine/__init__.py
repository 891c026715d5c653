"""The Caseway domain: plain async Python over a database session.

Verbs take keyword-only arguments, raise ``DomainError`` with a code, and never commit: the
caller owns the transaction (one unit of work per mutation). Nothing here imports the API layer.
"""

# The built-in callbacks register themselves on import (engine/registry.py), as plugins do when
# their entry points load; importing any engine module imports this package first.
from engine.cases import (  # noqa: F401
    assignment,
    conditions,
    execute,
    get_enabled_actions,
    get_user_actions,
    job_entries,
    side_effects,
    start_case,
)
from engine.cases.actions import execute_action
from engine.cases.assignment import pick_list, reassign
from engine.cases.items import assign_workflow_item, create_workflow_item, update_workflow_item
from engine.cases.lifecycle import cancel_case, resume_case, resume_due_suspensions, suspend_case
from engine.errors import DomainError, DomainErrors, ErrorCode
from engine.people.actors import SYSTEM, Actor
from engine.spec.workflows import define_workflow, latest_workflow, sync_spec_files
from engine.tree.budgets import BudgetInput
from engine.tree.ordering import reorder
from engine.tree.resources import (
    UNSET,
    assign_project,
    assign_subproject,
    close_project,
    close_subproject,
    create_project,
    create_subproject,
    set_subproject_validator,
    update_project,
    update_subproject,
)

__all__ = [
    "SYSTEM",
    "UNSET",
    "Actor",
    "BudgetInput",
    "DomainError",
    "DomainErrors",
    "ErrorCode",
    "assign_project",
    "assign_subproject",
    "assign_workflow_item",
    "cancel_case",
    "close_project",
    "close_subproject",
    "create_project",
    "create_subproject",
    "create_workflow_item",
    "define_workflow",
    "execute",
    "execute_action",
    "get_enabled_actions",
    "get_user_actions",
    "latest_workflow",
    "pick_list",
    "reassign",
    "reorder",
    "resume_case",
    "resume_due_suspensions",
    "set_subproject_validator",
    "start_case",
    "suspend_case",
    "sync_spec_files",
    "update_project",
    "update_subproject",
    "update_workflow_item",
]
