"""The fast path of Caseway's executor, part 2: completing a field's value by its return type.

Why it exists: graphql-core completes every value through ``complete_value``, which tests the
return type anew (non-null? list? leaf? object? abstract?) and builds a resolve info for each
object; a nested read completes thousands of values of a handful of types. Here a *completer*
is made once per return type and execution: scalars and enums, lists, object rows (whose
subfields run through the plans of ``schema/execution_fields.py``), and abstract types whose
rows name their type in their id prefix. An object met again under the same leaf-only
selection (the same role, state or user under each of 200 items) is completed once when it is
immutable. Anything unexpected (an awaitable, a value of another type, ``@defer``) goes through
graphql-core's own ``complete_value`` with a real resolve info, and errors through its
``handle_field_error``: the results and errors are graphql-core's.

What it costs to keep: it calls graphql-core's ``complete_value``, ``complete_leaf_value``,
``complete_awaitable_list_item_value``, ``collect_subfields`` and
``collect_and_execute_subfields``, and imports ``invalid_return_type_error`` from
``graphql.execution.executor``: internals the lock pins (graphql-core 3.3.2); see
``schema/execution_fields.py`` for what an upgrade must run.
"""

from collections.abc import Callable
from typing import Any

from graphql import (
    GraphQLObjectType,
    is_abstract_type,
    is_leaf_type,
    is_list_type,
    is_non_null_type,
    is_object_type,
)
from graphql.execution.executor import invalid_return_type_error
from graphql.pyutils import Path, Undefined, gather_with_cancel

from models import kind_of
from schema.execution_fields import PLAIN, immutable, null_error, only_attribute_leaves


