"""What one write transaction did, recorded while it runs and published once after it ends.

Why one object: whoever commits a transaction must tell the process what it wrote (live
subscribers, the sweepers, the job runners, the remembered actors, the metrics), and the writers
are many (mutations, the timer sweeper and ``runDueTimers``, the job runner, the CLI). When each
writer read the markers it knew of by hand, a writer that forgot one left its effect waiting for
a poll (a webhook on a timer's action waited for the job runner's). Now the engine records into
the transaction's ``UnitOfWork`` (``unit_of_work(session)``) and ``Database.transaction`` hands
it to the process's publisher (``Database.publisher``, server/publisher.py) after the commit:
no writer can forget, and a rolled-back transaction publishes nothing it wrote.
"""

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

UNIT_OF_WORK = "caseway.unit_of_work"

Hook = Callable[[Any], Awaitable[None]]


@dataclass(eq=False)
class UnitOfWork:
    # Log entries queued (engine/history/activity.py), in order; hashed and inserted just before the commit.
    entries: list[Any] = field(default_factory=list)
    timer_at: datetime | None = None  # the earliest timer written (or made due): the sweepers' deadline
    jobs: bool = False  # jobs written or made due: the job runners claim now
    identities_changed: bool = False  # who a token stands for may have changed (server/actor_cache.py)
    # Cases whose task-index rows are recomputed just before the commit (engine/cases/task_index.py).
    tasks_touched: set[str] = field(default_factory=set)
    # Actions run, as (workflow short name or None, outcome): "ok", "replayed", "dry_run" or an
    # error code. Counted by the publisher whether or not the transaction commits.
    actions: list[tuple[str | None, str]] = field(default_factory=list)
    # (user id, token name): the API token the transaction's actor acts through. The entries that
    # user writes in it say so (``Activity.via``); the system's entries in it (automatic actions) do not.
    via: tuple[str, str] | None = None
    # Called with the session after the caller's block, before the commit (the log's inserts).
    before_commit: list[Hook] = field(default_factory=list)
    committed: bool = False

    def timer_written(self, at: datetime) -> None:
        """A timer falling due at ``at`` was written: remember the earliest."""
        if self.timer_at is None or at < self.timer_at:
            self.timer_at = at

    def action_ran(self, workflow: str | None, outcome: str) -> None:
        self.actions.append((workflow, outcome))

    @property
    def wrote(self) -> bool:
        """Whether anybody outside this transaction needs to hear of it."""
        return bool(self.entries or self.timer_at or self.jobs or self.identities_changed)


Publisher = Callable[[UnitOfWork], Awaitable[None]]

# The publisher of the app whose request or background task is running (server/wiring.py sets it
# around each of the app's calls): it takes the place of ``Database.publisher`` (the newest
# app's, or a command's), so two apps over one database each hear their own writes.
APP_PUBLISHER: ContextVar[Publisher | None] = ContextVar("caseway_publisher", default=None)


def unit_of_work(session: Any) -> UnitOfWork:
    """The unit of work of the transaction ``session`` (async or sync) is in. A session opened
    outside ``Database.transaction`` (tools, tests) gets one too, which nobody publishes."""
    info = session.info
    work = info.get(UNIT_OF_WORK)
    if work is None:
        work = info[UNIT_OF_WORK] = UnitOfWork()
    return work
