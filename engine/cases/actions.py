"""``executeAction`` as one engine call: the action (engine/cases/execution.py), the documents attached
with it, a dry run's preview, and its outcome recorded in the transaction's unit of work.

Why here and not in the resolver: a resolver that called the engine three times, loaded the
workflow row to build a preview and counted metrics held rules the engine tests could not see.
The resolver now hands its input here and shapes the payload; the outcome ("ok", "replayed",
"dry_run" or the refusal's code) is counted by whoever publishes the unit of work
(server/publisher.py), whether the transaction commits or rolls back.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from engine import cases
from engine.documents.records import attach_with_action
from engine.documents.storage import StoredFile
from engine.errors import DomainError, ErrorCode
from engine.people.actors import Actor
from engine.spec.specs import ActionSpec, StateSpec
from engine.spec.workflows import cached_short_name, spec_of
from models import Case, Document, Workflow, unit_of_work


@dataclass
class Preview:
    """What the case would look like after a dry run (read before the rollback)."""

    state: StateSpec
    status: str
    version: int
    enabled_actions: list[ActionSpec]
    route: int | None = None  # which of the action's routes was taken (1 for the first)


@dataclass
class ActionOutcome:
    case_id: str
    case: Case | None = None  # None after a dry run: its rows expire with the rollback
    activity: Any = None
    replayed: bool = False
    documents: list[Document] = field(default_factory=list)
    preview: Preview | None = None


async def execute_action(
    session: AsyncSession,
    *,
    actor: Actor,
    action: str,
    case_id: str | None = None,
    workflow_item_id: str | None = None,
    files: Sequence[tuple[StoredFile, str | None]] = (),
    dry_run: bool = False,
    **options: Any,
) -> ActionOutcome:
    """Execute ``action`` on the case named by exactly one of ``case_id`` and
    ``workflow_item_id`` (``options``: those of ``cases.execute``), attaching ``files`` (stored
    before the transaction). With ``dry_run`` the outcome carries a preview and the caller
    rolls the transaction back."""
    work = unit_of_work(session)
    try:
        if (case_id is None) == (workflow_item_id is None):
            raise DomainError(ErrorCode.INVALID_INPUT, "Give exactly one of caseId and workflowItemId.", ["caseId"])
        result = await cases.execute(
            session, actor=actor, action=action, case_id=case_id, workflow_item_id=workflow_item_id, **options
        )
        attached = []
        if files and not result.replayed:  # a replay attached its files the first time
            attached = await attach_with_action(
                session, actor=actor, case=result.case, action=action, files=list(files)
            )
    except DomainError as error:
        work.action_ran(None, str(error.code))
        raise
    workflow = cached_short_name(result.case.workflow_id)
    if not dry_run:
        work.action_ran(workflow, "replayed" if result.replayed else "ok")
        return ActionOutcome(result.case.id, result.case, result.activity, replayed=result.replayed, documents=attached)
    case, state, enabled = await cases.preview(session, case_id=result.case.id)
    spec = spec_of(await session.get(Workflow, case.workflow_id))
    work.action_ran(workflow, "dry_run")
    preview = Preview(
        state=spec.states[state],
        status=case.status,
        version=case.version,  # type: ignore[arg-type]
        enabled_actions=[spec.actions[ea.action] for ea in enabled],
        route=(result.activity.data or {}).get("route") if result.activity is not None else None,
    )
    return ActionOutcome(case.id, preview=preview)
