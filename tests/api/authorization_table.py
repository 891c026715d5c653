"""The authorization matrix (issue 27): who may run each mutation and see each kind of `node`.

One row per mutation of schema/schema.graphql (tests/api/test_authorization_matrix.py fails
when the schema has a mutation this table lacks, or the table names one the schema dropped).
A row says how to build the mutation's `input` from a `Scene` and which actors it is done for;
the others get NOT_FOUND (they may not see the target: hidden ≡ missing) or
NOT_ALLOWED (they see it but hold no right), and the database must not change for them.

Adding a mutation is a few lines: a `Row(input=..., done=..., hidden=...)` under its name, and,
if it acts on something new, one more field in `Scene` built in `build_scene`.

The actors (each a user of their own, fresh tokens per scene):
- ``owner``  created everything in the scene, so holds every intent on it;
- ``viewer`` holds the ``.view`` intents of the tree (granted on the project before its children
  were made, so copied down), nothing else;
- ``stranger`` holds nothing on the scene's tree (it has a project of its own);
- ``admin``  is an admin who holds no grant: whatever it may do is the admin bypass;
- ``player`` plays the ``assignee`` role in the cases of the bug items (the item's assignee), with
  no grant but ``project.intent.listPermissions`` on P: it sees those items and their log,
  not the project or subproject.
"""

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ACTORS = ("owner", "viewer", "stranger", "admin", "player")

DONE = "DONE"
NOT_ALLOWED = "NOT_ALLOWED"
NOT_FOUND = "NOT_FOUND"

EVERYONE = frozenset(ACTORS)
OWNER_ADMIN = frozenset({"owner", "admin"})
ADMIN = frozenset({"admin"})
# Who may not see a project or subproject of the scene (the player sees only its items).
TREE_HIDDEN = frozenset({"stranger", "player"})
# Who may not see a bug item of the scene (or its case).
ITEM_HIDDEN = frozenset({"stranger"})

_unique = itertools.count(1)


@dataclass
class Scene:
    """The ids a row's input is built from (see ``build_scene``)."""

    ids: dict[str, str]  # actor -> user id
    tokens: dict[str, str]  # actor -> bearer token minted for this scene
    project: str  # owner's project P (the viewer holds project.view)
    empty_project: str  # owner's project E without subprojects (closable)
    subproject: str  # S in P, workflow "bug", ordered items I and I2
    empty_subproject: str  # S2 in P without items (closable)
    item: str  # I in S, assigned to the player: active case, player plays "assignee"
    suspended_item: str  # I2 in S, assigned to the player, its case suspended by the owner
    case: str  # I's case
    activity: str  # the owner's comment on I (an entry of I's log)
    failed_job: str  # a FAILED webhook job of I's case (from the owner's comment)
    stalled_job: str  # a STALLED webhook job of I's case, due in an hour
    group: str  # a group made by the admin, with the victim as its member
    victim: str  # a user, member of the group, with a live token; no grants
    document: str  # a document the owner attached to I
    extra: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def unique(prefix: str) -> str:
        """A name no other call returns (logins, group names, workflow short names)."""
        return f"{prefix}{next(_unique)}"


@dataclass(frozen=True)
class Row:
    """One mutation: ``input(scene)`` its argument; ``done`` the actors it succeeds for;
    ``hidden`` the actors told NOT_FOUND; everyone else is told NOT_ALLOWED."""

    input: Callable[[Scene], dict[str, Any]]
    done: frozenset[str]
    hidden: frozenset[str] = frozenset()
    files: dict[str, tuple[str, bytes]] | None = None  # variable path -> (name, bytes): sent multipart

    def expected(self, actor: str) -> str:
        if actor in self.done:
            return DONE
        return NOT_FOUND if actor in self.hidden else NOT_ALLOWED


