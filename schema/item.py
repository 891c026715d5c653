"""Workflow items as clients read them."""

from datetime import date, datetime
from typing import TYPE_CHECKING, Annotated

import strawberry

from engine.documents.records import MAX_DOCUMENTS_PER_ITEM
from engine.tree.item_status import item_status
from resolvers.loaders import one, with_loaded
from schema.base import JSON, AppInfo, Node, by_id_prefix
from schema.document import Document
from schema.execution import context_only
from schema.limits import MAX_ITEMS
from schema.project import ResourceFields, ResourceStatus, Subproject

if TYPE_CHECKING:
    from schema.case import Case


@strawberry.type(description="One case of work (and money) in a subproject, moving through its workflow.")
class WorkflowItem(ResourceFields, Node):
    display_name: str
    description: str
    created_at: datetime
    due_date: date | None
    amount_type: str = strawberry.field(description="N/A, ALLOCATED or DISBURSED.")
    amount: str | None = strawberry.field(description="A decimal written as a string.")
    currency: str | None
    exchange_rate: str | None
    billing_date: date | None
    reject_reason: str | None
    tags: list[str]
    additional_data: JSON

    is_type_of = by_id_prefix("WorkflowItem")

    @strawberry.field(
        description="OPEN while the case is active or suspended, CLOSED once it completed or was canceled."
    )
    @context_only
    def status(self, info: AppInfo) -> ResourceStatus:
        return with_loaded([(info.context.loaders.case_by_item, self.id)], _status)

    @strawberry.field
    @context_only
    async def subproject(self, info: AppInfo) -> Subproject | None:
        return await info.context.loaders.subproject_by_id.load(self.subproject_id)  # type: ignore[attr-defined]

    @strawberry.field(
        description=f"Attached files, oldest first, removed ones included; at most {MAX_DOCUMENTS_PER_ITEM}.",
        metadata={MAX_ITEMS: MAX_DOCUMENTS_PER_ITEM},
    )
    @context_only
    async def documents(self, info: AppInfo) -> list[Document]:
        return await info.context.loaders.documents_by_item.load(self.id)

    @strawberry.field(name="case", description="The workflow case of this item.")
    @context_only
    def case_(self, info: AppInfo) -> Annotated["Case", strawberry.lazy("schema.case")]:
        return one(info.context.loaders.case_by_item, self.id)


def _status(case: object) -> ResourceStatus:
    return ResourceStatus(item_status(None if case is None else case.status))  # type: ignore[attr-defined]
