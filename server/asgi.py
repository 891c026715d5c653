"""`server.asgi:app` for uvicorn (and its worker processes).

A worker that dies says why. uvicorn's supervisor reports a worker it lost as "Child process [N]
died" and nothing more (issue 40, finding 9): the worker either stopped answering its health
check (uvicorn then kills it: `caseway serve` gives it 30 s instead of 5, which a worker starting
on a loaded machine could take) or was ended by a signal, with no Python traceback to log. So a
worker prints every thread's traceback on a fatal signal (SIGSEGV, SIGABRT, SIGBUS, SIGILL,
SIGFPE: ``faulthandler``), and logs an exception that escapes a thread with its traceback.
"""

import faulthandler
import logging
import sys
import threading
from types import TracebackType

faulthandler.enable()  # before the imports below: a crash while importing is told too

from server.app import create_app  # noqa: E402

log = logging.getLogger("caseway.worker")


def _log_uncaught(kind: type[BaseException], error: BaseException, traceback: TracebackType | None) -> None:
    log.critical("uncaught exception in the main thread", exc_info=(kind, error, traceback))


def _log_uncaught_in_thread(args: threading.ExceptHookArgs) -> None:
    if args.exc_value is not None:
        name = args.thread.name if args.thread is not None else "?"
        log.critical(
            "uncaught exception in thread %s", name, exc_info=(args.exc_type, args.exc_value, args.exc_traceback)
        )


sys.excepthook = _log_uncaught
threading.excepthook = _log_uncaught_in_thread

app = create_app()
