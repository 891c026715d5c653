"""Filter inputs as hashable keys (so loaders can batch by them) and their SQL."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from engine.tree.item_status import case_statuses
from models import Activity, Case, WorkflowItem, as_utc
from resolvers.pagination import invalid_argument, past_id
from resolvers.visibility import has_tag, name_contains

MAX_SEARCH = 200  # characters of ProjectFilter.search: a LIKE over every visible name
MAX_TAG = 64  # as a tag may be (engine/validation.py)
MAX_KIND = 64  # HistoryFilter.kind: activity kinds are short names


def _utc(value: datetime | None, field: str) -> datetime | None:
    """An instant in UTC (naive means UTC, as stored); 0001-01-01T00:00+14:00 has none."""
    if value is None:
        return None
    try:
        return as_utc(value)
    except OverflowError:
        raise invalid_argument(f"filter.{field} is outside the years 1 to 9999 in UTC.", "filter", field) from None


def _bounded(value: str | None, limit: int, field: str) -> None:
    if value is not None and len(value) > limit:
        raise invalid_argument(f"filter.{field} is longer than {limit} characters.", "filter", field)


@dataclass(frozen=True, slots=True)
class ResourceFilterKey:
    status: str | None = None
    tag: str | None = None
    search: str | None = None

    def __post_init__(self) -> None:
        _bounded(self.tag, MAX_TAG, "tag")
        _bounded(self.search, MAX_SEARCH, "search")


@dataclass(frozen=True, slots=True)
class HistoryFilterKey:
    kind: str | None = None
    actor_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    after_seq: int | None = None
    limit: int = 20

    def __post_init__(self) -> None:
        _bounded(self.kind, MAX_KIND, "kind")
        object.__setattr__(self, "since", _utc(self.since, "from"))
        object.__setattr__(self, "until", _utc(self.until, "to"))


def apply_resource_filter(query: Any, model: Any, filt: ResourceFilterKey) -> Any:
    if filt.status:
        if model is WorkflowItem:
            statuses = case_statuses(filt.status)  # an item's status is its case's (engine/tree/item_status.py)
            query = query.join(Case, Case.object_id == WorkflowItem.id).where(Case.status.in_(statuses))
        else:
            query = query.where(model.status == filt.status)
    if filt.tag:
        query = query.where(has_tag(model.tags, filt.tag))
    if filt.search:
        query = query.where(name_contains(model.display_name, filt.search))
    return query


def apply_history_filter(query: Any, filt: HistoryFilterKey, *, with_cursor: bool) -> Any:
    if filt.kind:
        query = query.where(Activity.kind == filt.kind)
    if filt.actor_id:
        query = query.where(Activity.actor_id == filt.actor_id)
    if filt.since:
        query = query.where(Activity.at >= filt.since)
    if filt.until:
        query = query.where(Activity.at <= filt.until)
    if with_cursor and filt.after_seq is not None:
        query = query.where(past_id(Activity.seq, filt.after_seq))
    return query
