"""The spec keys that tell people about waiting work (docs/workflows.md, "Reminders and
escalation"), validated into plain values; engine/cases/reminders.py runs them.

- ``reminders: {every: seconds, max: n}``: while an instance of the action stays enabled and
  unexecuted, its assignees are reminded every ``every`` seconds after it was enabled, at most
  ``max`` times.
- ``escalate: {after: seconds, to_role: role}``: once an instance has waited ``after`` seconds,
  the players of ``to_role`` are told (notified as assigned, an ``action_escalated`` entry in the
  history). Escalation tells; it does not take the work over: who may execute the action stays
  as the spec says, and ``reassignRole`` hands it over when someone decides so.

Only a USER action waits for a person, so only it takes them.
"""

from dataclasses import dataclass
from typing import Any

from engine.spec.spec_checker import MAX_TIMEOUT, SpecChecker

KEYS = ("reminders", "escalate")
MIN_INTERVAL = 60  # seconds: no spec reminds anyone more often than once a minute
MAX_REMINDERS = 100


@dataclass(frozen=True, slots=True)
class Reminders:
    every: int
    max: int


@dataclass(frozen=True, slots=True)
class Escalation:
    after: int
    to_role: str


def reminder_fields(
    c: SpecChecker, path: list[str], name: str, body: dict[str, Any], trigger: str, roles: set[str]
) -> dict[str, Any]:
    """``reminders`` and ``escalate`` of one action, as ActionSpec fields (None when absent)."""
    fields: dict[str, Any] = {"reminders": None, "escalate": None}
    for key in (k for k in KEYS if k in body and trigger != "user"):
        c.fail([*path, key], f"{trigger.upper()} action {name!r} waits for no one; only a USER action takes {key}.")
        return fields
    if "reminders" in body:
        rpath = [*path, "reminders"]
        raw = c.mapping(body["reminders"], rpath)
        c.unknown_keys(raw, {"every", "max"}, rpath)
        if "every" not in raw or "max" not in raw:
            c.fail(rpath, f"reminders of {name!r} needs every (seconds) and max (how many).")
        every = c.whole(raw.get("every"), [*rpath, "every"], low=MIN_INTERVAL, high=MAX_TIMEOUT, unit=" of seconds")
        most = c.whole(raw.get("max"), [*rpath, "max"], low=1, high=MAX_REMINDERS)
        if every is not None and most is not None:
            fields["reminders"] = Reminders(every, most)
    if "escalate" in body:
        epath = [*path, "escalate"]
        raw = c.mapping(body["escalate"], epath)
        c.unknown_keys(raw, {"after", "to_role"}, epath)
        if "after" not in raw or "to_role" not in raw:
            c.fail(epath, f"escalate of {name!r} needs after (seconds) and to_role.")
        after = c.whole(raw.get("after"), [*epath, "after"], low=MIN_INTERVAL, high=MAX_TIMEOUT, unit=" of seconds")
        role = c.name(raw.get("to_role"), [*epath, "to_role"], "a role name")
        if role is not None and role not in roles:
            c.fail([*epath, "to_role"], f"Action {name!r} escalates to unknown role {role!r}.")
            role = None
        if after is not None and role is not None:
            fields["escalate"] = Escalation(after, role)
    return fields
