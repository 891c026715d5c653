"""The ``webhook`` job kind: POST the activity entry of an action to an endpoint the operator
configured (``CASEWAY_WEBHOOKS``), signed, with the job's idempotency key.

Spec authors name endpoints, never addresses (``{"webhook": {"endpoint": "billing"}}``): no
spec can make the server call an arbitrary URL. Each delivery of a job sends the same bytes
(the entry is immutable) with the same ``Idempotency-Key``, so a receiver that remembers keys
sees a redelivery after a crash as the one event it is. ``Caseway-Signature`` is
``sha256=<hex HMAC-SHA256 of the body with the endpoint's secret>``.
"""

import asyncio
import hashlib
import hmac
import json
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from engine.jobs.kinds import JobCall, JobKind, Permanent, Plan, Transient, register_job_kind

SERIALIZE_BY = ("case", "endpoint", "none")
MAX_TIMEOUT = 300.0
# The runner's own limit on a delivery is the endpoint's timeout plus this, so the request's
# limit (which names the endpoint) is the one that fires.
TIMEOUT_SLACK = 1.0
_ENDPOINT_KEYS = {"url", "secret", "timeout", "serialize_by"}


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One receiver. ``serialize_by``: ``case`` (default: one case's events arrive one at a time,
    in order), ``endpoint`` (all of them, in order) or ``none`` (in parallel, no order)."""

    name: str
    url: str
    secret: str
    timeout: float = 10.0
    serialize_by: str = "case"


_endpoints: dict[str, Endpoint] = {}  # the process's (``configure``: the CLI's commands)
# The endpoints of the app whose request or background task is running (a context variable the
# app sets around each of its calls): two apps in one process each keep their own.
_app_endpoints: ContextVar[Mapping[str, Endpoint] | None] = ContextVar("caseway_webhooks", default=None)


def parse_endpoints(raw: Mapping[str, Any]) -> dict[str, Endpoint]:
    """Validate ``CASEWAY_WEBHOOKS`` (name -> {url, secret, timeout, serialize_by}); ValueError
    names the first problem, so a server with a bad configuration does not start."""
    found: dict[str, Endpoint] = {}
    for name, body in raw.items():
        if not isinstance(body, Mapping):
            raise ValueError(f"webhook endpoint {name!r} must be an object")
        unknown = set(body) - _ENDPOINT_KEYS
        if unknown:
            raise ValueError(f"webhook endpoint {name!r} has unknown keys: {', '.join(sorted(unknown))}")
        url, secret = body.get("url"), body.get("secret")
        if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
            raise ValueError(f"webhook endpoint {name!r} needs an http(s) url")
        if not isinstance(secret, str) or not secret:
            raise ValueError(f"webhook endpoint {name!r} needs a signing secret")
        timeout = body.get("timeout", 10.0)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_TIMEOUT:
            raise ValueError(f"webhook endpoint {name!r}: timeout is seconds, more than 0 and at most {MAX_TIMEOUT:g}")
        serialize_by = body.get("serialize_by", "case")
        if serialize_by not in SERIALIZE_BY:
            raise ValueError(f"webhook endpoint {name!r}: serialize_by is one of {', '.join(SERIALIZE_BY)}")
        found[name] = Endpoint(name, url, secret, float(timeout), serialize_by)
    return found


def configure(endpoints: Mapping[str, Endpoint]) -> None:
    """Set the endpoints of this process (the server and ``caseway run-jobs`` do, from settings)."""
    _endpoints.clear()
    _endpoints.update(endpoints)


def app_endpoints() -> ContextVar[Mapping[str, Endpoint] | None]:
    """The context variable an app sets to its own endpoints around its calls."""
    return _app_endpoints


def _current() -> Mapping[str, Endpoint]:
    found = _app_endpoints.get()
    return _endpoints if found is None else found


def configured() -> dict[str, Endpoint]:
    return dict(_current())


def body_of(entry: Mapping[str, Any]) -> bytes:
    """The bytes POSTed: the entry as compact JSON, keys sorted, the same at every delivery."""
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), default=str).encode()


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class Webhook(JobKind):
    name = "webhook"
    first_step = "deliver"

    def check_args(self, args: Mapping[str, Any], *, defining: bool) -> list[str]:
        endpoint = args.get("endpoint")
        problems = [f"webhook takes no {key!r}; only endpoint." for key in args if key != "endpoint"]
        if not isinstance(endpoint, str) or not endpoint:
            problems.append('webhook needs {"endpoint": "<name>"}, an endpoint the operator configured.')
        elif defining and endpoint not in _current():
            known = ", ".join(sorted(_current())) or "none is configured"
            problems.append(
                f"No webhook endpoint {endpoint!r} is configured (CASEWAY_WEBHOOKS: {known}): define the spec where"
                " the server's CASEWAY_WEBHOOKS is set, as `caseway define-workflow` reads it from its own environment."
            )
        return problems

    def plan(self, args: Mapping[str, Any], *, case_id: str) -> Plan:
        name = str(args["endpoint"])
        endpoint = _current().get(name)
        serialize_by = endpoint.serialize_by if endpoint is not None else "case"
        key = {"case": f"webhook:{name}:case:{case_id}", "endpoint": f"webhook:{name}", "none": None}[serialize_by]
        return Plan(input={"endpoint": name}, serialization_key=key)

    def timeout_seconds(self, input: Mapping[str, Any]) -> float:
        endpoint = _current().get(str(input.get("endpoint")))
        return (endpoint.timeout if endpoint is not None else 10.0) + TIMEOUT_SLACK

    async def run(self, call: JobCall) -> dict[str, Any]:
        name = str(call.input.get("endpoint"))
        endpoint = _current().get(name)
        if endpoint is None:
            raise Permanent("UNKNOWN_ENDPOINT", f"Webhook endpoint {name!r} is no longer configured.")
        body = body_of(call.entry)
        headers = {
            "Content-Type": "application/json",
            "Idempotency-Key": call.idempotency_key,
            "Caseway-Signature": signature(endpoint.secret, body),
            "User-Agent": "Caseway-Webhook",
        }
        try:
            # httpx's timeout bounds each step (connect, each read); the endpoint's bounds the whole.
            async with asyncio.timeout(endpoint.timeout):
                response = await call.http.post(endpoint.url, content=body, headers=headers, timeout=endpoint.timeout)
        except (httpx.TimeoutException, TimeoutError):
            raise Transient("TIMEOUT", f"Endpoint {name!r} did not answer within {endpoint.timeout:g} s.") from None
        except httpx.TransportError as error:
            raise Transient("CONNECTION", f"Endpoint {name!r} could not be reached ({type(error).__name__}).") from None
        status = response.status_code
        if 200 <= status < 300:
            return {"delivered": {"status": status, "attempt": call.attempt}}
        message = f"Endpoint {name!r} answered HTTP {status}."
        if status in (408, 429) or status >= 500:
            raise Transient(f"HTTP_{status}", message)
        raise Permanent(f"HTTP_{status}", message)


WEBHOOK = register_job_kind(Webhook())

__all__ = ["WEBHOOK", "Endpoint", "app_endpoints", "body_of", "configure", "configured", "parse_endpoints", "signature"]
