"""The case machinery: a case's own state machine, from starting it to executing an action,
and what runs on cases: timers, the lifecycle, reminders, items (which start cases).

- ``execution``: start a case, list and execute its actions (the public verbs, exported here),
  with ``idempotency`` (a retried request answered once) and ``refusals`` (why an action cannot
  run, said so it can be fixed);
- ``context``: everything an operation needs about one case, loaded once, and new instances;
- ``transitions``: firing an instance, recomputing what is enabled, automatic actions;
- ``children``, ``scopes``, ``quorum``: child workflows, the scopes they run in, and when a
  parent's condition holds;
- ``actions`` (executeAction's whole input), ``assignment``, ``conditions``, ``side_effects``,
  ``lifecycle``, ``timers``, ``reminders``, ``items``, ``task_index``, ``job_entries``.

They import one way: ``execution`` -> ``transitions`` -> ``children`` -> ``context``, with
``transitions`` handing ``children`` the functions to recurse through (tests/test_layers.py).
The wing sits above people, history, jobs, spec, notify, tree and documents; migration builds on it.
"""

from engine.cases.execution import (
    EXECUTABLE_STATUSES,
    ExecutionResult,
    enabled_instances,
    execute,
    get_enabled_actions,
    get_user_actions,
    may_perform,
    preview,
    start_case,
)
from engine.cases.idempotency import request_hash

# The verbs above, and the modules the other wings (and resolvers/, schema/, server/) may import;
# the others (execution, idempotency, refusals, children, quorum) are this wing's own
# (tests/test_layers.py).
__all__ = [
    "EXECUTABLE_STATUSES",
    "ExecutionResult",
    "actions",
    "assignment",
    "case_fields",
    "conditions",
    "context",
    "enabled_instances",
    "execute",
    "get_enabled_actions",
    "get_user_actions",
    "insight_figures",
    "insights",
    "items",
    "job_entries",
    "lifecycle",
    "may_perform",
    "preview",
    "reminders",
    "request_hash",
    "scopes",
    "side_effects",
    "start_case",
    "task_index",
    "timers",
    "transitions",
]
