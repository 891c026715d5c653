"""Stopping a process's background parts (sweeper, job runner, event hub, pool) within a bound.

A stop that never returns holds the whole process: uvicorn waits for its lifespan to end, a
supervisor's SIGTERM seems ignored until its SIGKILL, and a test's server never goes away. A
part that does not stop in time is left behind with an error in the log naming it and showing
where every task still running is waiting, which is what one needs to find why; the other parts
are still stopped and the database pool is still closed.
"""

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

log = logging.getLogger("caseway.shutdown")

STOP_WITHIN = 10.0  # seconds for each part; a healthy stop takes milliseconds


async def stop_within(name: str, stop: Callable[[], Awaitable[None]]) -> None:
    """Run ``stop()`` for at most ``STOP_WITHIN`` seconds. An error it raises is logged, not
    raised: the parts after it must be stopped too."""
    task = asyncio.ensure_future(stop())
    done, _ = await asyncio.wait({task}, timeout=STOP_WITHIN)
    if not done:
        # Not cancelled: a stop that ignored its own tasks' cancellation would ignore this one
        # too, and waiting for it is what must not happen.
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        log.error(
            "shutdown: %s did not stop within %.1f s; going on without it.\n%s",
            name,
            STOP_WITHIN,
            where_tasks_wait(others),
        )
    elif not task.cancelled() and task.exception() is not None:
        log.error("shutdown: stopping %s failed", name, exc_info=task.exception())


def where_tasks_wait(tasks: Iterable["asyncio.Task[Any]"]) -> str:
    """Each task's name and the chain of awaits it is suspended in, one per line (the shutdown
    log, and tests/fixtures/hangs.py for a test about to time out)."""
    lines = []
    for task in tasks:
        lines.append(f"{task.get_name()}:")
        lines.extend(f"  {where}" for where in _awaiting(task.get_coro()))
    return "\n".join(lines)


def _awaiting(coro: object) -> list[str]:
    """The chain of awaits from a task's coroutine down to what it waits on, one "file:line in
    function" each (``Task.print_stack`` shows only a suspended coroutine's outermost frame)."""
    chain = []
    while coro is not None and len(chain) < 40:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None) or getattr(coro, "ag_frame", None)
        if frame is None:
            chain.append(repr(coro))
            break
        chain.append(f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None) or getattr(coro, "ag_await", None)
    return chain


async def cancel_and_wait(task: "asyncio.Task[Any]") -> None:
    """Cancel a background loop and wait until it has ended: a loop only cancelled may still be
    running (in a ``finally``, or on a connection) when the process goes on to close the pool."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def until_set(event: asyncio.Event, seconds: float) -> None:
    """Sleep until ``event`` is set or ``seconds`` have passed, whichever comes first: how every
    background loop waits for its wake-up, so that its cancellation is never lost. On Python
    3.11, ``asyncio.wait_for`` returns normally when its event is set in the same turn as the
    cancellation arrives (the loop then goes round again and never ends: the live connections'
    re-check did, on PostgreSQL, whose hub sets the actor cache's event as it starts), and
    ``asyncio.timeout`` can leave a cancellation pending that ends the loop at its next await."""
    if event.is_set():
        return
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({waiter}, timeout=seconds)
    finally:
        waiter.cancel()
