"""The `caseway` command's failures in one sentence each.

An operator who mistyped a path, forgot to migrate or named a database that does not exist
gets one line on stderr that says what is wrong and what to do, and a non-zero exit code; a
traceback is for bugs, and shown only with ``caseway --debug``. ``CliError`` is a failure the
command recognized itself; ``sentence`` recognizes the expected ones raised from below
(drivers, parsers, the engine) and returns None for anything else.
"""

import errno
import json
import socket
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy.engine import make_url

from engine.errors import DomainError, DomainErrors


class CliError(Exception):
    """An expected failure, its message the sentence to print."""

    exit_code = 1


class SettingError(CliError):
    """A setting refused at start (out of its range, not JSON, not a database URL): exit code 2,
    as for a command line argparse refuses."""

    exit_code = 2


def _causes(error: BaseException) -> list[BaseException]:
    """The error and what it wraps (SQLAlchemy's ``orig``, ``__cause__``, ``__context__``)."""
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [error]
    while todo:
        current = todo.pop(0)
        if current is None or any(current is s for s in seen):
            continue
        seen.append(current)
        todo += [getattr(current, "orig", None), current.__cause__, current.__context__]
    return seen


def where(database_url: str) -> str:
    """The database named for a person: SQLite's file, or PostgreSQL's host, port and name (no password)."""
    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":
        return f"the SQLite database {url.database}"
    return f"the PostgreSQL database {url.database!r} on {url.host or 'localhost'}:{url.port or 5432}"


def domain_sentence(error: DomainError) -> str:
    errors = error.errors if isinstance(error, DomainErrors) else [error]
    return "; ".join(f"{e.message}" + (f" ({'.'.join(e.field)})" if e.field else "") for e in errors)


def sentence(error: BaseException, database_url: str) -> str | None:
    """One line for an expected failure, else None."""
    for cause in _causes(error):
        name = type(cause).__name__
        if isinstance(cause, CliError):
            return str(cause)
        if isinstance(cause, DomainError):
            return domain_sentence(cause)
        if name == "InvalidCatalogNameError":  # asyncpg: the database does not exist
            db = make_url(database_url).database
            return f"{where(database_url)} does not exist: create it (createdb {db}), then run `caseway migrate`."
        if name == "InvalidPasswordError" or name == "InvalidAuthorizationSpecificationError":
            return f"PostgreSQL refused the login to {where(database_url)}: {cause}"
        if isinstance(cause, ConnectionRefusedError | socket.gaierror | TimeoutError) or (
            isinstance(cause, OSError) and name in ("OSError", "ConnectionError")
        ):
            return f"cannot reach {where(database_url)}: {cause.strerror or cause}. Is the server running?"
        if name == "DatabaseError" and "file is not a database" in str(cause):
            path = make_url(database_url).database
            return f"{path} is not a SQLite database: the file holds something else. Check CASEWAY_DATABASE_URL."
        if name == "OperationalError" and "unable to open database file" in str(cause):
            return f"cannot open {where(database_url)}: does its directory exist, and may this user write there?"
    return None


def load_spec(path: Path) -> Any:
    """A workflow spec file's content; a missing file or a syntax error as a sentence with the
    line and column."""
    from engine.spec.workflows import load_spec_file

    if not path.is_file():
        raise CliError(f"no such file: {path}" if not path.exists() else f"not a file: {path}")
    try:
        return load_spec_file(path)
    except json.JSONDecodeError as error:
        raise CliError(f"{path}, line {error.lineno}, column {error.colno}: invalid JSON: {error.msg}.") from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        at = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise CliError(f"{path}{at}: invalid YAML: {error.problem or error.context}.") from None
    except yaml.YAMLError as error:
        raise CliError(f"{path}: invalid YAML: {error}.") from None
    except UnicodeDecodeError:
        raise CliError(f"{path}: not a text file (UTF-8).") from None


def check_port_free(host: str, port: int) -> None:
    """Refuse now, before a token is printed, when the address cannot be listened on."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise CliError(f"cannot listen on {host}:{port}: {error.strerror}.") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        try:
            probe.bind(address)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise CliError(
                    f"port {port} on {host} is in use (another server?): choose another with --port or CASEWAY_PORT."
                ) from None
            raise CliError(f"cannot listen on {host}:{port}: {error.strerror}.") from None


__all__ = ["CliError", "SettingError", "check_port_free", "domain_sentence", "load_spec", "sentence", "where"]
