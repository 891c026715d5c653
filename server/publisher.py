"""The one place a process hears what a transaction did: after every write transaction
(``Database.transaction``), its unit of work (models/unit_of_work.py) is published here.

Whoever wrote it (a mutation, the timer sweeper, ``runDueTimers``, the job runner, the CLI's
commands in a server's process), a committed unit of work wakes the event hub for its log
entries, the sweepers for its earliest timer, the job runners for its jobs, and makes the
server forget the actors it remembers when who a token stands for changed. The actions it ran
are counted in /metrics whether it committed or not (a refusal rolls back, and is counted).
Publishing never raises (``Database.publish``): the transaction has ended, and what the client
is told is what the transaction did.
"""

import logging
from typing import Any

from models import UnitOfWork
from server import metrics

log = logging.getLogger("caseway.publisher")


class Publisher:
    def __init__(self, hub: Any, *, on_identity_change: Any = None) -> None:
        self.hub = hub
        self.on_identity_change = on_identity_change or (lambda: None)

    async def __call__(self, work: UnitOfWork) -> None:
        try:
            for workflow, outcome in work.actions:
                metrics.action_executed(workflow, outcome)
        except Exception:  # counting is no reason to leave the hub and the pollers unwoken
            log.exception("counting a transaction's actions failed")
        if not work.committed or not work.wrote:
            return
        try:
            if work.identities_changed:
                self.on_identity_change()
            if work.entries:
                await self.hub.publish(work.entries)
            if work.timer_at is not None:
                self.hub.timer_written(work.timer_at)
            if work.jobs:
                self.hub.jobs_written()
        except Exception:  # the commit stands; the pollers are the safety net
            log.exception("publishing a committed transaction failed")
