"""The activity log as clients read it."""

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry

from schema.base import JSON, AppInfo, Node, by_id_prefix
from schema.execution import context_only

if TYPE_CHECKING:
    from schema.identity import User
    from schema.item import WorkflowItem
    from schema.project import Project, Subproject


@strawberry.type(description="One entry of the append-only log; `seq` orders all entries and is the cursor.")
class Activity(Node):
    seq: int
    at: datetime
    kind: str
    comment: str | None
    data: JSON
    action: str | None = strawberry.field(description="Short name of the action executed, if any.")
    hash: str = strawberry.field(description="SHA-256 over this entry and the previous entry's hash.")
    prev_hash: str | None

    is_type_of = by_id_prefix("Activity")

    @strawberry.field(description="Who did it; null for the system (timers, automatic actions).")
    @context_only
    async def actor(self, info: AppInfo) -> Annotated["User", strawberry.lazy("schema.identity")] | None:
        if not self.actor_id or self.actor_id == "system":  # type: ignore[attr-defined]
            return None
        return await info.context.loaders.party_by_id.load(self.actor_id)  # type: ignore[attr-defined]

    @strawberry.field
    @context_only
    async def project(self, info: AppInfo) -> Annotated["Project", strawberry.lazy("schema.project")] | None:
        pid = self.project_id  # type: ignore[attr-defined]
        return await info.context.loaders.project_by_id.load(pid) if pid else None

    @strawberry.field
    @context_only
    async def subproject(self, info: AppInfo) -> Annotated["Subproject", strawberry.lazy("schema.project")] | None:
        sid = self.subproject_id  # type: ignore[attr-defined]
        return await info.context.loaders.subproject_by_id.load(sid) if sid else None

    @strawberry.field
    @context_only
    async def workflow_item(self, info: AppInfo) -> Annotated["WorkflowItem", strawberry.lazy("schema.item")] | None:
        iid = self.workflow_item_id  # type: ignore[attr-defined]
        return await info.context.loaders.item_by_id.load(iid) if iid else None


@strawberry.input
class HistoryFilter:
    kind: str | None = None
    actor: strawberry.ID | None = None
    from_: datetime | None = strawberry.field(name="from", default=None)
    to: datetime | None = None
