"""The job runner: a background task of every server process, and the whole of
``caseway run-jobs``.

It claims due jobs (server/job_runs.py: committed RUNNING before any handler runs), runs up
to ``concurrency`` of them at once, and claims more as they finish. A commit that writes jobs
wakes it through the event hub: in-process, and with PostgreSQL by NOTIFY from another process
whose own runner could not take them (it runs none, or has no free slot). Otherwise it sleeps
until the next retry or lease end it knows of, and polls every ``poll_interval`` seconds as a
safety net.

Each running job has an HTTP client of its own, reused by the next job (keep-alive); they share
one TLS context. Its first pass, at startup, reconciles the jobs that
a crash left RUNNING once their lease has ended. Several processes share one PostgreSQL
database: each job is claimed by one of them.
"""

import asyncio
import contextlib
import logging
import ssl
from datetime import datetime, timedelta

import httpx

from engine.clock import SYSTEM_CLOCK, Clock
from engine.jobs import RetryPolicy, job_kinds, set_policy, webhook
from models import Database
from server.hub import EventHub
from server.job_runs import Completions, claim_due, next_due, run_claimed
from server.loop import Loop
from server.settings import Settings

log = logging.getLogger("caseway.job_runner")

# A job's client runs one request at a time; it keeps a few connections alive (to the
# endpoints it delivered to last).
_CLIENT_LIMITS = httpx.Limits(max_connections=4, max_keepalive_connections=4)
BUSY_RETRY = 0.05  # seconds before claiming again a due job that another runner had locked


