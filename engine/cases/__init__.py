"""The case machinery: a case's own state machine, from starting it to executing an action.

- ``execution``: start a case, list and execute its actions (the public verbs, exported here),
  with ``idempotency`` (a retried request answered once) and ``refusals`` (why an action cannot
  run, said so it can be fixed);
- ``context``: everything an operation needs about one case, loaded once, and new instances;
- ``transitions``: firing an instance, recomputing what is enabled, automatic actions;
- ``children``, ``scopes``, ``quorum``: child workflows, the scopes they run in, and when a
  parent's condition holds.

They import one way: ``execution`` -> ``transitions`` -> ``children`` -> ``context``, with
``transitions`` handing ``children`` the functions to recurse through (tests/test_layers.py).
The rest of the engine (timers, lifecycle, items, migration) builds on this package.
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

__all__ = [
    "EXECUTABLE_STATUSES",
    "ExecutionResult",
    "enabled_instances",
    "execute",
    "get_enabled_actions",
    "get_user_actions",
    "may_perform",
    "preview",
    "request_hash",
    "start_case",
]
