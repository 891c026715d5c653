"""Time-ordered opaque identifiers.

An id is ``<prefix>_<ulid>``: the prefix names the kind of object (so ``node(id:)`` can
dispatch without a lookup table) and the ULID sorts by creation time, which makes ``id``
a usable keyset-pagination cursor.
"""

import os
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

PREFIXES = {
    "usr": "User",
    "grp": "Group",
    "tok": "ApiToken",
    "prj": "Project",
    "sub": "Subproject",
    "wfi": "WorkflowItem",
    "doc": "Document",
    "wf": "Workflow",
    "case": "Case",
    "ea": "EnabledAction",
    "act": "Activity",
    "ntf": "Notification",
    "job": "Job",
    "dep": "Deputyship",
}

_last_ms = 0
_last_rand = 0


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        value, rem = divmod(value, 32)
        chars.append(_ALPHABET[rem])
    return "".join(reversed(chars))


def new_id(prefix: str) -> str:
    """Return a new id; ids made in the same millisecond in this process still sort in order."""
    global _last_ms, _last_rand
    ms = int(time.time() * 1000)
    if ms <= _last_ms:
        ms = _last_ms
        _last_rand += 1
    else:
        _last_rand = int.from_bytes(os.urandom(10), "big") >> 1  # room to increment
    _last_ms = ms
    return f"{prefix}_{_encode(ms, 10)}{_encode(_last_rand, 16)}"


def kind_of(id_: str) -> str | None:
    """The GraphQL type name an id belongs to, or None for a malformed id."""
    prefix, sep, rest = id_.partition("_")
    if not sep or not rest:
        return None
    return PREFIXES.get(prefix)
