"""Which scope of an API token each mutation needs (engine/people/scopes.py says what the scopes
mean). A READ token runs no mutation; an EXECUTE token runs the ones below marked EXECUTE (what an
integration that moves cases along needs: executing actions, with their comments and data, and
attaching documents); a WRITE token runs every mutation its user may.

Declared here once per mutation and checked centrally, before the mutation's resolver runs
(schema/token_scope.py), so a refused mutation changes nothing. A mutation missing from the table
needs WRITE, and tests/api/test_token_scopes.py fails until it is classified.
"""

from graphql import GraphQLError

from engine.errors import ErrorCode
from engine.people import scopes
from engine.people.scopes import Scope
from resolvers.context import Context
from resolvers.errors import UserErrorRow

EXECUTE = Scope.EXECUTE
WRITE = Scope.WRITE

# Mutation (its GraphQL name) -> the scope a token needs to run it.
MUTATION_SCOPES: dict[str, Scope] = {
    "executeAction": EXECUTE,
    "addDocument": EXECUTE,
    **dict.fromkeys(
        (
            "login",
            "logout",
            "revokeToken",
            "disableUser",
            "createUser",
            "updateUser",
            "resetPassword",
            "createGroup",
            "addGroupMember",
            "removeGroupMember",
            "linkIdentity",
            "createApiToken",
            "revokeApiToken",
            "createProject",
            "updateProject",
            "assignProject",
            "closeProject",
            "createSubproject",
            "updateSubproject",
            "assignSubproject",
            "setSubprojectValidator",
            "closeSubproject",
            "createWorkflowItem",
            "updateWorkflowItem",
            "assignWorkflowItem",
            "grantPermission",
            "revokePermission",
            "reorderWorkflowItems",
            "defineWorkflow",
            "migrateCases",
            "retireWorkflow",
            "reassignRole",
            "suspendCase",
            "resumeCase",
            "cancelCase",
            "runDueTimers",
            "retryJob",
            "resumeJob",
            "markNotificationsRead",
            "subscribeToNotifications",
            "unsubscribeFromNotifications",
            "setNotificationDelivery",
            "runDigests",
            "setDeputy",
            "removeDeputy",
            "removeDocument",
        ),
        WRITE,
    ),
}


def refusal(ctx: Context, mutation: str) -> list[UserErrorRow] | None:
    """The userErrors of a mutation the request's token may not run, or None when it may (no
    valid token: the mutation answers as it does without one, UNAUTHENTICATED)."""
    try:
        actor = ctx.viewer
    except GraphQLError:
        return None
    if actor.scope is None:
        return None
    needed = MUTATION_SCOPES.get(mutation, WRITE)
    if scopes.allows(actor, needed):
        return None
    message = f"This API token's scope is {actor.scope}: {mutation} needs a token with {needed}."
    return [UserErrorRow(ErrorCode.TOKEN_SCOPE, message, None)]
