"""The ``webhook`` job kind: POST what an action did to an endpoint the operator configured
(``CASEWAY_WEBHOOKS``), signed, with the job's idempotency key.

Spec authors name endpoints, never addresses (``{"webhook": {"endpoint": "billing"}}``): no
spec can make the server call an arbitrary URL. The body is the versioned payload of
``engine/jobs/webhook_payload.py`` (docs/api.md, "Webhook payloads"), plain JSON or a CloudEvent
as the endpoint's ``format`` says. Each delivery of a job sends the same bytes with the same
``Idempotency-Key``, so a receiver that remembers keys sees a redelivery after a crash as the one
event it is. ``Caseway-Signature`` is ``sha256=<hex HMAC-SHA256 of the body with the endpoint's
secret>``.
"""

import asyncio
import hashlib
import hmac
import json
from collections.abc import Collection, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from engine.jobs import webhook_payload
from engine.jobs.kinds import JobCall, JobKind, Permanent, Plan, Transient, register_job_kind

SERIALIZE_BY = ("case", "endpoint", "none")
FORMATS = ("plain", "cloudevents")
MAX_TIMEOUT = 300.0
MAX_FIELDS = 100  # case fields one workflow may send to an endpoint (a workflow declares at most 100)
MAX_NAME = 64  # characters of a field's name (a spec's names are checked where it is defined)
# The runner's own limit on a delivery is the endpoint's timeout plus this, so the request's
# limit (which names the endpoint) is the one that fires.
TIMEOUT_SLACK = 1.0
_ENDPOINT_KEYS = {"url", "secret", "timeout", "serialize_by", "format", "fields"}


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One receiver. ``serialize_by``: ``case`` (default: one case's events arrive one at a time,
    in order), ``endpoint`` (all of them, in order) or ``none`` (in parallel, no order).
    ``format``: ``plain`` (the payload as JSON) or ``cloudevents`` (a CloudEvent 1.0 in
    structured JSON mode). ``fields``: the case fields each workflow (by short name) may send;
    none by default. ``public_url``: ``CASEWAY_PUBLIC_URL`` when set, for the payload's links."""

    name: str
    url: str
    secret: str
    timeout: float = 10.0
    serialize_by: str = "case"
    format: str = "plain"
    fields: Mapping[str, frozenset[str]] = field(default_factory=dict)
    public_url: str | None = None

    def fields_of(self, workflow: str) -> frozenset[str]:
        """The case fields a workflow's payloads may carry to this endpoint."""
        return self.fields.get(workflow, frozenset())


_endpoints: dict[str, Endpoint] = {}  # the process's (``configure``: the CLI's commands)
# The endpoints of the app whose request or background task is running (a context variable the
# app sets around each of its calls): two apps in one process each keep their own.
_app_endpoints: ContextVar[Mapping[str, Endpoint] | None] = ContextVar("caseway_webhooks", default=None)


def parse_endpoints(raw: Mapping[str, Any], *, public_url: str = "") -> dict[str, Endpoint]:
    """Validate ``CASEWAY_WEBHOOKS`` (name -> {url, secret, timeout, serialize_by, format,
    fields}); ValueError names the first problem, so a server with a bad configuration does not
    start. A field name a workflow does not declare is refused when a workflow naming the
    endpoint is defined (``Webhook.check_workflow``): no workflow is known here."""
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
        format_ = body.get("format", "plain")
        if format_ not in FORMATS:
            raise ValueError(f"webhook endpoint {name!r}: format is plain or cloudevents, not {format_!r}")
        fields = _parse_fields(name, body.get("fields", {}))
        found[name] = Endpoint(
            name, url, secret, float(timeout), serialize_by, format_, fields, public_url.rstrip("/") or None
        )
    return found


def _parse_fields(name: str, raw: Any) -> dict[str, frozenset[str]]:
    """``fields``: ``{workflow short name: [case field names]}``."""
    shape = f"webhook endpoint {name!r}: fields maps workflow short names to lists of case field names"
    if not isinstance(raw, Mapping):
        raise ValueError(f'{shape}, e.g. {{"invoice": ["amount", "vendor"]}}')
    found: dict[str, frozenset[str]] = {}
    for workflow, names in raw.items():
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"{shape}; fields[{workflow!r}] is not a list of names")
        if len(names) > MAX_FIELDS:
            raise ValueError(f"webhook endpoint {name!r}: fields[{workflow!r}] names more than {MAX_FIELDS} fields")
        bad = [n for n in names if not 0 < len(n) <= MAX_NAME]
        if bad:
            raise ValueError(
                f"webhook endpoint {name!r}: fields[{workflow!r}] has {bad[0][:MAX_NAME]!r}, not a field name"
                f" (1 to {MAX_NAME} characters)"
            )
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"webhook endpoint {name!r}: fields[{workflow!r}] names {twice[0]!r} twice")
        found[workflow] = frozenset(names)
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
    """Compact JSON, keys sorted: the same bytes for the same value, at every delivery."""
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

    def check_workflow(self, args: Mapping[str, Any], *, workflow: str, fields: Collection[str]) -> list[str]:
        """At definition, with the whole spec parsed: the case fields the endpoint is configured
        to send for this workflow must be fields it declares (a misspelt name would send nothing,
        silently)."""
        endpoint = _current().get(str(args.get("endpoint")))
        if endpoint is None:
            return []
        unknown = sorted(endpoint.fields_of(workflow) - set(fields))
        if not unknown:
            return []
        declared = ", ".join(fields) or "none"
        return [
            f"Webhook endpoint {endpoint.name!r} is configured (CASEWAY_WEBHOOKS fields) to send case field"
            f" {unknown[0]!r} of workflow {workflow!r}, which declares no such field (its fields: {declared})."
        ]

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
        payload = call.input.get("payload")
        if isinstance(payload, Mapping):
            allowed = endpoint.fields_of(str(payload["workflow"]["shortName"]))
            content_type, body = webhook_payload.body(
                payload, call.entry, allowed=allowed, format=endpoint.format, key=call.idempotency_key
            )
        else:  # written before payloads had a version: the entry as then, with no case field of its own
            content_type, body = webhook_payload.PLAIN_TYPE, body_of(webhook_payload.legacy(call.entry, allowed=()))
        headers = {
            "Content-Type": content_type,
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

__all__ = [
    "FORMATS",
    "WEBHOOK",
    "Endpoint",
    "app_endpoints",
    "body_of",
    "configure",
    "configured",
    "parse_endpoints",
    "signature",
]
