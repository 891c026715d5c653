"""Stopping a process's background parts (job runner, sweeper, event hub) within a bound.

A stop that never returns holds the whole process: uvicorn waits for its lifespan to end, a
supervisor's SIGTERM seems ignored until its SIGKILL, and a test's server never goes away. A
part that does not stop in time is left behind with an error in the log naming it and showing
where every task still running is waiting, which is what one needs to find why; the other parts
are still stopped and the database pool is still closed.
"""

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger("caseway.shutdown")

STOP_WITHIN = 10.0  # seconds for each part; a healthy stop takes milliseconds


async def stop_within(name: str, stop: Callable[[], Awaitable[None]], *, within: float | None = None) -> bool:
    """Run ``stop()`` for at most ``within`` seconds (``STOP_WITHIN``); whether it finished. An
    error it raises is logged, not raised: the parts after it must be stopped too."""
    within = STOP_WITHIN if within is None else within
    task = asyncio.ensure_future(stop())
    done, _ = await asyncio.wait({task}, timeout=within)
    if not done:
        # Not cancelled: a stop that ignored its own tasks' cancellation would ignore this one
        # too, and waiting for it is what must not happen.
        log.error("shutdown: %s did not stop within %.1f s; going on without it.%s", name, within, _waiting())
        return False
    if not task.cancelled() and task.exception() is not None:
        log.error("shutdown: stopping %s failed", name, exc_info=task.exception())
    return True


def _waiting() -> str:
    """Where each task of this loop is waiting (the shutdown's own excepted)."""
    lines = []
    current = asyncio.current_task()
    for task in asyncio.all_tasks():
        if task is not current:
            lines.append(f"{task.get_name()}:")
            lines.extend(f"  {where}" for where in awaiting(task.get_coro()))
    return "".join(f"\n{line}" for line in lines)


def awaiting(coro: object) -> list[str]:
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