def _owned(input: Callable[[Scene], dict[str, Any]], hidden: frozenset[str]) -> Row:
    """A change to the scene's tree: the owner and the admin do it, viewers are not allowed,
    whoever may not see the target is told it does not exist."""
    return Row(input=input, done=OWNER_ADMIN, hidden=hidden)


def _bug_spec(short_name: str) -> dict[str, Any]:
    return {
        "short_name": short_name,
        "states": {"open": {}, "done": {"terminal": True}},
        "actions": {"finish": {"enabled_states": ["open"], "new_state": "done"}},
    }


MUTATIONS: dict[str, Row] = {
    # Identity: anyone logs in and out; admins alone manage users, groups and others' tokens.
    "login": Row(input=lambda s: {"login": "owner", "password": "password123"}, done=EVERYONE),
    "logout": Row(input=lambda s: {"everywhere": False}, done=EVERYONE),
    "revokeToken": Row(input=lambda s: {"userId": s.victim}, done=ADMIN),
    "disableUser": Row(input=lambda s: {"userId": s.victim, "disabled": True}, done=ADMIN),
    "createUser": Row(input=lambda s: {"login": s.unique("newbie"), "password": "password123"}, done=ADMIN),
    "createGroup": Row(input=lambda s: {"name": s.unique("crew")}, done=ADMIN),
    "addGroupMember": Row(input=lambda s: {"groupId": s.group, "userId": s.ids["stranger"]}, done=ADMIN),
    "removeGroupMember": Row(input=lambda s: {"groupId": s.group, "userId": s.victim}, done=ADMIN),
    # The resource tree.
    "createProject": Row(input=lambda s: {"displayName": "Another"}, done=EVERYONE),
    "updateProject": _owned(lambda s: {"id": s.project, "displayName": "Renamed"}, TREE_HIDDEN),
    "assignProject": _owned(lambda s: {"id": s.project, "assigneeId": s.ids["viewer"]}, TREE_HIDDEN),
    "closeProject": _owned(lambda s: {"id": s.empty_project}, TREE_HIDDEN),
    "createSubproject": _owned(
        lambda s: {"projectId": s.project, "displayName": "Walls", "currency": "EUR"}, TREE_HIDDEN
    ),
    "updateSubproject": _owned(lambda s: {"id": s.subproject, "displayName": "Renamed"}, TREE_HIDDEN),
    "assignSubproject": _owned(lambda s: {"id": s.subproject, "assigneeId": s.ids["viewer"]}, TREE_HIDDEN),
    "closeSubproject": _owned(lambda s: {"id": s.empty_subproject}, TREE_HIDDEN),
    "createWorkflowItem": _owned(lambda s: {"subprojectId": s.subproject, "displayName": "Leak"}, TREE_HIDDEN),
    "reorderWorkflowItems": _owned(
        lambda s: {"subprojectId": s.subproject, "ordering": [s.suspended_item, s.item]}, TREE_HIDDEN
    ),
    # Items: the player sees them, so it is told NOT_ALLOWED, not NOT_FOUND.
    "updateWorkflowItem": _owned(lambda s: {"id": s.item, "displayName": "Renamed"}, ITEM_HIDDEN),
    "assignWorkflowItem": _owned(lambda s: {"id": s.item, "assigneeId": s.ids["owner"]}, ITEM_HIDDEN),
    # Grants, on the project.
    "grantPermission": _owned(
        lambda s: {"resourceId": s.project, "intent": "project.view", "partyId": s.ids["stranger"]}, TREE_HIDDEN
    ),
    "revokePermission": _owned(
        lambda s: {"resourceId": s.project, "intent": "project.view", "partyId": s.ids["viewer"]}, TREE_HIDDEN
    ),
    "defineWorkflow": Row(input=lambda s: {"spec": _bug_spec(s.unique("flow"))}, done=ADMIN),
    # Cases: "comment" is allowed to the bug's submitter (the owner) and assignee (the player).
    "executeAction": Row(
        input=lambda s: {"workflowItemId": s.item, "action": "comment", "comment": "seen"},
        done=frozenset({"owner", "admin", "player"}),
        hidden=ITEM_HIDDEN,
    ),
    "reassignRole": _owned(
        lambda s: {"workflowItemId": s.item, "role": "assignee", "partyIds": [s.ids["owner"]]}, ITEM_HIDDEN
    ),
    "suspendCase": _owned(lambda s: {"workflowItemId": s.item}, ITEM_HIDDEN),
    "resumeCase": _owned(lambda s: {"workflowItemId": s.suspended_item}, ITEM_HIDDEN),
    "cancelCase": _owned(lambda s: {"workflowItemId": s.item}, ITEM_HIDDEN),
    # Jobs: workflowItem.update on the job's item (or admin); a job is hidden with its item.
    "retryJob": _owned(lambda s: {"id": s.failed_job}, ITEM_HIDDEN),
    "resumeJob": _owned(lambda s: {"id": s.stalled_job}, ITEM_HIDDEN),
    "runDueTimers": Row(input=lambda s: {}, done=ADMIN),
    # Documents: workflowItem.update on the item (or admin); hidden with their item. addDocument
    # is a multipart request, its file part from ``files``.
    "addDocument": Row(
        input=lambda s: {"workflowItemId": s.item, "file": None},
        done=OWNER_ADMIN,
        hidden=ITEM_HIDDEN,
        files={"input.file": ("receipt.txt", b"paid in full")},
    ),
    "removeDocument": _owned(lambda s: {"id": s.document}, ITEM_HIDDEN),
    # One's own notifications: everyone, on whatever they may see.
    "markNotificationsRead": Row(input=lambda s: {"all": True}, done=EVERYONE),
    # Subscriptions check no target (engine/notifications.py): a hidden id and a made-up one get
    # the same answer, and nothing is delivered until the subscriber may read it.
    "subscribeToNotifications": Row(input=lambda s: {"level": "CASE", "targetId": s.item}, done=EVERYONE),
    "unsubscribeFromNotifications": Row(input=lambda s: {"level": "CASE", "targetId": s.item}, done=EVERYONE),
}


