"""The activity log as clients read it."""

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import strawberry

from resolvers import case_fields as field_reads
from resolvers import sentences as sentence_reads
from resolvers.loaders import one
from resolvers.pagination import Page
from schema.base import JSON, AppInfo, Connection, Node, by_id_prefix, connection
from schema.execution import context_only
from schema.identity import Party

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
    action: str | None = strawberry.field(description="Short name of the action executed, if any.")
    via: str | None = strawberry.field(
        description="The name of the API token the actor acted through (createApiToken); null when they acted "
        "otherwise (signed in, or the system)."
    )

    is_type_of = by_id_prefix("Activity")

    @strawberry.field(
        description="Key/value data of the entry; data.fields, the case fields an action changed ({name: {from, "
        "to}}), leaves out those the case's state hides from you."
    )
    @context_only
    def data(self, info: AppInfo) -> JSON:
        return field_reads.entry_data(info.context, self)

    @strawberry.field(
        description="The entry in one sentence: its action's log_title filled in when written, else for an executed "
        'action its past tense and who ("Approved by Alice Analyst"); null for other entries.'
    )
    @context_only
    def title(self, info: AppInfo) -> str | None:
        return field_reads.title(info.context, self)

    @strawberry.field(
        description="The entry in words for you, whatever its kind: who did what to which item, with the "
        "workflow's names, money in its currency and dates in your time zone (setNotificationDelivery's "
        'timeZone): "Alice Analyst submitted Office chairs (now Submitted)". What happened, as a history '
        "records it (Notification.sentence addresses you). docs/messages.md says how each kind reads."
    )
    @context_only
    def sentence(self, info: AppInfo) -> str:
        return sentence_reads.entry_sentence(info.context, self)

    @strawberry.field(
        description="SHA-256 over this entry and the previous entry's hash; null when the entry records changes "
        "of case fields hidden from you (the hash would let a guess of a hidden value be tested)."
    )
    @context_only
    def hash(self, info: AppInfo) -> str | None:
        return field_reads.sealed(info.context, self, self.hash)

    @strawberry.field(description="The previous entry's hash in the chain; null as `hash` is.")
    @context_only
    def prev_hash(self, info: AppInfo) -> str | None:
        return field_reads.sealed(info.context, self, self.prev_hash)

    # Related rows through ``one``: answered at once when the loader already has them (a live
    # event's subscribers start with them, resolvers/live.py), else loaded.
    @strawberry.field(description="Who did it; null for the system (timers, automatic actions).")
    @context_only
    def actor(self, info: AppInfo) -> Annotated["User", strawberry.lazy("schema.identity")] | None:
        actor_id = self.actor_id  # type: ignore[attr-defined]
        if not actor_id or actor_id == "system":
            return None
        return one(info.context.loaders.party_by_id, actor_id)

    @strawberry.field(
        description="The absent user the actor stood in for as their deputy (setDeputy); null when the actor acted "
        "for themselves."
    )
    @context_only
    def on_behalf_of(self, info: AppInfo) -> Party | None:
        return one(info.context.loaders.party_by_id, getattr(self, "on_behalf_of", None))

    @strawberry.field
    @context_only
    def project(self, info: AppInfo) -> Annotated["Project", strawberry.lazy("schema.project")] | None:
        return one(info.context.loaders.project_by_id, self.project_id)  # type: ignore[attr-defined]

    @strawberry.field
    @context_only
    def subproject(self, info: AppInfo) -> Annotated["Subproject", strawberry.lazy("schema.project")] | None:
        return one(info.context.loaders.subproject_by_id, self.subproject_id)  # type: ignore[attr-defined]

    @strawberry.field
    @context_only
    def workflow_item(self, info: AppInfo) -> Annotated["WorkflowItem", strawberry.lazy("schema.item")] | None:
        return one(info.context.loaders.item_by_id, self.workflow_item_id)  # type: ignore[attr-defined]


@strawberry.input
class HistoryFilter:
    kind: str | None = None
    actor: strawberry.ID | None = None
    from_: datetime | None = strawberry.field(name="from", default=None)
    to: datetime | None = None


@strawberry.type(description="A page of log entries, oldest first: `first` defaults to 20 and is at most 100.")
class ActivityConnection(Connection[Activity]):
    archived: str | None = strawberry.field(
        default=None,
        description="Where the oldest entries went, when they were archived (caseway archive-history): a sentence "
        "on the page that starts where the entries kept in the database begin (no `after`, or the cursor of an "
        "archived entry); null on every other page, and when nothing of this history is archived.",
    )


def activity_connection(page: Page[Activity], archived: str | None) -> ActivityConnection:
    plain = connection(page)
    return ActivityConnection(
        edges=plain.edges, page_info=plain.page_info, total_count=plain.total_count, archived=archived
    )
