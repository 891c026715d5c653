"""Cases, enabled actions and roles as clients read them."""

from datetime import date, datetime
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import strawberry

from engine.cases.assignment import PICK_LIST_CASES, PICK_LIST_LENGTH
from engine.spec.specs import RoleSpec
from resolvers import case_fields as field_reads
from resolvers import cases as case_reads
from resolvers import due_dates, resources
from resolvers.job_loads import CASE_JOBS
from resolvers.loaders import PickListKey, one
from resolvers.lookahead import selects
from schema.activity import ActivityConnection, activity_connection
from schema.base import JSON, AppInfo, Connection, Node, by_id_prefix, connection
from schema.execution import context_only
from schema.identity import Party
from schema.limits import MAX_ITEMS
from schema.workflow import Action, Role, State, Workflow

if TYPE_CHECKING:
    from schema.item import WorkflowItem
    from schema.job import Job


@strawberry.enum(
    description="COMPLETED cases can still be reopened by an action that leaves the terminal state; SUSPENDED ones "
    "run nothing until resumed (by resumeCase or at suspendedUntil); CANCELED is final. The item of a COMPLETED or "
    "CANCELED case is CLOSED."
)
class CaseStatus(Enum):
    ACTIVE = "ACTIVE"
    COMPLETED = "COMPLETED"
    CANCELED = "CANCELED"
    SUSPENDED = "SUSPENDED"


@strawberry.enum(
    description="The order of myTasks: ENABLED, oldest first (the default); DUE_DATE, soonest due first, "
    "those without a due date last."
)
class TaskOrder(Enum):
    ENABLED = "ENABLED"
    DUE_DATE = "DUE_DATE"


@strawberry.enum(
    description="Where an action instance is: ENABLED (waiting), COMPLETED (executed), CANCELED (no longer enabled, "
    "or its case canceled), REFUSED (its enable conditions or enabled_when said no at the latest change)."
)
class EnabledActionStatus(Enum):
    ENABLED = "ENABLED"
    COMPLETED = "COMPLETED"
    CANCELED = "CANCELED"
    REFUSED = "REFUSED"


@strawberry.type(description="One enabled instance of an action (DYNAMIC children make several of one action).")
class EnabledAction:
    id: strawberry.ID
    fire_at: datetime | None = strawberry.field(description="When a timer fires this instance, if it has one.")
    enabled_at: datetime
    status: EnabledActionStatus = strawberry.field(description="ENABLED until it is executed, canceled or refused.")
    completed_at: datetime | None = strawberry.field(
        description="When it was executed or canceled (for a REFUSED one, its latest refusal)."
    )

    is_type_of = by_id_prefix("EnabledAction")

    @strawberry.field
    @context_only
    def action(self, info: AppInfo) -> Action:
        return case_reads.action(info.context, self)  # type: ignore[arg-type]

    @strawberry.field(description="Who executed it (COMPLETED); null for the system (timers, automatic actions).")
    @context_only
    def executed_by(self, info: AppInfo) -> Party | None:
        executor = getattr(self, "executed_by", None)
        return None if executor in (None, "system") else one(info.context.loaders.party_by_id, executor)

    @strawberry.field(description="Who is expected to act: the instance's assignee, or its assigned role's players.")
    @context_only
    def assignees(self, info: AppInfo) -> list[Party]:
        return case_reads.assignees(info.context, self)  # type: ignore[arg-type]

    @strawberry.field(
        description="The instance this one is a child of: the WORKFLOW or PARALLEL parent, or the DYNAMIC parent's "
        "instance for one party (itself a child of the parent); null at the top level."
    )
    @context_only
    async def parent(self, info: AppInfo) -> "EnabledAction | None":
        pid = self.parent_id  # type: ignore[attr-defined]
        return await info.context.loaders.enabled_action_by_id.load(pid) if pid else None

    @strawberry.field(
        description="In myTasks, the absent user whose task this is when you stand in for them as their deputy "
        "(executing it is logged as on their behalf); null for your own tasks, and outside myTasks."
    )
    @context_only
    def on_behalf_of(self, info: AppInfo) -> Party | None:
        return one(info.context.loaders.party_by_id, getattr(self, "on_behalf_of", None))

    @strawberry.field(
        name="case",
        description="Its case; null when you may not see the case's workflow item (a task assigned to you "
        "straight, without a grant or a role in the case).",
    )
    @context_only
    async def case_(self, info: AppInfo) -> Annotated["Case", strawberry.lazy("schema.case")] | None:
        return await case_reads.case_of(info.context, self)  # type: ignore[arg-type]

    @strawberry.field(description="The due date of its workflow item, if it has one.")
    @context_only
    def due_date(self, info: AppInfo) -> date | None:
        return due_dates.due_date(info.context, self)  # type: ignore[no-any-return]

    @strawberry.field(description="Still waiting after its item's due date has passed (the date's end, UTC).")
    @context_only
    def overdue(self, info: AppInfo) -> bool:
        return due_dates.overdue(info.context, self)  # type: ignore[no-any-return]


