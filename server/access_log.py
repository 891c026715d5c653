"""One log line per HTTP request, and the logging set-up of ``caseway serve``.

The access line (logger ``caseway.access``, level INFO) says the method, path, status, the
GraphQL operation's name, its outcome (as in server/metrics.py), the user id and the time
taken. With ``CASEWAY_LOG_FORMAT=json`` every log line of the server (Caseway's and
uvicorn's) is one JSON object, the access line's fields as keys of their own:
``{"time": ..., "level": "INFO", "logger": "caseway.access", "message": ..., "method": "POST",
"path": "/graphql", "status": 200, "operation": "Projects", "outcome": "ok", "user_id":
"usr_...", "duration_ms": 3.1}``.

uvicorn's own access log stays off: this line says more, and one line per request is enough.
"""

import json
import logging
from datetime import UTC, datetime
from typing import Any

log = logging.getLogger("caseway.access")


def request_logged(
    *, method: str, path: str, status: int, operation: str | None, outcome: str, user_id: str | None, seconds: float
) -> None:
    if not log.isEnabledFor(logging.INFO):  # no handler configured (tests, embedding): no cost
        return
    fields = {
        "method": method,
        "path": path,
        "status": status,
        "operation": operation or "-",
        "outcome": outcome,
        "user_id": user_id or "-",
        "duration_ms": round(seconds * 1000, 2),
    }
    log.info(
        "%s %s %d %s %s user=%s %.1f ms",
        method,
        path,
        status,
        fields["operation"],
        outcome,
        fields["user_id"],
        seconds * 1000,
        extra={"access": fields},
    )


class JsonFormatter(logging.Formatter):
    """A log record as one JSON object; an access line's fields as keys of their own."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update(getattr(record, "access", None) or {})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def logging_config(log_format: str) -> dict[str, Any]:
    """uvicorn's logging configuration with Caseway's loggers added at INFO, as text or JSON."""
    from uvicorn.config import LOGGING_CONFIG

    config = json.loads(json.dumps(LOGGING_CONFIG))  # a deep copy
    config["formatters"]["caseway"] = {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}
    config["handlers"]["caseway"] = {
        "formatter": "caseway",
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
    }
    config["loggers"]["caseway"] = {"handlers": ["caseway"], "level": "INFO", "propagate": False}
    if log_format == "json":
        for formatter in config["formatters"].values():
            formatter.clear()
            formatter["()"] = "server.access_log.JsonFormatter"
    return config


__all__ = ["JsonFormatter", "logging_config", "request_logged"]
