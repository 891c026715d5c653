"""A server's shutdown is bounded (server/shutdown.py): a background part that does not stop is
left behind, named in the log with where its tasks wait, and the parts after it still stop."""

import asyncio
import logging
import time

import pytest

from models import Database
from server import background, shutdown
from server.app import create_app
from server.job_runner import JobRunner
from server.settings import Settings


async def _stuck_until(released: asyncio.Event) -> None:
    """A stop that ignores being cancelled, as a task awaiting what never ends would."""
    while not released.is_set():
        try:
            await released.wait()
        except asyncio.CancelledError:
            continue


@pytest.fixture
def quick_shutdown(monkeypatch: pytest.MonkeyPatch) -> float:
    monkeypatch.setattr(shutdown, "STOP_WITHIN", 0.3)
    return 0.3


async def test_a_job_runner_that_does_not_stop_is_named_and_the_rest_still_stops(
    db: Database, quick_shutdown: float, caplog: pytest.LogCaptureFixture
):
    app = create_app(Settings(database_url=db.url, timer_poll_interval=60, job_poll_interval=60), db=db)
    runner: JobRunner = app.state.job_runner
    released = asyncio.Event()
    # Released after a while all the same, so that a shutdown without its bound fails this test
    # (by its duration) instead of hanging the suite.
    asyncio.get_running_loop().call_later(5, released.set)

    async def stop_that_hangs() -> None:
        await _stuck_until(released)

    try:
        with caplog.at_level(logging.ERROR, logger="caseway.shutdown"):
            async with app.router.lifespan_context(app):
                hub_tasks = [t for t in app.state.hub.tasks.values() if t is not None]
                assert hub_tasks and not any(t.done() for t in hub_tasks)
                runner.stop = stop_that_hangs  # type: ignore[method-assign]
                stopping = time.monotonic()
        assert time.monotonic() - stopping < 3  # it waited 0.3 s for the runner, not until released
        (record,) = [r for r in caplog.records if r.name == "caseway.shutdown"]
        assert record.getMessage().startswith(
            f"shutdown: the job runner did not stop within {quick_shutdown:.1f} s; going on without it."
        )
        assert "_stuck_until" in record.getMessage()  # where it waits
        assert app.state.sweeper.task.done()  # stopped before it
        assert all(t.done() for t in hub_tasks)  # and what comes after it still stopped
    finally:
        released.set()
        await JobRunner.stop(runner)


async def test_a_part_whose_stop_fails_is_logged_and_the_rest_still_stops(
    db: Database, quick_shutdown: float, caplog: pytest.LogCaptureFixture
):
    app = create_app(Settings(database_url=db.url, timer_poll_interval=60, run_jobs=False), db=db)

    with caplog.at_level(logging.ERROR, logger="caseway.shutdown"):
        async with app.router.lifespan_context(app):
            sweeper_task = app.state.sweeper.task
            hub_tasks = [t for t in app.state.hub.tasks.values() if t is not None]
            real_stop = app.state.sweeper.stop

            async def stop_that_fails() -> None:
                # It ends its sweep first (a sweep still running when the pool closes would leave
                # its connection to the garbage collector), then reports a failure.
                await real_stop()
                raise RuntimeError("the sweeper's connection is gone")

            app.state.sweeper.stop = stop_that_fails
    (record,) = [r for r in caplog.records if r.name == "caseway.shutdown"]
    assert record.getMessage() == "shutdown: stopping the timer sweeper failed"
    assert str(record.exc_info[1]) == "the sweeper's connection is gone"
    assert all(t.done() for t in hub_tasks)
    assert sweeper_task.done()


async def test_every_background_part_has_ended_when_the_shutdown_returns(db: Database, monkeypatch: pytest.MonkeyPatch):
    """One owner (server/background.py) starts every part and awaits each one's end: none is
    left running (merely cancelled) once the lifespan is over, not even a part whose ending
    takes a while (here the document collector, as when cancelled amid a pass)."""

    async def collector_slow_to_end(*_: object) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0.2)  # e.g. giving its connection back

    monkeypatch.setattr(background, "collect_forever", collector_slow_to_end)
    settings = Settings(database_url=db.url, timer_poll_interval=60, job_poll_interval=60, secret_key="k" * 32)
    app = create_app(settings, db=db)
    async with app.router.lifespan_context(app):
        tasks = app.state.background.tasks
        running = {name for name, task in tasks.items() if task is not None and not task.done()}
        assert {"hub", "recheck", "collector", "signer", "sweeper", "job_runner"} <= running, tasks
    assert [name for name, task in tasks.items() if task is not None and not task.done()] == []
    assert db.publisher is None  # the stopped server hears no more commits
