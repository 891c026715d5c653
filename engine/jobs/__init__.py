"""Durable jobs (docs/workflows.md, "Jobs"): side effects that leave the database.

- ``outbox``: spec-declared jobs written in the action's transaction.
- ``records``: the job state machine, claims, outcomes, ``retry``/``resume``.
- ``policy``: retries with exponential backoff and full jitter.
- ``kinds``: what each kind does (``JobKind``, ``Transient``, ``Permanent``), the registry.
- ``webhook``: the built-in kind; ``webhook_payload``: what it sends (built by the cases wing).

The wing sits below spec (a spec names job kinds), notify (email is a job kind) and cases (an
action writes its jobs); a job's log entries about its case are handed down to ``records`` by
the cases wing (``engine.cases.job_entries``). ``policy`` is its own detail (its names are
exported here).

The runner that commits around handlers lives in ``server/job_runs.py`` (one job) and
``server/job_runner.py`` (the background task).
"""

from engine.jobs import webhook, webhook_payload
from engine.jobs.kinds import (
    JobCall,
    JobError,
    JobKind,
    Permanent,
    Plan,
    Reconciled,
    Transient,
    app_policies,
    job_kinds,
    policy_for,
    register_job_kind,
    set_policy,
)
from engine.jobs.outbox import check_job, enqueue
from engine.jobs.policy import DEFAULT_POLICY, RetryPolicy

# The names above, and the modules the other wings (and resolvers/, schema/, server/) may import
# (tests/test_layers.py).
__all__ = [
    "DEFAULT_POLICY",
    "JobCall",
    "JobError",
    "JobKind",
    "Permanent",
    "Plan",
    "Reconciled",
    "RetryPolicy",
    "Transient",
    "app_policies",
    "check_job",
    "enqueue",
    "job_kinds",
    "kinds",
    "levers",
    "outbox",
    "policy_for",
    "records",
    "register_job_kind",
    "set_policy",
    "webhook",
    "webhook_payload",
]
