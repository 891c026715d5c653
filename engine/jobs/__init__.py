"""Durable jobs (docs/workflows.md, "Jobs"): side effects that leave the database.

- ``outbox``: spec-declared jobs written in the action's transaction.
- ``records``: the job state machine, claims, outcomes, ``retry``/``resume``.
- ``policy``: retries with exponential backoff and full jitter.
- ``kinds``: what each kind does (``JobKind``, ``Transient``, ``Permanent``), the registry.
- ``webhook``: the built-in kind.

The runner that commits around handlers lives in ``server/job_runs.py`` (one job) and
``server/job_runner.py`` (the background task).
"""

from engine.jobs import webhook
from engine.jobs.kinds import (
    JobCall,
    JobError,
    JobKind,
    Permanent,
    Plan,
    Reconciled,
    Transient,
    job_kinds,
    policy_for,
    register_job_kind,
    set_policy,
)
from engine.jobs.outbox import check_job, enqueue
from engine.jobs.policy import DEFAULT_POLICY, RetryPolicy

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
    "check_job",
    "enqueue",
    "job_kinds",
    "policy_for",
    "register_job_kind",
    "set_policy",
    "webhook",
]
