"""Projects and subprojects: create, update, assign and close them (their budgets: engine/tree/budgets.py)."""

from datetime import date
from typing import Any, TypeVar

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from engine import validation
from engine.errors import DomainError, ErrorCode, not_found
from engine.history import activity
from engine.people import permissions
from engine.people.actors import Actor
from engine.spec import versions
from engine.spec.workflows import latest_workflow
from engine.tree import budgets as projected
from engine.tree.budgets import BudgetInput
from engine.tree.item_status import OPEN_CASE_STATUSES
from models import (
    Case,
    Group,
    Project,
    ProjectedBudget,
    Subproject,
    User,
    WorkflowItem,
    kind_of,
    new_id,
)

T = TypeVar("T", Project, Subproject, WorkflowItem)


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


async def lock(session: AsyncSession, model: type[T], id_: str, *, what: str, field: str = "id") -> T:
    """Load a row FOR UPDATE (a no-op on SQLite, whose writes are serialized anyway)."""
    row = await session.scalar(
        select(model).where(model.id == id_).with_for_update().execution_options(populate_existing=True)
    )
    if row is None:
        raise not_found(what, id_, field)
    return row


async def check_party(session: AsyncSession, party_id: str | None, field: str) -> str | None:
    if party_id is None:
        return None
    model = {"User": User, "Group": Group}.get(kind_of(party_id) or "")
    if model is None or await session.get(model, party_id) is None:
        raise not_found("user or group", party_id, field)
    return party_id


async def assignee_or_creator(session: AsyncSession, assignee_id: str | None, actor: Actor) -> str:
    """A new resource's assignee: the party named, which must exist, else its creator. The
    creator's user was read when it authenticated for this request: not read again."""
    if not assignee_id or assignee_id == actor.user_id:
        return actor.user_id
    return await check_party(session, assignee_id, "assigneeId")  # type: ignore[return-value]


async def create_project(
    session: AsyncSession,
    *,
    actor: Actor,
    display_name: str,
    description: str | None = None,
    assignee_id: str | None = None,
    tags: list[str] | None = None,
    projected_budgets: list[BudgetInput] | None = None,
    additional_data: dict[str, Any] | None = None,
) -> Project:
    await permissions.require_global(session, actor=actor, intent="global.createProject")
    project = Project(
        id=new_id("prj"),
        display_name=validation.require_text(display_name, "displayName"),
        description=validation.optional_text(description, "description"),
        assignee_id=await assignee_or_creator(session, assignee_id, actor),
        created_by=actor.user_id,
        tags=validation.tags(tags),
        additional_data=validation.json_object(additional_data, "additionalData"),
    )
    budgets = projected.checked(projected_budgets)
    session.add(project)
    await session.flush()
    projected.add(session, project.id, budgets)
    await permissions.grant_new_resource(session, resource_id=project.id, creator_id=actor.user_id)
    await activity.record(
        session,
        kind="project_created",
        actor_id=actor.user_id,
        about=project,
        data={
            "displayName": project.display_name,
            "assigneeId": project.assignee_id,
            "projectedBudgets": projected.snapshot(budgets),
        },
    )
    return project


