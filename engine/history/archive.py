"""The form of an archived part of the log, as `caseway archive-history` writes it and
`caseway verify-history --archive` reads it back (server/history_archive.py does the files).

An archive is a directory; each archived partition is two files named by the seqs it covered:
``activity-<from>-<to>.jsonl``, one entry a line with every column (so each hash can be
computed again), in seq order; and ``activity-<from>-<to>.manifest.json``: how many entries,
the newest one's time, and the anchors: the last seq and hash of every chain in it. A chain's
entries follow one another across files, so an archive verifies from its first file on; the
database keeps, per chain, the anchor its live part starts from (``ArchivedChain``).
"""

import json
from dataclasses import dataclass
from datetime import datetime
from types import SimpleNamespace
from typing import Any

__all__ = ["ArchiveError", "Manifest", "entry_from_line", "entry_line", "file_names"]

_COLUMNS = (
    "seq",
    "id",
    "project_id",
    "subproject_id",
    "workflow_item_id",
    "case_id",
    "kind",
    "action",
    "actor_id",
    "on_behalf_of",
    "via",
    "at",
    "comment",
    "title",
    "data",
    "chain",
    "prev_hash",
    "hash",
)


class ArchiveError(Exception):
    """An archive that cannot be read as one; the message is a sentence naming the file."""


def file_names(first: int, last: int) -> tuple[str, str]:
    """The entries' file and the manifest's, for the seqs ``first`` to ``last``."""
    stem = f"activity-{first:012d}-{last:012d}"
    return f"{stem}.jsonl", f"{stem}.manifest.json"


def entry_line(row: Any) -> str:
    """One entry as a JSON line (``at`` in ISO 8601, which ``entry_from_line`` reads back exactly)."""
    values = {name: getattr(row, name) for name in _COLUMNS}
    values["at"] = row.at.isoformat()
    return json.dumps(values, sort_keys=True, separators=(",", ":")) + "\n"


def entry_from_line(line: str, where: str) -> Any:
    """An entry with the attributes ``engine.history.activity.entry_hash`` reads."""
    try:
        values = json.loads(line)
        if not isinstance(values, dict) or set(values) != set(_COLUMNS):
            raise ValueError
        values["at"] = datetime.fromisoformat(values["at"])
        if not isinstance(values["seq"], int) or not isinstance(values["data"], dict):
            raise ValueError
    except (ValueError, TypeError):
        raise ArchiveError(f"{where} is not a log entry.") from None
    return SimpleNamespace(**values)


@dataclass(frozen=True, slots=True)
class Manifest:
    """What one archived partition held."""

    partition: str
    first: int
    last: int
    entries: int
    newest_at: datetime | None
    archived_at: datetime
    anchors: dict[str, dict[str, Any]]  # chain -> {"seq": …, "hash": …}

    def to_json(self) -> str:
        return json.dumps(
            {
                "partition": self.partition,
                "first": self.first,
                "last": self.last,
                "entries": self.entries,
                "newest_at": self.newest_at.isoformat() if self.newest_at else None,
                "archived_at": self.archived_at.isoformat(),
                "anchors": self.anchors,
            },
            indent=1,
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str, where: str) -> "Manifest":
        try:
            data = json.loads(text)
            return cls(
                partition=str(data["partition"]),
                first=int(data["first"]),
                last=int(data["last"]),
                entries=int(data["entries"]),
                newest_at=datetime.fromisoformat(data["newest_at"]) if data["newest_at"] else None,
                archived_at=datetime.fromisoformat(data["archived_at"]),
                anchors={
                    str(chain): {"seq": int(a["seq"]), "hash": str(a["hash"])} for chain, a in data["anchors"].items()
                },
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            raise ArchiveError(f"{where} is not an archive's manifest.") from None
