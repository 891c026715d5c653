"""What a webhook sends: the payload, version 1 (docs/api.md, "Webhook payloads", whose JSON
Schema the tests check every delivered body against), plain or as a CloudEvent.

Why built when the entry is written: a receiver must not have to call back to learn what was
approved, so the payload names the item, its amount, the action, the states and the actor, and
the case fields its endpoint may see; read again at send time, any of those could have changed
between two deliveries of one job (a renamed item, a migrated case, a later action's field), and
the same job must send the same bytes each time. So the case wing (``engine/cases/webhooks.py``)
builds it in the action's transaction from what that transaction holds, and it is stored in the
job's input, which never changes. Only ``seq`` and ``hash`` are not known then (the insert hands
them out at commit): the send adds them from the entry the runner reads with the job, which is
immutable too. What it judges at send time, from the endpoint's configuration then: the
envelope (``format``), and the case fields, narrowed to those the endpoint still allows (never
widened).

Hidden ≡ missing: a case field is in a payload only when the endpoint's configuration names it
for the workflow and the case's state after the action does not hide it (a receiver plays no
role); otherwise its key is absent, from ``fields`` and from ``changes`` alike.
"""

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cloudevents.core.bindings.http import to_structured_event
from cloudevents.core.v1.event import CloudEvent

VERSION = 1
SCHEMA_ID = "urn:caseway:webhook:payload:1"  # the JSON Schema's $id, and a CloudEvent's dataschema
PLAIN_TYPE = "application/json"


@dataclass(frozen=True, slots=True)
class Named:
    """A spec's name and the pretty name people read."""

    short_name: str
    pretty_name: str

    def json(self) -> dict[str, str]:
        return {"shortName": self.short_name, "prettyName": self.pretty_name}


@dataclass(frozen=True, slots=True)
class Facts:
    """What an executed action's payload says, gathered by the case wing in its transaction.
    ``fields`` are every case field's value after the action and ``changes`` the action's
    ``{name: {from, to}}``, as the payload shows values (an amount as ``{amount, currency,
    minorUnits}``), not yet narrowed to what an endpoint may see."""

    entry_id: str
    kind: str
    at: datetime
    comment: str | None
    project_id: str
    subproject_id: str
    subproject_name: str
    item_id: str
    item_name: str
    item_path: str  # its page in the dashboard, from the server's root (engine.notify.sentences.path_to)
    amount_type: str
    amount: dict[str, Any] | None  # {amount, currency, minorUnits}
    case_id: str
    workflow: Named
    action: Named
    past_tense: str
    output: str | None
    resolution: Named | None
    from_state: Named | None
    to_state: Named | None
    actor_id: str
    actor_login: str
    actor_name: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    changes: Mapping[str, Any] = field(default_factory=dict)


def build(facts: Facts, *, allowed: Collection[str], public_url: str | None) -> dict[str, Any]:
    """The stored payload of one endpoint: the facts, the case fields narrowed to ``allowed``,
    links when ``CASEWAY_PUBLIC_URL`` is set (none otherwise: a receiver cannot reach a guessed
    address). ``seq`` and ``hash`` are added when it is sent (``body``)."""
    return {
        "version": VERSION,
        "id": facts.entry_id,
        "kind": facts.kind,
        "at": facts.at.isoformat(),
        "comment": facts.comment,
        "projectId": facts.project_id,
        "subproject": {"id": facts.subproject_id, "name": facts.subproject_name},
        "item": {
            "id": facts.item_id,
            "name": facts.item_name,
            "amountType": facts.amount_type,
            "amount": facts.amount,
        },
        "caseId": facts.case_id,
        "workflow": facts.workflow.json(),
        "action": {**facts.action.json(), "pastTense": facts.past_tense},
        "output": facts.output,
        "resolution": None if facts.resolution is None else facts.resolution.json(),
        "from": None if facts.from_state is None else facts.from_state.json(),
        "to": None if facts.to_state is None else facts.to_state.json(),
        "actor": {"id": facts.actor_id, "login": facts.actor_login, "name": facts.actor_name},
        "fields": _narrowed(facts.fields, allowed),
        "changes": _narrowed(facts.changes, allowed),
        "links": {"item": public_url.rstrip("/") + facts.item_path} if public_url else {},
    }


def body(
    payload: Mapping[str, Any], entry: Mapping[str, Any], *, allowed: Collection[str], format: str, key: str
) -> tuple[str, bytes]:
    """The content type and bytes a delivery sends: the stored payload with the entry's ``seq``
    and ``hash`` (null when the entry records a change of a case field left out), its case fields
    narrowed to those the endpoint allows now; plain JSON (keys
    sorted, compact), or a CloudEvent 1.0 in structured JSON mode whose ``id`` is the job's
    idempotency key. Both are the same bytes for the same job at every delivery."""
    changes = _narrowed(payload.get("changes") or {}, allowed)
    data = entry.get("data")
    recorded = data.get("fields") if isinstance(data, dict) else None
    # As the API seals it for a reader (resolvers/case_fields.py): the hash covers every value
    # the entry records, so with the rest in hand a receiver could test guesses of a field left out.
    sealed = isinstance(recorded, dict) and not set(recorded) <= set(changes)
    complete = {
        **payload,
        "seq": entry.get("seq"),
        "hash": None if sealed else entry.get("hash"),
        "fields": _narrowed(payload.get("fields") or {}, allowed),
        "changes": changes,
    }
    canonical = json.dumps(complete, sort_keys=True, separators=(",", ":")).encode()
    if format != "cloudevents":
        return PLAIN_TYPE, canonical
    event = CloudEvent(
        {
            "specversion": "1.0",
            "id": key,
            "source": f"/projects/{complete['projectId']}/subprojects/{complete['subproject']['id']}",
            "type": f"caseway.{complete['kind']}",
            "subject": complete["item"]["id"],
            "time": datetime.fromisoformat(complete["at"]),
            "datacontenttype": PLAIN_TYPE,
            "dataschema": SCHEMA_ID,
        },
        json.loads(canonical),  # keys in sorted order, so the envelope's bytes are the same each time
    )
    message = to_structured_event(event)
    content_type = next(v for k, v in message.headers.items() if k.lower() == "content-type")
    return content_type, message.body


def legacy(entry: Mapping[str, Any], *, allowed: Collection[str]) -> dict[str, Any]:
    """The body of a job written before payloads had a version (its input has none): the log
    entry as it was sent then, its case field changes narrowed to those the endpoint allows."""
    data = entry.get("data")
    if isinstance(data, dict) and isinstance(data.get("fields"), dict):
        entry = {**entry, "data": {**data, "fields": _narrowed(data["fields"], allowed)}}
    return dict(entry)


def _narrowed(values: Mapping[str, Any], allowed: Collection[str]) -> dict[str, Any]:
    return {name: value for name, value in values.items() if name in allowed}


__all__ = ["PLAIN_TYPE", "SCHEMA_ID", "VERSION", "Facts", "Named", "body", "build", "legacy"]