@strawberry.type(
    description="One FSM scope of a case: the top level, or the child workflow of a WORKFLOW action (or of one "
    "DYNAMIC instance), finished ones included."
)
class CaseScope:
    state: State
    status: CaseStatus = strawberry.field(
        description="The top level's is its case's; a child scope is ACTIVE while it runs, COMPLETED in a terminal "
        "state (or once its parent fired), CANCELED when its parent was disabled or fired before it completed."
    )

    @strawberry.field(description="The enabled instance that owns this scope; null for the top level.")
    @context_only
    async def parent(self, info: AppInfo) -> EnabledAction | None:
        scope = self.scope  # type: ignore[attr-defined]
        return await info.context.loaders.enabled_action_by_id.load(scope) if scope else None


def _case_scope(scope: str, state: Any, status: str) -> CaseScope:
    result = CaseScope(state=state, status=CaseStatus(status))
    result.scope = scope  # type: ignore[attr-defined]
    return result


@strawberry.type
class CaseRole:
    role: Role

    @strawberry.field
    @context_only
    def assignees(self, info: AppInfo) -> list[Party]:
        return case_reads.parties(info.context, self.party_ids)  # type: ignore[attr-defined]

    @strawberry.field(
        description=f"Likely assignees, at most {PICK_LIST_LENGTH}: the parties who played this role in the "
        f"newest {PICK_LIST_CASES} other cases of the workflow (any version), those you may view, most often "
        "first, then the role's allowed parties.",
        metadata={MAX_ITEMS: PICK_LIST_LENGTH},
    )
    @context_only
    async def pick_list(self, info: AppInfo) -> list[Party]:
        loaders = info.context.loaders
        case = self.case  # type: ignore[attr-defined]
        ids = await loaders.pick_list_by_case_role.load(PickListKey(case.id, case.workflow_id, self.role.short_name))
        return [p for p in await loaders.party_by_id.load_many(ids) if p is not None]


def _case_role(role: RoleSpec, party_ids: list[str], case: Any) -> CaseRole:
    result = CaseRole(role=role)  # type: ignore[arg-type]
    result.party_ids = party_ids  # type: ignore[attr-defined]
    result.case = case  # type: ignore[attr-defined]
    return result


