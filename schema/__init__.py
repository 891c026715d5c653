"""The GraphQL schema: Query, Mutation (and later Subscription) composed from the domain slices."""

import strawberry
from strawberry.extensions import AddValidationRules
from strawberry.schema.config import StrawberryConfig

from engine.migration import migration
from resolvers import cases as case_reads
from resolvers import due_dates, queries
from resolvers.lookahead import selects
from schema import (
    accounts,
    api_token,
    case_mutations,
    delivery,
    deputy,
    document,
    history,
    identity,
    item_mutations,
    job,
    lifecycle,
    notification,
    oidc,
    project_mutations,
    timers,
    version_mutations,
)
from schema import insights as insight_figures
from schema import search as searching
from schema.activity import Activity
from schema.base import SCALAR_MAP, AppInfo, Connection, Node, connection
from schema.case import Case, EnabledAction, TaskOrder
from schema.execution import CasewayExecutor
from schema.identity import Group, User
from schema.input_guard import InputGuard
from schema.item import WorkflowItem
from schema.limits import BoundedWork
from schema.masking import MaskUnexpectedErrors
from schema.project import Project, ProjectFilter, Subproject, filter_key
from schema.runner import Schema
from schema.subscription import Subscription
from schema.token_scope import scoped
from schema.workflow import Workflow, validate_workflow_field

__all__ = ["schema"]


@strawberry.type
class Query:
    @strawberry.field(description="Any object by its global id; null if it does not exist or is not yours to see.")
    async def node(self, info: AppInfo, id: strawberry.ID) -> Node | None:
        return await queries.node(info.context, id)

    @strawberry.field(description="The signed-in user.")
    async def viewer(self, info: AppInfo) -> User:
        return await identity.viewer(info)

    @strawberry.field(description="Projects you may view, oldest first.")
    async def projects(
        self, info: AppInfo, first: int | None = None, after: str | None = None, filter: ProjectFilter | None = None
    ) -> Connection[Project]:
        counted = selects(info, "totalCount")
        page = await queries.projects(info.context, first=first, after=after, filt=filter_key(filter), counted=counted)
        return connection(page)

    @strawberry.field(description="Every version of every workflow definition.")
    async def workflows(
        self, info: AppInfo, first: int | None = None, after: str | None = None
    ) -> Connection[Workflow]:
        counted = selects(info, "totalCount")
        return connection(await queries.workflows(info.context, first=first, after=after, counted=counted))

    @strawberry.field(
        description="Enabled actions assigned to you (directly or through a role), oldest first; only those of cases "
        "where an action can run now (ACTIVE or COMPLETED, not SUSPENDED or CANCELED). A page costs the same "
        "however many tasks you or anyone has; totalCount, when selected, counts your tasks, so it costs in "
        "proportion to how many you have. orderBy: DUE_DATE puts the soonest due first (overdue ones first of "
        "all: see EnabledAction.overdue), those without a due date last; that order sorts all of your tasks."
    )
    async def my_tasks(
        self, info: AppInfo, first: int | None = None, after: str | None = None, order_by: TaskOrder | None = None
    ) -> Connection[EnabledAction]:
        counted = selects(info, "totalCount")
        if order_by == TaskOrder.DUE_DATE:  # every task of yours sorted: costs as your list is long
            return connection(
                await due_dates.my_tasks_by_due_date(info.context, first=first, after=after, counted=counted)
            )
        return connection(await case_reads.my_tasks(info.context, first=first, after=after, counted=counted))

    users = searching.users_field
    groups = searching.groups_field
    search = searching.search_field
    jobs = strawberry.field(
        resolver=job.jobs_query,
        description="Jobs (side effects run after their action commits) of the items whose log you may read "
        "(viewHistory, or a role in the case), oldest first; admins see all. Filter by state and by case.",
    )
    notifications = strawberry.field(
        resolver=notification.notifications_query, description="Your notifications, newest first."
    )
    verify_history = history.verify_history_field
    validate_workflow = validate_workflow_field
    verify_document = document.verify_document_field
    api_tokens = api_token.api_tokens_field
    insights = insight_figures.insights_field


