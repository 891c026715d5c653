"""What the DataLoaders remember and share: a cache whose values a field reads without an
await (``KnownValues``, ``cached``, ``with_loaded``), priming, the ordering of a batch's rows
by key, and ``Loads``, the base of the batch-load classes (resolvers/*_loads.py)."""

import asyncio
import inspect
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from strawberry.dataloader import DataLoader, DefaultCache

if TYPE_CHECKING:
    from resolvers.context import Context


K = TypeVar("K")


class KnownValues(DefaultCache[Any, Any]):
    """A loader cache that also keeps each value once it is loaded, so a field can take it
    with one dict lookup and no await (see ``cached``)."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        future = self.cache_map.get(key)
        if future is None and key in self.values:  # primed: the future is made when a load asks
            future = asyncio.get_running_loop().create_future()
            future.set_result(self.values[key])
            self.cache_map[key] = future
        return future

    def set(self, key: Any, value: Any) -> None:
        super().set(key, value)
        if value.done():
            self._record(key, value)
        else:
            value.add_done_callback(lambda future: self._record(key, future))

    def _record(self, key: Any, future: Any) -> None:
        if self.cache_map.get(key) is future and not future.cancelled() and future.exception() is None:
            self.values[key] = future.result()

    def delete(self, key: Any) -> None:
        super().delete(key)
        self.values.pop(key, None)

    def clear(self) -> None:
        super().clear()
        self.values.clear()


def prime(loader: DataLoader[Any, Any], values: Mapping[Any, Any]) -> None:
    """``DataLoader.prime_many`` without a future per key (a page prefetch primed 1,000 per
    read): the cache makes one only if a load asks for the key."""
    if loader.cache:
        known = loader.cache_map.values  # type: ignore[attr-defined]
        for key, value in values.items():
            known.setdefault(key, value)
    else:
        loader.primeall_per_key(values)


def cached(loader: DataLoader[Any, Any], key: Any) -> Any:
    """The loader's value for ``key`` if it is already known, else ``MISSING`` (no await)."""
    return loader.cache_map.values.get(key, MISSING) if loader.cache else MISSING  # type: ignore[attr-defined]


MISSING: Any = object()
T = TypeVar("T")


def with_loaded(needs: Sequence[tuple[DataLoader[Any, Any], Any]], compute: Callable[..., Any]) -> Any:
    """``compute(*values)`` over the loaders' values for these keys: at once when every value is
    already known (the usual case after a page prefetch, so the field costs no await), else
    after awaiting the loads. ``compute`` may return another ``with_loaded`` for values that
    depend on these; graphql-core awaits whatever comes back awaitable."""
    values = []
    for loader, key in needs:
        value = cached(loader, key)
        if value is MISSING:
            return _after_loading(needs, compute)
        values.append(value)
    return compute(*values)


def one(loader: Any, key: str | None) -> Any:
    """A single related row (None for no key): the row itself when known, else its load."""
    if key is None:
        return None
    value = cached(loader, key)
    return loader.load(key) if value is MISSING else value


async def _after_loading(needs: Sequence[tuple[DataLoader[Any, Any], Any]], compute: Callable[..., Any]) -> Any:
    result = compute(*[await loader.load(key) for loader, key in needs])
    return await result if inspect.isawaitable(result) else result


def one_per_key(rows: Sequence[Any], keys: Sequence[K], key: Callable[[Any], K]) -> list[Any]:
    by_key = {key(r): r for r in rows}
    return [by_key.get(k) for k in keys]


def all_per_key(rows: Sequence[Any], keys: Sequence[K], key: Callable[[Any], K]) -> list[list[Any]]:
    grouped: dict[K, list[Any]] = defaultdict(list)
    for r in rows:
        grouped[key(r)].append(r)
    return [grouped.get(k, []) for k in keys]


class Loads:
    """What a batch-load class reads with: the request's context, its session's rows, and
    ``column IN (values)`` as the database takes it best (set by ``Loaders``)."""

    _ctx: "Context"
    _in: Callable[[Any, Any], Any]

    async def _rows(self, query: Any) -> Sequence[Any]:
        """Plain Core rows: attribute access like a model, without ORM hydration."""
        return await self._ctx.session.rows(query)
