"""Defining and checking workflow specs: the findings of the checks travel with the answer."""

from typing import Any

from engine.errors import DomainError
from engine.spec import workflows
from engine.spec.diagnostics import Diagnostic, InvalidSpec
from models import Workflow
from resolvers.context import Context
from resolvers.errors import UserErrorRow, user_errors
from resolvers.mutations import run


async def define_workflow(ctx: Context, spec: Any) -> tuple[Workflow | None, list[Diagnostic], list[UserErrorRow]]:
    """The stored definition and its warnings; or, refused, the user errors and every finding."""

    async def operation(session: Any, actor: Any) -> workflows.Defined | InvalidSpec:
        try:
            return await workflows.define(session, actor=actor, spec=spec)
        except InvalidSpec as refused:  # nothing was written: the checks run before the insert
            return refused

    outcome, errors = await run(ctx, operation)
    if isinstance(outcome, InvalidSpec):
        return None, outcome.diagnostics, user_errors(outcome)
    if outcome is None:
        return None, [], errors
    return outcome.workflow, outcome.diagnostics, []


async def validate_workflow(ctx: Context, spec: Any) -> tuple[list[Diagnostic], list[UserErrorRow]]:
    """Every finding defining ``spec`` would report, nothing defined (read-only)."""
    try:
        async with ctx.db.read_session() as session:
            return await workflows.validate_workflow(session, actor=ctx.viewer, spec=spec), []
    except DomainError as error:
        return [], user_errors(error)
