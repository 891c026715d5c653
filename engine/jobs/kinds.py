"""Job kinds: what a job of each kind does, and the registry of them.

A kind is declared once and named in specs (``side_effects: [{"webhook": {...}}]``). The
built-in ``webhook`` registers itself; plugins add kinds through the entry point group
``caseway.jobs`` (each entry point names a ``JobKind`` instance or subclass).

A handler (``JobKind.run``) talks to the outside world and to nothing else: it never opens a
database transaction. It raises ``Transient`` for what may work later (timeouts, refused
connections, 5xx, 429) and ``Permanent`` for what never will (invalid input, 4xx); anything
else it raises counts as transient, its message kept for operators only. It returns the
progress it achieved (merged into the job's append-only ``progress``), and may record a step's
progress before going on with ``JobCall.checkpoint`` (write-ahead for multi-step kinds).
"""

import enum
from collections.abc import Awaitable, Callable, Collection, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

import httpx

from engine.jobs.policy import DEFAULT_POLICY, RetryPolicy


class JobError(Exception):
    """A handler's failure, with a short ``code`` and a ``message`` any viewer of the job may read."""

    recoverable = True

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Transient(JobError):
    """It may work later: the job STALLS and is retried (FAILED once attempts run out)."""


class Permanent(JobError):
    """It will not work as it stands: the job FAILS at once and waits for a person (``retryJob``)."""

    recoverable = False


class Reconciled(enum.StrEnum):
    """What the external system says about a job interrupted mid-run."""

    COMPLETED = "COMPLETED"  # the step happened: the job is done
    RETRY = "RETRY"  # it did not happen, or nobody can tell: run it again (handlers are idempotent)
    FAILED = "FAILED"  # it happened and failed for good


@dataclass
class JobCall:
    """What a handler sees of its job: the immutable input, the progress so far, the attempt
    (1-based), the idempotency key to pass on, the log entry the job came from (as JSON), an
    HTTP client of the runner's, and ``checkpoint(step, progress)``, which commits a step's
    progress before the handler goes on."""

    id: str
    kind: str
    input: Mapping[str, Any]
    progress: dict[str, Any]
    step: str
    attempt: int
    idempotency_key: str
    case_id: str | None  # None: a job of no case (an email)
    entry: Mapping[str, Any]
    http: httpx.AsyncClient
    checkpoint: Callable[[str, dict[str, Any]], Awaitable[None]] = field(repr=False)


@dataclass(frozen=True)
class Plan:
    """A new job's immutable input and its serialization key (None: its own, i.e. unserialized)."""

    input: dict[str, Any]
    serialization_key: str | None


class JobKind:
    """Base of job kinds; subclasses set ``name`` and implement ``run`` (and ``check_args``,
    ``plan``, ``reconcile`` where the defaults do not fit)."""

    name: str = ""
    first_step: str = "run"
    policy: RetryPolicy = DEFAULT_POLICY

    def check_args(self, args: Mapping[str, Any], *, defining: bool) -> list[str]:
        """Problems with the arguments a spec gives this kind (empty: fine). ``defining`` is
        True when a workflow is being defined: then configuration may be checked too; a stored
        definition is only re-read, and must not break when the configuration changes."""
        return [] if not args else [f"{self.name} takes no arguments."]

    def check_workflow(self, args: Mapping[str, Any], *, workflow: str, fields: Collection[str]) -> list[str]:
        """Problems that only the whole workflow being defined shows (its short name, its case
        fields), asked once its spec parsed; empty: fine."""
        return []

    def plan(self, args: Mapping[str, Any], *, case_id: str) -> Plan:
        """The input and serialization key of a job of this kind, made by an action of ``case_id``."""
        return Plan(input=dict(args), serialization_key=f"{self.name}:case:{case_id}")

    def timeout_seconds(self, input: Mapping[str, Any]) -> float:
        """How long a run (or a reconciliation) may take: the runner cancels it then, as a
        transient TIMEOUT. The job's lease is longer by ``records.LEASE_MARGIN``, so a runner
        that keeps to this limit records its outcome before anyone presumes it dead."""
        return 60.0

    async def run(self, call: JobCall) -> dict[str, Any] | None:
        raise NotImplementedError

    async def reconcile(self, call: JobCall) -> Reconciled:
        """Ask the external system whether the interrupted step happened (a recorded checkpoint,
        such as a delivery id, is what to ask about); by default nobody can tell, and the job runs
        again with the same key."""
        return Reconciled.RETRY


_kinds: dict[str, JobKind] = {}
_policies: dict[str, RetryPolicy] = {}  # the process's overrides (``set_policy``: the CLI's commands)
# The overrides of the app whose request or background task is running (a context variable the
# app sets around each of its calls): two apps in one process each keep their own.
_app_policies: ContextVar[Mapping[str, RetryPolicy] | None] = ContextVar("caseway_job_policies", default=None)
_plugins_loaded = False


def register_job_kind(kind: JobKind) -> JobKind:
    _kinds[kind.name] = kind
    return kind


def job_kinds() -> dict[str, JobKind]:
    """Every known kind: the built-ins, then those of plugins (entry point group ``caseway.jobs``)."""
    global _plugins_loaded
    if not _plugins_loaded:
        _plugins_loaded = True  # the built-in kind registered with engine.jobs (its __init__ imports webhook)
        for ep in entry_points(group="caseway.jobs"):
            loaded = ep.load()
            kind = loaded() if isinstance(loaded, type) else loaded
            _kinds.setdefault(ep.name, kind)
    return _kinds


def set_policy(kind: str, policy: RetryPolicy | None) -> None:
    """Override a kind's retry policy (settings ``CASEWAY_JOB_RETRY``); None restores its own."""
    if policy is None:
        _policies.pop(kind, None)
    else:
        _policies[kind] = policy


def app_policies() -> ContextVar[Mapping[str, RetryPolicy] | None]:
    """The context variable an app sets to its own policy overrides around its calls."""
    return _app_policies


def policy_for(kind: str) -> RetryPolicy:
    known = job_kinds().get(kind)
    overrides = _app_policies.get()
    chosen = (_policies if overrides is None else overrides).get(kind)
    return chosen or (known.policy if known is not None else DEFAULT_POLICY)


__all__ = [
    "JobCall",
    "JobError",
    "JobKind",
    "Permanent",
    "Plan",
    "Reconciled",
    "Transient",
    "app_policies",
    "job_kinds",
    "policy_for",
    "register_job_kind",
    "set_policy",
]