@dataclass(frozen=True)
class NodeRow:
    """``node(id:)`` of one kind: ``id(scene)`` the object; ``seen_by`` the actors it is not
    null for (everyone else gets null, exactly as for an id that does not exist)."""

    id: Callable[[Scene], str]
    seen_by: frozenset[str]


NODES: dict[str, NodeRow] = {
    "Project": NodeRow(id=lambda s: s.project, seen_by=EVERYONE - TREE_HIDDEN),
    "Subproject": NodeRow(id=lambda s: s.subproject, seen_by=EVERYONE - TREE_HIDDEN),
    "WorkflowItem": NodeRow(id=lambda s: s.item, seen_by=EVERYONE - ITEM_HIDDEN),
    "Case": NodeRow(id=lambda s: s.case, seen_by=EVERYONE - ITEM_HIDDEN),
    # A job is seen by whoever sees its item (resolvers/jobs.py).
    "Job": NodeRow(id=lambda s: s.failed_job, seen_by=EVERYONE - ITEM_HIDDEN),
    # A document is seen by whoever sees its item (engine/documents/records.py).
    "Document": NodeRow(id=lambda s: s.document, seen_by=EVERYONE - ITEM_HIDDEN),
    # viewHistory (the owner), a role in the case (the player) or the admin bypass read an
    # entry; workflowItem.view alone does not (engine/visibility.py).
    "Activity": NodeRow(id=lambda s: s.activity, seen_by=frozenset({"owner", "admin", "player"})),
    # Users, groups and workflows are names everyone who is logged in may look up.
    "User": NodeRow(id=lambda s: s.ids["owner"], seen_by=EVERYONE),
    "Group": NodeRow(id=lambda s: s.group, seen_by=EVERYONE),
    "Workflow": NodeRow(id=lambda s: s.extra["workflow"], seen_by=EVERYONE),
}
