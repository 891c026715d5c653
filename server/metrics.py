"""Prometheus metrics, served at ``/metrics`` (names prefixed ``caseway_``).

What is measured, and where:

- ``caseway_graphql_requests_total{operation,outcome}`` and
  ``caseway_graphql_request_duration_seconds{operation}``: every HTTP GraphQL request
  (server/app.py), by operation name (``anonymous`` without one; at most ``MAX_OPERATIONS``
  distinct names, then ``other``, so that clients cannot grow the series without bound) and
  outcome: ``ok``, ``error`` (executed, with errors), ``rejected`` (a request error: not
  parsed, not valid, variables not coerced) or ``refused`` (refused before GraphQL ran: bad
  JSON, a body too large, a GET mutation).
- ``caseway_execute_action_total{workflow,outcome}``: executeAction by workflow short name and
  outcome (``ok``, ``replayed``, ``dry_run``, or the userErrors code; the workflow is ``-``
  when the request named no case it could find).
- ``caseway_live_subscribers``: subscriptions now open (server/hub.py).
- ``caseway_event_hub_lag_seconds``: from an entry's commit to its delivery to the subscribers.
- ``caseway_timer_lateness_seconds``: from a timer's ``fireAt`` to its firing (server/sweeper.py).
- ``caseway_job_state_changes_total{kind,state}`` and ``caseway_jobs{kind,state}``: the hooks
  for durable jobs — call ``job_state_changed(kind, state, previous=...)`` on each transition,
  or ``set_jobs(kind, state, count)`` from a periodic count.

Several worker processes (``caseway serve --workers N``): each process counts for itself, and a
scrape reaches one of them. ``caseway serve`` therefore sets ``PROMETHEUS_MULTIPROC_DIR`` (a
fresh temporary directory, unless it is set already) before the workers start, so that
prometheus-client's multiprocess mode writes every process's values there and ``/metrics``
reports their sum from any process. Gauges say how processes combine: live subscribers add up
over the living processes, hub lag is the largest, job counts the most recent. With a single
process nothing of this is needed and the values live in memory.
"""

import os
import re
import time
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

MULTIPROCESS = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
MAX_OPERATIONS = 200  # distinct operation names labelled; the rest are "other"
MAX_NAME = 64  # characters of an operation name kept

REQUESTS = Counter(
    "caseway_graphql_requests_total", "GraphQL HTTP requests by operation name and outcome.", ["operation", "outcome"]
)
LATENCY = Histogram(
    "caseway_graphql_request_duration_seconds",
    "Time to answer a GraphQL HTTP request, by operation name.",
    ["operation"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
ACTIONS = Counter(
    "caseway_execute_action_total", "executeAction by workflow short name and outcome.", ["workflow", "outcome"]
)
SUBSCRIBERS = Gauge("caseway_live_subscribers", "Live subscriptions now open.", multiprocess_mode="livesum")
HUB_LAG = Histogram(
    "caseway_event_hub_lag_seconds",
    "From an activity entry's commit to its delivery to the live subscribers.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
TIMER_LATENESS = Histogram(
    "caseway_timer_lateness_seconds",
    "From a timer's fireAt to the moment it fired.",
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
)
JOB_CHANGES = Counter(
    "caseway_job_state_changes_total", "Durable jobs entering a state, by kind and state.", ["kind", "state"]
)
JOBS = Gauge("caseway_jobs", "Durable jobs by kind and state.", ["kind", "state"], multiprocess_mode="mostrecent")
REPLICA_UP = Gauge(
    "caseway_replica_up", "Whether a read replica answers (1) or not (0).", ["replica"], multiprocess_mode="mostrecent"
)
REPLICA_LAG = Gauge(
    "caseway_replica_lag_seconds",
    "How far a read replica's state is behind the primary's (reads go to it within CASEWAY_REPLICA_MAX_LAG_MS).",
    ["replica"],
    multiprocess_mode="mostrecent",
)
REPLICA_READS = Counter("caseway_replica_reads_total", "Requests whose reads a replica served.", ["replica"])

_operations: set[str] = set()
_OPERATION_NAME = re.compile(r"\b(?:query|mutation|subscription)\s+([_A-Za-z][_0-9A-Za-z]*)")
_operation_names: dict[str, str | None] = {}


def operation_name(query: str | None) -> str | None:
    """The name of a document's first operation (clients that send one named operation rarely
    send operationName too), remembered per document: clients send the same few, and a
    search costs a few microseconds per kilobyte."""
    if not query:
        return None
    try:
        return _operation_names[query]
    except KeyError:
        pass
    found = _OPERATION_NAME.search(query)
    if len(_operation_names) >= 1000:
        _operation_names.clear()
    name = _operation_names[query] = found.group(1) if found else None
    return name


def operation_label(name: str | None) -> str:
    """A bounded label for a client-chosen operation name."""
    if not name:
        return "anonymous"
    name = name[:MAX_NAME]
    if name in _operations:
        return name
    if len(_operations) >= MAX_OPERATIONS:
        return "other"
    _operations.add(name)
    return name


def request_done(operation: str | None, outcome: str, seconds: float) -> None:
    label = operation_label(operation)
    REQUESTS.labels(label, outcome).inc()
    LATENCY.labels(label).observe(seconds)


def action_executed(workflow: str | None, outcome: str) -> None:
    ACTIONS.labels(workflow or "-", outcome).inc()


def hub_delivered(committed_at: Any) -> None:
    """An entry committed at ``committed_at`` (an aware datetime) was handed to the subscribers."""
    HUB_LAG.observe(max(time.time() - committed_at.timestamp(), 0.0))


def timer_fired(fire_at: Any, fired_at: Any) -> None:
    TIMER_LATENESS.observe(max((fired_at - fire_at).total_seconds(), 0.0))


def job_state_changed(kind: str, state: str, previous: str | None = None) -> None:
    """The hook for durable jobs: a job of ``kind`` entered ``state`` (from ``previous``, if it
    had one). Counts the transition; the gauge of jobs per state follows it in this process
    (with several processes, prefer ``set_jobs`` from a periodic count)."""
    JOB_CHANGES.labels(kind, state).inc()
    JOBS.labels(kind, state).inc()
    if previous is not None:
        JOBS.labels(kind, previous).dec()


def set_jobs(kind: str, state: str, count: int) -> None:
    """How many jobs of ``kind`` are in ``state``, counted (e.g. by a periodic query)."""
    JOBS.labels(kind, state).set(count)


def replicas_checked(replicas: Any) -> None:
    """After each pass of the replica monitor (models/replicas.py)."""
    for replica in replicas.replicas:
        REPLICA_UP.labels(replica.name).set(1 if replica.healthy else 0)
        REPLICA_LAG.labels(replica.name).set(-1 if replica.lag_ms is None else replica.lag_ms / 1000)
        if replica.reads:
            REPLICA_READS.labels(replica.name).inc(replica.reads)
            replica.reads = 0


def process_stopping() -> None:
    """A worker's clean shutdown: its live gauges leave the sum (a worker that was killed
    leaves them until the directory is made afresh, at the next ``caseway serve``)."""
    if MULTIPROCESS:
        multiprocess.mark_process_dead(os.getpid())


def exposition() -> tuple[bytes, str]:
    """The text a scrape reads, and its content type: this process's values, or with
    multiprocess mode every process's."""
    if MULTIPROCESS:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(), CONTENT_TYPE_LATEST


__all__ = [
    "action_executed",
    "exposition",
    "hub_delivered",
    "job_state_changed",
    "operation_label",
    "operation_name",
    "process_stopping",
    "request_done",
    "set_jobs",
    "timer_fired",
]