@scoped  # each mutation checks the request's API token's scope first (schema/token_scope.py)
@strawberry.type
class Mutation:
    login = strawberry.mutation(
        resolver=identity.login,
        description="Exchange a login and password for a bearer token. Failed logins are throttled per login "
        "and per address: answers slow down, then TOO_MANY_ATTEMPTS for a while. Once per request.",
    )
    logout = strawberry.mutation(
        resolver=identity.logout, description="Revoke the token of this request (or all yours); at once everywhere."
    )
    revoke_token = strawberry.mutation(
        resolver=identity.revoke_token, description="Admin: revoke a token by its value, or every token of a user."
    )
    disable_user = strawberry.mutation(
        resolver=identity.disable_user,
        description="Admin: disable a user (no login, no token works, live connections closed) or enable them again.",
    )
    create_user = strawberry.mutation(
        resolver=identity.create_user,
        description="A person (with a password), or a SERVICE user for an integration (no password; API tokens).",
    )
    update_user = strawberry.mutation(
        resolver=accounts.update_user,
        description="Admin: change a user's display name or organization (their email and time zone: "
        "setNotificationDelivery).",
    )
    reset_password = strawberry.mutation(
        resolver=accounts.reset_password,
        description="Admin: give a person a new password; their signed-in sessions end at once (API tokens "
        "keep working).",
    )
    create_api_token = strawberry.mutation(
        resolver=api_token.create_api_token,
        description="A named, scoped API token for a user (yours; anyone's for an admin): its secret is in this "
        "answer alone.",
    )
    revoke_api_token = strawberry.mutation(
        resolver=api_token.revoke_api_token, description="Revoke an API token: it stops working at once."
    )
    create_group = strawberry.mutation(resolver=identity.create_group)
    add_group_member = strawberry.mutation(resolver=identity.add_group_member)
    remove_group_member = strawberry.mutation(resolver=identity.remove_group_member)
    link_identity = strawberry.mutation(
        resolver=oidc.link_identity,
        description="Admin: the identity provider's (issuer, subject) signs in as this user from now on, e.g. a "
        "password user whose login the provider's user has.",
    )
    create_project = strawberry.mutation(resolver=project_mutations.create_project)
    update_project = strawberry.mutation(resolver=project_mutations.update_project)
    assign_project = strawberry.mutation(resolver=project_mutations.assign_project)
    close_project = strawberry.mutation(resolver=project_mutations.close_project)
    create_subproject = strawberry.mutation(resolver=project_mutations.create_subproject)
    update_subproject = strawberry.mutation(resolver=project_mutations.update_subproject)
    assign_subproject = strawberry.mutation(resolver=project_mutations.assign_subproject)
    set_subproject_validator = strawberry.mutation(
        resolver=project_mutations.set_subproject_validator,
        description="Name the subproject's validator (needs subproject.assign), or none. A role a workflow gives "
        "the validator takes the new one when it is first needed; a role already played keeps its players.",
    )
    close_subproject = strawberry.mutation(resolver=project_mutations.close_subproject)
    create_workflow_item = strawberry.mutation(resolver=item_mutations.create_workflow_item)
    update_workflow_item = strawberry.mutation(resolver=item_mutations.update_workflow_item)
    assign_workflow_item = strawberry.mutation(resolver=item_mutations.assign_workflow_item)
    grant_permission = strawberry.mutation(resolver=project_mutations.grant_permission)
    revoke_permission = strawberry.mutation(resolver=project_mutations.revoke_permission)
    reorder_workflow_items = strawberry.mutation(resolver=project_mutations.reorder_workflow_items)
    define_workflow = strawberry.mutation(resolver=case_mutations.define_workflow)
    migrate_cases = strawberry.mutation(
        resolver=version_mutations.migrate_cases,
        description="Move running cases to another version of their workflow (a dry run reports, per case, where "
        f"it lands or why not); at most {migration.MAX_CASES} cases per call, endCursor goes on.",
    )
    retire_workflow = strawberry.mutation(
        resolver=version_mutations.retire_workflow,
        description="Retire a workflow version: no new subproject or item may use it; its cases run on.",
    )
    execute_action = strawberry.mutation(resolver=case_mutations.execute_action)
    reassign_role = strawberry.mutation(resolver=case_mutations.reassign_role)
    suspend_case = strawberry.mutation(
        resolver=lifecycle.suspend_case,
        description="Suspend an active case (optionally until a time): no action runs, no timer fires.",
    )
    resume_case = strawberry.mutation(
        resolver=lifecycle.resume_case, description="Resume a suspended case; timers that fell due meanwhile fire."
    )
    cancel_case = strawberry.mutation(
        resolver=lifecycle.cancel_case,
        description="Cancel an active or suspended case for good: it closes its item and nothing reopens it.",
    )
    run_due_timers = strawberry.mutation(
        resolver=timers.run_due_timers_mutation,
        description="Admin: fire the timers due at `now` (default: now), oldest first, each in its own transaction.",
    )
    retry_job = strawberry.mutation(
        resolver=job.retry_job, description="Run a FAILED job again from its first attempt (it becomes PENDING)."
    )
    resume_job = strawberry.mutation(
        resolver=job.resume_job, description="Run a STALLED job now rather than at the end of its backoff."
    )
    mark_notifications_read = strawberry.mutation(resolver=notification.mark_notifications_read)
    subscribe_to_notifications = strawberry.mutation(resolver=notification.subscribe_to_notifications)
    unsubscribe_from_notifications = strawberry.mutation(resolver=notification.unsubscribe_from_notifications)
    set_notification_delivery = strawberry.mutation(
        resolver=delivery.set_notification_delivery,
        description="Choose how notifications reach you: per level IN_APP and/or EMAIL, immediately or as hourly or "
        "daily digests; your email address, time zone and digest hour.",
    )
    run_digests = strawberry.mutation(
        resolver=delivery.run_digests,
        description="Admin: close the digest windows due at `now` (default: now) and queue their emails.",
    )
    add_document = strawberry.mutation(
        resolver=document.add_document,
        description="Attach a file to a workflow item (needs workflowItem.update): a multipart request "
        '(docs/api.md "Documents"). Larger than the server\'s limit: TOO_LARGE, nothing stored.',
    )
    set_deputy = strawberry.mutation(
        resolver=deputy.set_deputy,
        description="Name a deputy who acts for you (or, for an admin, for userId) from `from` until `until`: "
        "they see your tasks in myTasks and may perform them, logged as on your behalf.",
    )
    remove_deputy = strawberry.mutation(
        resolver=deputy.remove_deputy,
        description="End a deputyship now: its absent user, its deputy or an admin.",
    )
    remove_document = strawberry.mutation(
        resolver=document.remove_document,
        description="Mark a document removed (needs workflowItem.update): it stays listed and in the history, "
        "its bytes are kept, and only admins may still download it.",
    )


schema = Schema(
    query=Query,
    mutation=Mutation,
    subscription=Subscription,
    types=[
        Project,
        Subproject,
        WorkflowItem,
        Case,
        Workflow,
        Activity,
        User,
        Group,
        job.Job,
        document.Document,
        deputy.Deputyship,
    ],
    execution_context_class=CasewayExecutor,
    config=StrawberryConfig(scalar_map=SCALAR_MAP),  # our JSON and DateTime scalars (schema/base.py)
    extensions=[
        # Parse with a token limit, check depth, aliases and cost, then validate (schema/limits/).
        # Clients send the same documents over and over: each is parsed and validated once.
        BoundedWork,
        InputGuard,  # after BoundedWork: NUL, lone surrogates, sizes (schema/input_guard.py)
        # At most one login per operation: each is a password check (schema/identity.py).
        lambda: AddValidationRules([identity.OneLoginPerOperation]),
        MaskUnexpectedErrors,
    ],
)
