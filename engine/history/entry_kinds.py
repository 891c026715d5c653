"""Every kind of log entry the engine writes, each with when it is written: the one list that
``activity.record`` holds writers to (a kind not listed here is a programmer's mistake) and that
the sentences of the entries (``engine/notify/sentences.py``) and their tests are generated over,
so a new kind cannot reach the log without a sentence."""

ENTRY_KINDS: dict[str, str] = {
    # resources (engine/tree/resources.py, engine/tree/ordering.py)
    "project_created": "a project was created",
    "project_updated": "a project's fields changed",
    "project_assigned": "a project got another assignee",
    "project_closed": "a project was closed",
    "subproject_created": "a subproject was created",
    "subproject_updated": "a subproject's fields changed",
    "subproject_assigned": "a subproject got another assignee",
    "subproject_closed": "a subproject was closed",
    "workflow_items_reordered": "a subproject's items were put in another order",
    "subproject_workflow_changed": "a subproject's new items take another version of its workflow",
    # items and their cases (engine/cases/)
    "workflow_item_created": "an item was created (its case starts with it)",
    "workflow_item_updated": "an item's fields changed",
    "workflow_item_assigned": "an item got another assignee",
    "action_executed": "an action of a case was executed (the initial one included)",
    "role_assigned": "a case role got its default players",
    "role_reassigned": "someone changed who plays a case role",
    "case_completed": "a case reached a terminal state",
    "case_reopened": "a completed case left its terminal state",
    "case_suspended": "a case was put on hold",
    "case_resumed": "a case on hold was resumed",
    "case_canceled": "a case was canceled",
    "case_migrated": "a case moved to another version of its workflow",
    "timer_failed": "a timer (or a case's scheduled resumption) could not fire; it is tried again",
    "action_reminded": "a waiting action's assignees were reminded",
    "action_escalated": "a waiting action was escalated to a role",
    "workflow_item_due": "an item's due date began",
    "workflow_item_overdue": "an item's due date passed",
    # documents (engine/documents/records.py)
    "document_added": "a document was attached to an item",
    "document_removed": "a document was removed from an item",
    # grants (engine/people/permissions.py)
    "permission_granted": "a party was granted an intent on a resource",
    "permission_revoked": "a party's intent on a resource was revoked",
    # a case's jobs (engine/jobs/records.py, engine/jobs/levers.py)
    "job_completed": "a job of a case completed",
    "job_failed": "a job of a case failed for good",
    "job_stalled": "a job's attempt failed; it is tried again",
    "job_retried": "someone put a job back to run again",
    "job_resumed": "someone resumed a job",
}

__all__ = ["ENTRY_KINDS"]