@strawberry.type(description="A workflow in action for one workflow item.")
class Case(Node):
    status: CaseStatus
    version: int = strawberry.field(description="Grows by one with every change; pass it as expectedVersion.")
    suspended_until: datetime | None = strawberry.field(
        description="When a SUSPENDED case resumes by itself; null if it is not suspended, or suspended indefinitely."
    )
    created_at: datetime

    is_type_of = by_id_prefix("Case")

    @strawberry.field
    @context_only
    async def workflow(self, info: AppInfo) -> Workflow:
        return await info.context.loaders.workflow_by_id.load(self.workflow_id)  # type: ignore[attr-defined]

    @strawberry.field
    @context_only
    async def workflow_item(self, info: AppInfo) -> Annotated["WorkflowItem", strawberry.lazy("schema.item")] | None:
        return await info.context.loaders.item_by_id.load(self.object_id)  # type: ignore[attr-defined]

    @strawberry.field(description="The top-level state.")
    @context_only
    def state(self, info: AppInfo) -> State:
        return case_reads.state(info.context, self)  # type: ignore[arg-type]

    @strawberry.field(description="The top-level state, then one per running child workflow (see scopes).")
    @context_only
    def states(self, info: AppInfo) -> list[State]:
        return case_reads.states(info.context, self)  # type: ignore[arg-type]

    @strawberry.field(description="Every FSM scope: the top level first, then each child workflow, finished or not.")
    @context_only
    def scopes(self, info: AppInfo) -> list[CaseScope]:
        return case_reads.scopes(info.context, self, _case_scope)  # type: ignore[arg-type]

    @strawberry.field(
        description="The case's enabled USER actions, whoever may perform them. A SUSPENDED case keeps its enabled "
        "set, which it resumes with, so they are listed though none can run until the case is resumed (myActions "
        "and myTasks list only what can run now); a CANCELED case has none."
    )
    @context_only
    def enabled_actions(self, info: AppInfo) -> list[EnabledAction]:
        return case_reads.enabled_actions(info.context, self)  # type: ignore[arg-type]

    @strawberry.field(
        description="Pending timers: the enabled instances with a fireAt, soonest first, of every kind of action "
        "(a TIME or AUTO action's too, which enabledActions does not list)."
    )
    @context_only
    def timers(self, info: AppInfo) -> list[EnabledAction]:
        return case_reads.timers(info.context, self)  # type: ignore[arg-type]

    @strawberry.field(description="The enabled actions you may perform now: none while the case is SUSPENDED.")
    @context_only
    def my_actions(self, info: AppInfo) -> list[EnabledAction]:
        return case_reads.my_actions(info.context, self)  # type: ignore[arg-type]

    @strawberry.field(
        description="The case's fields (its workflow's fields) with a value, by name, that you may see: those its "
        "state hides are left out, but for admins and the roles the state names. An amount is {amount, currency}."
    )
    @context_only
    def fields(self, info: AppInfo) -> JSON:
        return field_reads.fields(info.context, self)

    @strawberry.field(
        description="Every instance of the case's actions, oldest first, whatever its status (ENABLED, COMPLETED, "
        "CANCELED, REFUSED), automatic ones too; status narrows it."
    )
    async def action_history(
        self,
        info: AppInfo,
        first: int | None = None,
        after: str | None = None,
        status: EnabledActionStatus | None = None,
    ) -> Connection[EnabledAction]:
        page = await field_reads.action_history(
            info.context, self, first=first, after=after, status=status.value if status else None
        )
        return connection(page)

    @strawberry.field(description="Every role of the workflow with who plays it in this case.")
    @context_only
    def roles(self, info: AppInfo) -> list[CaseRole]:
        return case_reads.roles(info.context, self, _case_role)  # type: ignore[arg-type]

    @strawberry.field(
        description=f"The case's jobs (side effects that leave the database), newest first, at most {CASE_JOBS}, "
        "if you may read its log (viewHistory, or a role in the case); jobs(caseId:) pages through all of them."
    )
    @context_only
    async def jobs(self, info: AppInfo) -> list[Annotated["Job", strawberry.lazy("schema.job")]]:
        return await info.context.loaders.jobs_by_case.load(self.id)

    @strawberry.field(
        description="The log of this case's workflow item, oldest first: the entries you may read (viewHistory, "
        "or a role in this case)."
    )
    async def log(self, info: AppInfo, first: int | None = None, after: str | None = None) -> ActivityConnection:
        item_id = self.object_id  # type: ignore[attr-defined]
        counted = selects(info, "totalCount")
        page = await resources.history(info.context, item_id, first=first, after=after, counted=counted)
        archived = await resources.archived(info.context, item_id, after=after) if selects(info, "archived") else None
        return activity_connection(page, archived)
