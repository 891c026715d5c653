"""DataLoaders: one per relation, created per request, one query per batch, results in key order.
The batch loads live by domain in resolvers/tree_loads.py, case_loads.py and access_loads.py;
what a loader remembers in resolvers/loader_cache.py."""

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from strawberry.dataloader import DataLoader

from models.db import among
from resolvers.child_pages import PageKey
from resolvers.pagination import Page

if TYPE_CHECKING:
    from resolvers.context import Context

from resolvers.access_loads import AccessLoads
from resolvers.case_loads import CaseLoads, HistoryKey, PickListKey
from resolvers.loader_cache import MISSING, KnownValues, cached, one, prime, with_loaded
from resolvers.sentences import SentenceKey, load_sentences
from resolvers.tree_loads import TreeLoads

__all__ = ["MISSING", "HistoryKey", "KnownValues", "Loaders", "PickListKey", "cached", "one", "prime", "with_loaded"]


class Loaders(TreeLoads, CaseLoads, AccessLoads):
    """Named ``<thing>_by_<key>``; every loader sees only what the viewer may see. Each is made
    when first used: a request (or a live event) uses a few of the twenty."""

    # loader name -> the method that loads a batch of its keys
    _LOAD_FUNCTIONS: ClassVar[dict[str, str]] = {
        "party_by_id": "_parties",
        "project_by_id": "_projects",
        "subproject_by_id": "_subprojects",
        "item_by_id": "_items",
        "subprojects_by_project": "_subprojects_by_project",
        "items_by_subproject": "_items_by_subproject",
        "item_page": "_item_pages",
        "case_by_id": "_cases",
        "case_by_item": "_cases_by_item",
        "states_by_case": "_states_by_case",
        "enabled_by_case": "_enabled_by_case",
        "enabled_action_by_id": "_enabled_by_id",
        "action_history_by_case": "_action_histories",
        "roles_by_case": "_roles_by_case",
        "pick_list_by_case_role": "_pick_lists",
        "workflow_by_id": "_workflows",
        "budgets_by_resource": "_budgets",
        "documents_by_item": "_documents",
        "document_by_id": "_documents_by_id",
        "grants_by_resource": "_grants",
        "intents_by_resource": "_intents",
        "global_intents_by_party": "_global_intents",
        "history_by_resource": "_history",
        "archived_by_resource": "_archived",
        "members_by_group": "_members",
        "activity_by_id": "_activities",
        "job_by_id": "_jobs",
        "jobs_by_case": "_jobs_by_case",
        "delivery_by_user": "_deliveries",
        "deputyship_by_id": "_deputyships",
        "deputyships_by_user": "_deputyships_by_user",
        "deputyships_by_deputy": "_deputyships_by_deputy",
        "standing_in_by_user": "_standing_in",
        "sentence_by_entry": "_sentences",
    }
    party_by_id: DataLoader[str, Any]
    project_by_id: DataLoader[str, Any]
    subproject_by_id: DataLoader[str, Any]
    item_by_id: DataLoader[str, Any]
    subprojects_by_project: DataLoader[PageKey, Page[Any]]
    items_by_subproject: DataLoader[PageKey, Page[Any]]
    item_page: DataLoader[tuple[tuple[str, ...], frozenset[str]], list[Any]]
    case_by_id: DataLoader[str, Any]
    case_by_item: DataLoader[str, Any]
    states_by_case: DataLoader[str, Any]
    enabled_by_case: DataLoader[str, Any]
    enabled_action_by_id: DataLoader[str, Any]
    action_history_by_case: DataLoader[HistoryKey, Page[Any]]
    roles_by_case: DataLoader[str, Any]
    pick_list_by_case_role: DataLoader[PickListKey, list[str]]
    workflow_by_id: DataLoader[str, Any]
    budgets_by_resource: DataLoader[str, Any]
    documents_by_item: DataLoader[str, Any]
    document_by_id: DataLoader[str, Any]
    grants_by_resource: DataLoader[str, Any]
    intents_by_resource: DataLoader[str, Any]
    global_intents_by_party: DataLoader[str, list[str]]
    history_by_resource: DataLoader[Any, Any]
    archived_by_resource: DataLoader[tuple[str, str], Any]
    members_by_group: DataLoader[str, Any]
    activity_by_id: DataLoader[str, Any]
    job_by_id: DataLoader[str, Any]
    jobs_by_case: DataLoader[str, list[Any]]
    delivery_by_user: DataLoader[str, list[Any]]
    deputyship_by_id: DataLoader[str, Any]
    deputyships_by_user: DataLoader[str, list[Any]]
    deputyships_by_deputy: DataLoader[str, list[Any]]
    standing_in_by_user: DataLoader[str, list[Any]]
    sentence_by_entry: DataLoader[SentenceKey, str]

    def __init__(
        self, ctx: "Context", *, cache: bool = True, known: Mapping[str, Mapping[Any, Any]] | None = None
    ) -> None:
        """``cache=False`` still batches the loads of one tick but remembers nothing: for
        subscriptions, whose context lives as long as the connection. ``known`` primes loaders
        by name (values already read, e.g. shared by the subscribers of a live event)."""
        self._ctx = ctx
        self._cache = cache
        self._known = known or {}
        # ``column IN (values)``, as one array parameter on PostgreSQL (see models.db.among)
        self._in: Callable[[Any, Any], Any] = (lambda c, v: c.in_(v)) if ctx.db.is_sqlite else among

    def __getattr__(self, name: str) -> DataLoader[Any, Any]:
        method = self._LOAD_FUNCTIONS.get(name)
        if method is None:
            raise AttributeError(name)
        made: DataLoader[Any, Any] = DataLoader(
            load_fn=getattr(self, method), cache=self._cache, cache_map=KnownValues()
        )
        if name in self._known:
            prime(made, self._known[name])
        setattr(self, name, made)  # found as a plain attribute from now on
        return made

    async def _sentences(self, keys: list[SentenceKey]) -> list[str]:
        """Entries in words for the viewer (resolvers/sentences.py), the batch's in one go."""
        return await load_sentences(self._ctx, keys)