class Completers:
    """Completers by return type: ``complete(fdl, parent_type, path, value)`` -> the completed
    value. Mixed into ``CasewayExecutor`` (schema/execution.py) with ``FastFields``, whose plans
    an object's subfields run through."""

    # Set by CasewayExecutor.__init__ (and dropped after each execution by _forget_plans).
    _completers: dict[Any, Callable[..., Any]]
    _runtime_types: dict[tuple[Any, str | None], GraphQLObjectType | None]
    _is_awaitable: Callable[[Any], bool]

    def _completer(self, return_type: Any) -> Callable[..., Any]:
        complete = self._completers.get(return_type)
        if complete is None:
            complete = self._make_completer(return_type)
            self._completers[return_type] = complete
        return complete

    def _make_completer(self, return_type: Any) -> Callable[..., Any]:
        if is_non_null_type(return_type):
            inner_type = return_type.of_type
            if is_object_type(inner_type):
                return self._object_completer(inner_type, non_null=True)
            if is_list_type(inner_type):
                return self._list_completer(inner_type, non_null=True)
            return self._non_null_completer(return_type)
        if is_leaf_type(return_type):
            return self._leaf_completer(return_type)
        if is_list_type(return_type):
            return self._list_completer(return_type)
        if is_object_type(return_type):
            return self._object_completer(return_type)
        if is_abstract_type(return_type):
            return self._abstract_completer(return_type)
        return lambda fdl, parent_type, path, value: self._slow_complete(return_type, fdl, parent_type, path, value)

    def _non_null_completer(self, return_type: Any) -> Callable[..., Any]:
        inner_type = return_type.of_type

        inner: list[Callable[..., Any]] = []  # made on first use: types may refer to themselves

        def complete_non_null(fdl: Any, parent_type: Any, path: Path, value: Any) -> Any:
            if not inner:
                inner.append(self._completer(inner_type))
            completed = inner[0](fdl, parent_type, path, value)
            if completed is None:
                raise null_error(fdl, parent_type)
            return completed

        return complete_non_null

    def _leaf_completer(self, return_type: Any) -> Callable[..., Any]:
        complete_leaf_value = self.complete_leaf_value

        def complete_leaf(fdl: Any, parent_type: Any, path: Path, value: Any) -> Any:
            if value is None or value is Undefined:
                return None
            if isinstance(value, Exception):
                raise value
            return complete_leaf_value(return_type, value)

        return complete_leaf

    def _list_completer(self, return_type: Any, *, non_null: bool = False) -> Callable[..., Any]:
        item_type = return_type.of_type
        is_awaitable = self._is_awaitable
        inner: list[Callable[..., Any]] = []

        def complete_list(fdl: Any, parent_type: Any, path: Path, value: Any) -> Any:
            if value is None or value is Undefined:
                if non_null:
                    raise null_error(fdl, parent_type)
                return None
            if not isinstance(value, list | tuple):
                return self._slow_complete(return_type, fdl, parent_type, path, value)
            if not inner:
                inner.append(self._completer(item_type))
            complete_item = inner[0]
            completed_results: list[Any] = []
            awaitable_indices: list[int] = []
            for index, item in enumerate(value):
                item_path = path.add_key(index, None)
                if type(item) not in PLAIN and is_awaitable(item):
                    info = self._field_info(fdl, parent_type, path)
                    completed_results.append(
                        self.complete_awaitable_list_item_value(item, item_type, fdl, info, item_path, None)
                    )
                    awaitable_indices.append(index)
                    continue
                try:
                    completed = complete_item(fdl, parent_type, item_path, item)
                    if type(completed) not in PLAIN and is_awaitable(completed):
                        completed = self._await_completed(completed, item_type, fdl, item_path)
                        awaitable_indices.append(index)
                except Exception as raw_error:
                    self.handle_field_error(raw_error, item_type, fdl, item_path)
                    completed = None
                completed_results.append(completed)
            if not awaitable_indices:
                return completed_results
            return self._gather_items(completed_results, awaitable_indices)

        return complete_list

    async def _gather_items(self, completed_results: list[Any], awaitable_indices: list[int]) -> list[Any]:
        awaited = await gather_with_cancel(*(completed_results[i] for i in awaitable_indices))
        for index, value in zip(awaitable_indices, awaited, strict=True):
            completed_results[index] = value
        return completed_results

    def _object_completer(self, return_type: GraphQLObjectType, *, non_null: bool = False) -> Callable[..., Any]:
        is_type_of = return_type.is_type_of
        is_awaitable = self._is_awaitable
        # id(field group) -> (field group, plans of its subfields, completed values): the group
        # is kept alive with its entry, so its id cannot be reused during the execution. When
        # the selection reads only attributes into scalars, its result depends on the value
        # alone, and an immutable value met again (the same role, state, action or user under
        # each of 200 items) is completed once: id(value) -> (value, result).
        subfield_plans: dict[int, tuple[Any, Any, dict[int, tuple[Any, Any]] | None]] = {}

        def complete_object(fdl: Any, parent_type: Any, path: Path, value: Any) -> Any:
            if value is None or value is Undefined:
                if non_null:
                    raise null_error(fdl, parent_type)
                return None
            if isinstance(value, Exception):
                raise value
            entry = subfield_plans.get(id(fdl))
            if entry is not None and entry[0] is fdl and entry[2] is not None:
                seen = entry[2].get(id(value))
                if seen is not None and seen[0] is value:
                    return seen[1]  # the same immutable row under the same leaf selection
            if is_type_of is not None:
                accepted = is_type_of(value, None)  # Caseway's is_type_of never reads info
                if type(accepted) is not bool and is_awaitable(accepted):
                    accepted.close()
                    raise TypeError(f"{return_type.name}.is_type_of must not be async")
                if not accepted:
                    raise invalid_return_type_error(return_type, value, fdl)
            if entry is None or entry[0] is not fdl:
                grouped_field_set, new_defer_usages, _ = self.collect_subfields(return_type, fdl)
                if new_defer_usages:
                    return self.collect_and_execute_subfields(return_type, fdl, path, value, None)
                plans = self._plans_for(return_type, grouped_field_set)
                entry = (fdl, plans, {} if only_attribute_leaves(plans) else None)
                subfield_plans[id(fdl)] = entry
            completed = self._run_plans(return_type, value, path, entry[1])
            if entry[2] is not None and immutable(value):
                entry[2][id(value)] = (value, completed)
            return completed

        return complete_object

    def _abstract_completer(self, return_type: Any) -> Callable[..., Any]:
        def complete_abstract(fdl: Any, parent_type: Any, path: Path, value: Any) -> Any:
            if value is None or value is Undefined:
                return None
            runtime_type = self._runtime_type(return_type, value)
            if runtime_type is None:
                return self._slow_complete(return_type, fdl, parent_type, path, value)
            return self._completer(runtime_type)(fdl, parent_type, path, value)

        return complete_abstract

    def _runtime_type(self, abstract_type: Any, value: Any) -> GraphQLObjectType | None:
        """The object type a row names by its id prefix, when it is one of ``abstract_type``'s."""
        if isinstance(value, Exception) or hasattr(value, "__strawberry_definition__"):
            return None  # an instance of a strawberry class: strawberry's own resolve_type knows it
        name = kind_of(getattr(value, "id", None) or "")
        key = (abstract_type, name)
        if key not in self._runtime_types:
            self._runtime_types[key] = self._possible_type(abstract_type, name)
        return self._runtime_types[key]

    def _possible_type(self, abstract_type: Any, name: str | None) -> GraphQLObjectType | None:
        runtime_type = self.schema.get_type(name) if name else None
        if runtime_type is None or not is_object_type(runtime_type):
            return None
        if not self.schema.is_sub_type(abstract_type, runtime_type):
            return None
        return runtime_type  # type: ignore[return-value]