async def create_subproject(
    session: AsyncSession,
    *,
    actor: Actor,
    project_id: str,
    display_name: str,
    currency: str,
    description: str | None = None,
    assignee_id: str | None = None,
    validator_id: str | None = None,
    workflow_mode: str = "UNORDERED",
    workflow: str | None = None,
    workflow_version: int | None = None,
    tags: list[str] | None = None,
    projected_budgets: list[BudgetInput] | None = None,
    additional_data: dict[str, Any] | None = None,
) -> Subproject:
    """A subproject whose items run ``workflow`` (default ``simple``) at ``workflow_version``, or
    by default the latest version not retired (docs/workflows.md, "Versions")."""
    project = await lock(session, Project, project_id, what="project", field="projectId")
    await permissions.require(
        session,
        actor=actor,
        resource_id=project.id,
        intent="project.createSubproject",
        what="project",
        field="projectId",
    )
    _require_open(project, "project")
    if workflow_mode not in ("ORDERED", "UNORDERED"):
        raise validation.invalid("workflowMode is ORDERED or UNORDERED.", "workflowMode")
    if workflow_version is None:
        wf = await latest_workflow(session, short_name=workflow or "simple")
        field = "workflow"
    else:
        wf = await versions.find_version(
            session, short_name=workflow or "simple", version=workflow_version, field="workflowVersion"
        )
        field = "workflowVersion"
    # Read again under a share lock: a retirement racing this creation commits before or after it.
    wf = await versions.usable_version(session, wf.id, field=field, what="a new subproject")
    subproject = Subproject(
        id=new_id("sub"),
        project_id=project.id,
        display_name=validation.require_text(display_name, "displayName"),
        description=validation.optional_text(description, "description"),
        assignee_id=await assignee_or_creator(session, assignee_id, actor),
        validator_id=await check_party(session, validator_id, "validatorId"),
        created_by=actor.user_id,
        currency=validation.currency(currency),
        workflow_mode=workflow_mode,
        workflow_id=wf.id,
        tags=validation.tags(tags),
        additional_data=validation.json_object(additional_data, "additionalData"),
    )
    budgets = projected.checked(projected_budgets)
    session.add(subproject)
    await session.flush()
    projected.add(session, subproject.id, budgets)
    await permissions.grant_new_resource(
        session, resource_id=subproject.id, creator_id=actor.user_id, parent_id=project.id
    )
    await activity.record(
        session,
        kind="subproject_created",
        actor_id=actor.user_id,
        about=subproject,
        data={
            "displayName": subproject.display_name,
            "workflow": wf.short_name,
            "workflowVersion": wf.version,
            "workflowMode": workflow_mode,
            "projectedBudgets": projected.snapshot(budgets),
        },
    )
    return subproject


def _require_open(resource: Project | Subproject, what: str) -> None:
    if resource.status != "OPEN":
        raise DomainError(ErrorCode.RESOURCE_CLOSED, f"The {what} is closed and cannot change.")


async def require_open_to_reopen(session: AsyncSession, *, subproject_id: str) -> None:
    """A closed workflow item may leave its terminal state (be reopened) only while its
    subproject and project are open: a closed subproject would otherwise hold an open item.
    Read when an action reopens a case, never on the common path. The subproject row is
    share-locked (PostgreSQL), so a concurrent ``close_subproject``, which locks it for update,
    either commits first and is seen here, or waits and then counts this reopened case."""
    row = (
        await session.execute(
            select(Subproject.status, Project.status)
            .join(Project, Project.id == Subproject.project_id)
            .where(Subproject.id == subproject_id)
            .with_for_update(read=True, of=Subproject)
        )
    ).one()
    for what, status in zip(("subproject", "project"), row, strict=True):
        if status != "OPEN":
            raise DomainError(
                ErrorCode.RESOURCE_CLOSED, f"The {what} is closed: its workflow items cannot be reopened.", ["action"]
            )


async def apply_update(
    session: AsyncSession,
    *,
    actor: Actor,
    resource: T,
    kind: str,
    changes: dict[str, Any],
    budgets: list[BudgetInput] | None = None,
) -> T:
    """Set the changed attributes and log them; an update that changes nothing logs nothing."""
    changed: dict[str, Any] = {}
    for attr, value in changes.items():
        if value is UNSET or getattr(resource, attr) == value:
            continue
        setattr(resource, attr, value)
        changed[attr] = value
    if budgets is not None:
        existing = (
            await session.execute(
                select(ProjectedBudget.organization, ProjectedBudget.currency, ProjectedBudget.value)
                .where(ProjectedBudget.resource_id == resource.id)
                .order_by(ProjectedBudget.organization, ProjectedBudget.currency)
            )
        ).all()
        wanted = sorted((b.organization, b.currency, b.value) for b in budgets)
        if [tuple(r) for r in existing] != wanted:
            await projected.replace(session, resource.id, budgets)
            changed["projected_budgets"] = projected.snapshot(budgets)
    if changed:
        await activity.record(
            session,
            kind=kind,
            actor_id=actor.user_id,
            about=resource,
            # a date (dueDate, billingDate) as ISO text: the entry's data is JSON
            data={_camel(k): v.isoformat() if isinstance(v, date) else v for k, v in changed.items()},
        )
    return resource


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


async def _open_for_change(session: AsyncSession, actor: Actor, model: type[T], id: str, verb: str) -> T:
    """Lock an open project or subproject and check the actor may ``verb`` it."""
    what = "project" if model is Project else "subproject"
    resource = await lock(session, model, id, what=what)
    await permissions.require(session, actor=actor, resource_id=id, intent=f"{what}.{verb}", what=what)
    _require_open(resource, what)  # type: ignore[arg-type]
    return resource


