"""The intents of each kind of resource, and how a grant's intent maps onto the kinds below.

A grant that reaches down (engine/people/inheritance.py) holds on a descendant the intent with
the same suffix: ``project.view`` is ``subproject.view`` on its subprojects and
``workflowItem.view`` on their items; an intent whose suffix the lower kind lacks
(``project.createSubproject``, ``subproject.createWorkflowItem``, ``subproject.close`` on items)
reaches nothing there. Plain data and string functions: both permissions and inheritance build
on them.
"""

from models import kind_of

GLOBAL = "global"
GLOBAL_INTENTS = ("global.createProject", "global.createUser", "global.createGroup", "global.defineWorkflow")
_RESOURCE_SUFFIXES = (
    "view",
    "viewHistory",
    "update",
    "assign",
    "close",
    "intent.listPermissions",
    "intent.grantPermission",
    "intent.revokePermission",
)
PROJECT_INTENTS = tuple(f"project.{s}" for s in (*_RESOURCE_SUFFIXES, "createSubproject"))
SUBPROJECT_INTENTS = tuple(
    f"subproject.{s}" for s in (*_RESOURCE_SUFFIXES, "createWorkflowItem", "reorderWorkflowItems")
)
WORKFLOW_ITEM_INTENTS = tuple(f"workflowItem.{s}" for s in _RESOURCE_SUFFIXES if s != "close")
INTENTS_BY_KIND = {
    "Project": PROJECT_INTENTS,
    "Subproject": SUBPROJECT_INTENTS,
    "WorkflowItem": WORKFLOW_ITEM_INTENTS,
}
PREFIX_BY_KIND = {"Project": "project", "Subproject": "subproject", "WorkflowItem": "workflowItem"}
_KIND_BY_PREFIX = {prefix: kind for kind, prefix in PREFIX_BY_KIND.items()}
# The intents whose last holder cannot be revoked, one per kind of resource.
GRANT_INTENTS = tuple(f"{prefix}.intent.grantPermission" for prefix in PREFIX_BY_KIND.values())
# Each kind's ancestors, nearest first, with the column of its row that names each one.
ANCESTORS: dict[str, tuple[tuple[str, str], ...]] = {
    "Project": (),
    "Subproject": (("Project", "project_id"),),
    "WorkflowItem": (("Subproject", "subproject_id"), ("Project", "project_id")),
}


def intents_for(resource_id: str) -> tuple[str, ...]:
    if resource_id == GLOBAL:
        return GLOBAL_INTENTS
    return INTENTS_BY_KIND.get(kind_of(resource_id) or "", ())


def intent_prefix(resource_id: str) -> str:
    return PREFIX_BY_KIND[kind_of(resource_id) or ""]


def kind_of_intent(intent: str) -> str | None:
    return _KIND_BY_PREFIX.get(intent.partition(".")[0])


def counterpart(intent: str, kind: str) -> str | None:
    """The intent of ``kind`` with the suffix of ``intent`` (None: ``kind`` has none)."""
    mapped = f"{PREFIX_BY_KIND[kind]}.{intent.partition('.')[2]}"
    return mapped if mapped in INTENTS_BY_KIND[kind] else None


def reaching(intent: str) -> list[tuple[str, str]]:
    """(ancestor kind, its intent) of each grant above that, reaching down, holds ``intent``."""
    kind = kind_of_intent(intent)
    if kind is None:
        return []
    found = [(above, counterpart(intent, above)) for above, _ in ANCESTORS[kind]]
    return [(above, source) for above, source in found if source is not None]