class JobRunner:
    def __init__(
        self,
        db: Database,
        hub: EventHub | None,
        *,
        poll_interval: float = 5.0,
        concurrency: int = 32,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.db = db
        self.hub = hub
        self.clock = clock
        self.poll_interval = poll_interval
        self.concurrency = concurrency
        self.finished: dict[str, int] = {}  # outcomes recorded by this runner, by new state (logs, tests)
        # Outcomes not recorded: the claim was lost (another runner claimed the job after its
        # lease ended) or the database failed; the job is the other runner's, or reconciled.
        self.lost = 0
        self._loop = Loop("caseway-job-runner", self._step, poll_interval=poll_interval, clock=clock, log=log)
        self._running: set[asyncio.Task[None]] = set()
        self._clients: list[httpx.AsyncClient] = []  # free HTTP clients, one per slot at most
        self._all_clients: list[httpx.AsyncClient] = []
        self._tls: ssl.SSLContext | None = None
        self._closed = False
        self._completions = Completions(db, clock.now)

    @property
    def task(self) -> "asyncio.Task[None] | None":
        """The runner's loop (for /ready)."""
        return self._loop.task

    def start(self) -> None:
        if self.hub is not None:
            self.hub.on_jobs = self.wake
        self._closed = False
        self._loop.start()  # the first pass at once: reconcile and catch up

    async def stop(self) -> None:
        """Stop claiming and cancel what runs: those jobs stay RUNNING and are reconciled when
        their lease ends, by this process's successor or another one."""
        tasks = [t for t in (self._loop.task, *self._running) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._completions.stop()
        self._closed = True
        clients, self._all_clients, self._clients = self._all_clients, [], []
        for client in clients:
            await client.aclose()

    async def drain(self) -> int:
        """Run what is due now (and what falls due while it runs) until nothing is; how many
        outcomes were recorded (``caseway run-jobs --once``, tests)."""
        before = sum(self.finished.values())
        while True:
            claimed, _ = await self.claim_and_start()
            if not claimed and not self._running:
                return sum(self.finished.values()) - before
            if self._running:
                await asyncio.wait(set(self._running), return_when=asyncio.FIRST_COMPLETED)

    def wake(self) -> bool:
        """Jobs were written or made due: claim now. Whether this runner will (it runs, and has
        a free slot), so that the hub need not wake the other processes."""
        self._loop.wake()
        return self._loop.running and len(self._running) < self.concurrency

    def _client(self) -> httpx.AsyncClient:
        """An HTTP client for one job, the most recently used free one (its connections are
        warm). One per running job, not one shared by all: httpx's pool scans every connection
        for every queued request, which cost a fifth of the runner's CPU at 32 jobs in flight."""
        if self._clients:
            return self._clients.pop()
        if self._tls is None:  # loading the CA bundle costs tens of ms: once, shared by the clients
            self._tls = httpx.create_ssl_context()
        client = httpx.AsyncClient(limits=_CLIENT_LIMITS, follow_redirects=False, verify=self._tls)
        self._all_clients.append(client)
        return client

    async def _run_one(self, claim) -> None:  # type: ignore[no-untyped-def]
        http = self._client()
        try:
            state = await run_claimed(self.db, claim, clock=self.clock.now, http=http, completions=self._completions)
            if state is None:
                self.lost += 1
                log.warning("job %s: its outcome was not recorded (claim lost, or the database failed)", claim.id)
            else:
                self.finished[state] = self.finished.get(state, 0) + 1
        finally:
            if not self._closed:
                self._clients.append(http)
            self._loop.wake()  # a slot is free, and the next job of its key may be due

    async def claim_and_start(self) -> tuple[int, datetime | None]:
        """Claim what is due into the free slots; how many were claimed, and when to look again
        (None: nothing is waiting)."""
        free = self.concurrency - len(self._running)
        if free <= 0:
            return 0, None
        claims = await claim_due(self.db, now=self.clock.now(), limit=free)
        for claim in claims:
            task = asyncio.create_task(self._run_one(claim), name=f"caseway-job-{claim.id}")
            self._running.add(task)
            task.add_done_callback(self._running.discard)
        if claims:
            # Woken when one of them ends (its key's next job, a free slot); a retry falling
            # due meanwhile waits at most for that or the poll.
            return len(claims), None
        return 0, await next_due(self.db)

    async def _step(self) -> datetime | None:
        """One pass of the loop (server/loop.py): claim what is due; when to look again."""
        _, deadline = await self.claim_and_start()
        if deadline is not None and deadline <= self.clock.now():
            # due, but locked by another runner or its key busy elsewhere: look again soon
            return self.clock.now() + timedelta(seconds=BUSY_RETRY)
        return deadline


def job_setup(settings: Settings) -> tuple[dict[str, webhook.Endpoint], dict[str, RetryPolicy]]:
    """The jobs' settings: webhook endpoints and retry policies by kind. A bad value raises
    ValueError naming it, so a misconfigured process does not start."""
    endpoints = webhook.parse_endpoints(settings.webhooks, public_url=settings.public_url)  # links: when set
    known = job_kinds()
    policies = {}
    for kind, raw in settings.job_retry.items():
        if kind not in known:
            raise ValueError(f"CASEWAY_JOB_RETRY names unknown job kind {kind!r}")
        if not isinstance(raw, dict) or set(raw) - set(RetryPolicy.__dataclass_fields__):
            raise ValueError(f"CASEWAY_JOB_RETRY[{kind!r}] takes {', '.join(RetryPolicy.__dataclass_fields__)}")
        policies[kind] = RetryPolicy(**raw)
    if settings.job_concurrency < 1 or settings.job_poll_interval <= 0:
        raise ValueError("CASEWAY_JOB_CONCURRENCY must be at least 1 and CASEWAY_JOB_POLL_INTERVAL positive")
    return endpoints, policies


def configure_jobs(settings: Settings) -> None:
    """Apply the jobs' settings to this process (``caseway run-jobs``; and the newest app's, for
    what runs outside any app: an app's own calls read its own, server/wiring.py)."""
    endpoints, policies = job_setup(settings)
    webhook.configure(endpoints)
    for kind in list(job_kinds()):
        set_policy(kind, policies.get(kind))
