"""SQL conditions for "the viewer may see this row" (DESIGN §5), in one place."""

from sqlalchemy import ColumnElement, String, cast, exists, func, or_, true

from engine.actors import Actor
from engine.permissions import visible_filter
from models import Case, CaseRoleParty, Project, Subproject, WorkflowItem


def project_visible(actor: Actor) -> ColumnElement[bool]:
    return visible_filter(Project.id, "project.view", actor)


def subproject_visible(actor: Actor) -> ColumnElement[bool]:
    return visible_filter(Subproject.id, "subproject.view", actor)


def item_visible(actor: Actor) -> ColumnElement[bool]:
    """A grant of workflowItem.view, or a role in the item's case."""
    if actor.is_admin:
        return true()
    in_role = exists().where(
        Case.object_id == WorkflowItem.id,
        CaseRoleParty.case_id == Case.id,
        CaseRoleParty.party_id.in_(actor.party_ids),
    )
    return or_(visible_filter(WorkflowItem.id, "workflowItem.view", actor), in_role)


def has_tag(column: ColumnElement[object], tag: str) -> ColumnElement[bool]:
    """Tags are a JSON list of strings: match the quoted element in its text form."""
    escaped = tag.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_").replace('"', '\\\\"')
    return cast(column, String).like(f'%"{escaped}"%', escape="\\")


def name_contains(column: ColumnElement[str], text: str) -> ColumnElement[bool]:
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return func.lower(column).like(f"%{escaped}%", escape="\\")