async def update_project(
    session: AsyncSession,
    *,
    actor: Actor,
    id: str,
    display_name: Any = UNSET,
    description: Any = UNSET,
    tags: Any = UNSET,
    additional_data: Any = UNSET,
    projected_budgets: list[BudgetInput] | None = None,
) -> Project:
    project = await _open_for_change(session, actor, Project, id, "update")
    return await apply_update(
        session,
        actor=actor,
        resource=project,
        kind="project_updated",
        changes=_common_changes(display_name, description, tags, additional_data),
        budgets=None if projected_budgets is None else projected.checked(projected_budgets),
    )


async def update_subproject(
    session: AsyncSession,
    *,
    actor: Actor,
    id: str,
    display_name: Any = UNSET,
    description: Any = UNSET,
    tags: Any = UNSET,
    additional_data: Any = UNSET,
    projected_budgets: list[BudgetInput] | None = None,
) -> Subproject:
    subproject = await _open_for_change(session, actor, Subproject, id, "update")
    return await apply_update(
        session,
        actor=actor,
        resource=subproject,
        kind="subproject_updated",
        changes=_common_changes(display_name, description, tags, additional_data),
        budgets=None if projected_budgets is None else projected.checked(projected_budgets),
    )


def _common_changes(display_name: Any, description: Any, tags: Any, additional_data: Any) -> dict[str, Any]:
    return {
        "display_name": UNSET if display_name is UNSET else validation.require_text(display_name, "displayName"),
        "description": UNSET if description is UNSET else validation.optional_text(description, "description"),
        "tags": UNSET if tags is UNSET else validation.tags(tags),
        "additional_data": UNSET
        if additional_data is UNSET
        else validation.json_object(additional_data, "additionalData"),
    }


async def assign_project(session: AsyncSession, *, actor: Actor, id: str, assignee_id: str) -> Project:
    project = await _open_for_change(session, actor, Project, id, "assign")
    party = await check_party(session, assignee_id, "assigneeId")
    return await apply_update(
        session, actor=actor, resource=project, kind="project_assigned", changes={"assignee_id": party}
    )


async def assign_subproject(session: AsyncSession, *, actor: Actor, id: str, assignee_id: str) -> Subproject:
    subproject = await _open_for_change(session, actor, Subproject, id, "assign")
    party = await check_party(session, assignee_id, "assigneeId")
    return await apply_update(
        session, actor=actor, resource=subproject, kind="subproject_assigned", changes={"assignee_id": party}
    )


async def set_subproject_validator(
    session: AsyncSession, *, actor: Actor, id: str, validator_id: str | None
) -> Subproject:
    """Name the subproject's validator (a user or group; None: none), whom a workflow's
    ``subproject_validator`` assignee rule gives a role when the role is first needed (a role
    already played keeps its players). Needs subproject.assign, as its assignee does; logged
    as an edit."""
    subproject = await _open_for_change(session, actor, Subproject, id, "assign")
    party = await check_party(session, validator_id, "validatorId")
    return await apply_update(
        session, actor=actor, resource=subproject, kind="subproject_updated", changes={"validator_id": party}
    )


async def close_project(session: AsyncSession, *, actor: Actor, id: str) -> Project:
    project = await _open_for_change(session, actor, Project, id, "close")
    open_children = await session.scalar(
        select(func.count()).select_from(Subproject).where(Subproject.project_id == id, Subproject.status == "OPEN")
    )
    if open_children:
        raise DomainError(
            ErrorCode.OPEN_CHILDREN, f"The project has {open_children} open subproject(s); close them first."
        )
    return await apply_update(
        session, actor=actor, resource=project, kind="project_closed", changes={"status": "CLOSED"}
    )


async def close_subproject(session: AsyncSession, *, actor: Actor, id: str) -> Subproject:
    subproject = await _open_for_change(session, actor, Subproject, id, "close")
    open_items = await session.scalar(
        select(func.count())
        .select_from(WorkflowItem)
        .join(Case, Case.object_id == WorkflowItem.id)
        .where(WorkflowItem.subproject_id == id, Case.status.in_(OPEN_CASE_STATUSES))
    )
    if open_items:
        raise DomainError(
            ErrorCode.OPEN_CHILDREN, f"The subproject has {open_items} open workflow item(s); close them first."
        )
    return await apply_update(
        session, actor=actor, resource=subproject, kind="subproject_closed", changes={"status": "CLOSED"}
    )
