"""A faster executor for Caseway's read path, with graphql-core's semantics.

graphql-core spends most of a big read on bookkeeping per field: a resolve-info object, the
resolver wrapping, awaitable checks and a chain of ``complete_*`` calls, for every one of the
thousands of fields a nested read returns. This executor takes a shorter road for the fields
that allow it and hands everything else to graphql-core unchanged:

- a *basic* field (no resolver, no arguments: an attribute of the row) is read with
  ``getattr``;
- a resolver marked ``@context_only`` (it reads nothing of ``info`` but ``info.context``) is
  called directly, with no resolve info built;
- a subscription's root field, executed for an event, is the event;
- their values are completed by a completer made once per return type: scalars and enums,
  lists, object rows, and abstract types whose rows name their type in their id prefix;
- a live event's result is computed once for the subscribers of a process that would all get
  the same (same operation, same view of the event; see resolvers/context.py).

Anything else (an awaitable value, an unexpected type, @defer/@stream, middleware) goes
through graphql-core's own ``execute_field`` / ``complete_value`` with a real resolve info,
and errors go through its ``handle_field_error``: results and errors are the ones
graphql-core produces. No field is ever resolved twice.
"""

import json
from collections.abc import Callable
from types import CoroutineType, GeneratorType
from typing import Any

from graphql import (
    ExecutionResult,
    GraphQLBoolean,
    GraphQLID,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLString,
    OperationType,
    is_abstract_type,
    is_leaf_type,
    is_list_type,
    is_non_null_type,
    is_object_type,
)
from graphql.execution.executor import invalid_return_type_error, to_nodes
from graphql.execution.values import get_argument_values
from graphql.pyutils import Path, Undefined, gather_with_cancel
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from models import kind_of
from resolvers.compiled import TooDeep, compiled_root

CONTEXT_ONLY = "__caseway_context_only__"

# Types whose values are certainly not awaitable: no further check needed. Starts with the
# built-in ones and learns the classes met that offer no way to be awaited (rows, workflow
# specs, edges): a nested read completes thousands of them, each an is_awaitable call before.
_PLAIN: set[type] = {type(None), bool, int, float, str, list, tuple, dict}
_PLAIN_LIMIT = 1024  # row classes are made per column set; a bound, should they churn


def _learning(is_awaitable: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """``is_awaitable``, noting in ``_PLAIN`` the class of a value that is not and cannot be."""

    def awaitable(value: Any) -> bool:
        if is_awaitable(value):
            return True
        kind = type(value)
        if (
            len(_PLAIN) < _PLAIN_LIMIT
            and not hasattr(kind, "__await__")
            and not hasattr(kind, "__getattr__")  # could answer for __await__ per instance
            and not issubclass(kind, CoroutineType | GeneratorType)
        ):
            _PLAIN.add(kind)
        return False

    return awaitable


# Scalars a leaf field completes by coercion alone.
_SCALARS = frozenset({bool, int, float, str})
# Built-in scalar types whose coercion returns a value of this Python type unchanged.
_UNCHANGED = {GraphQLString: str, GraphQLID: str, GraphQLBoolean: bool}


def context_only(resolver: Callable[..., Any]) -> Callable[..., Any]:
    """Marks a resolver ``(self, info)`` that reads nothing of ``info`` but ``info.context``:
    the executor may call it without building a resolve info."""
    setattr(resolver, CONTEXT_ONLY, True)
    return resolver


class _ContextInfo:
    """What a ``@context_only`` resolver receives as ``info``."""

    __slots__ = ("context",)

    def __init__(self, context: Any) -> None:
        self.context = context


_UNKNOWN: Any = object()

_SLOW = 0  # graphql-core's own execute_field
_ATTRIBUTE = 1  # getattr(source, python_name)
_CONTEXT_ONLY = 2  # resolver(source, info-with-context)
_EVENT = 3  # a subscription's root field, executed for one event: the event itself


def _field_plan(field_def: Any, first_node: Any) -> tuple[int, Any]:
    """How a field of this definition, selected by this node, is resolved."""
    definition = (field_def.extensions or {}).get("strawberry-definition")
    if definition is not None and definition.is_subscription:
        # strawberry resolves a subscription field's event with ``lambda event, *_, **__: event``
        # (its own resolver is the source stream's), so neither arguments nor info are needed.
        return _EVENT, None
    if field_def.args or first_node.arguments:
        return _SLOW, None
    if definition is None or definition.extensions or getattr(definition, "permission_classes", None):
        return _SLOW, None
    if definition.base_resolver is None:
        if getattr(field_def.resolve, "_is_default", False):
            return _ATTRIBUTE, definition.python_name
        return _SLOW, None
    resolver = definition.base_resolver
    function = resolver.wrapped_func
    if getattr(function, CONTEXT_ONLY, False) and not resolver.arguments:
        return _CONTEXT_ONLY, function
    return _SLOW, None


def _only_attribute_leaves(plans: list[tuple[Any, ...]]) -> bool:
    """Every field is an attribute of the value completed as a scalar or enum."""
    return bool(plans) and all(plan[3] == _ATTRIBUTE and plan[5] is not None for plan in plans)


_IMMUTABLE: dict[type, bool] = {}


def _immutable(value: Any) -> bool:
    """Rows (namedtuples) and frozen dataclasses (workflow specs) cannot change under us."""
    kind = type(value)
    known = _IMMUTABLE.get(kind)
    if known is None:
        params = getattr(kind, "__dataclass_params__", None)
        known = _IMMUTABLE[kind] = issubclass(kind, tuple) or bool(params and params.frozen)
    return known


def _null_error(fdl: Any, parent_type: Any) -> TypeError:
    """graphql-core's error for a null in a non-null field."""
    return TypeError(f"Cannot return null for non-nullable field {parent_type}.{fdl[0].node.name.value}.")


def _leaf_type(return_type: GraphQLOutputType) -> Any:
    """The scalar or enum type of a (non-null) leaf field, else None."""
    inner = return_type.of_type if is_non_null_type(return_type) else return_type  # type: ignore[union-attr]
    return inner if is_leaf_type(inner) else None


class _SharedResult:
    """The executor of a live event whose result another subscriber computed."""

    __slots__ = ("result",)

    def __init__(self, result: ExecutionResult) -> None:
        self.result = result

    def execute_operation(self, serially: bool | None = None) -> ExecutionResult:
        return self.result


class CasewayExecutor(StrawberryGraphQLCoreExecutionContext):
    """See the module docstring."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._context_info = _ContextInfo(self.context_value)
        self._has_middleware = bool(self.middleware_manager and self.middleware_manager.middlewares)
        self._is_awaitable = _learning(self.is_awaitable)
        # grouped field set -> its fields' plans; the sets are memoized by graphql-core for the
        # whole execution, so each selection is planned once however many rows it applies to.
        self._plans: dict[int, tuple[Any, list[tuple[Any, ...]]]] = {}
        self._completers: dict[Any, Callable[..., Any]] = {}
        self._runtime_types: dict[tuple[Any, str | None], GraphQLObjectType | None] = {}
        # A subscription's operation as the key of its events' shared results (see
        # execute_operation); None where results are not shared.
        self._event_operation: Any = _UNKNOWN

    @classmethod
    def build(cls, *args: Any, **kwargs: Any) -> Any:
        """graphql-core's; variables that cannot be coerced (or an unknown operation name) are
        the request's fault, said with a code, so that they can be answered as the request
        errors they are (server/media_types.py)."""
        built = super().build(*args, **kwargs)
        if isinstance(built, list):
            for error in built:
                error.extensions = {**(error.extensions or {}), "code": "BAD_USER_INPUT"}
        return built

    def build_per_event_executor(self, payload: Any) -> Any:
        """Each event of a subscription is an execution of its own. graphql-core's copy shares
        the memo of collected subfields (and ours, of plans and completers) with the
        subscription's executor, but both are keyed by objects made anew for each event: shared,
        they would grow by an entry per event for as long as the subscription lives, and our
        completers would report errors to the execution that made them."""
        if self._event_operation is _UNKNOWN:  # once per subscription: the same for every event
            sharing = hasattr(self.context_value, "shared_result")
            self._event_operation = self._operation_key() if sharing else None
        if self._event_operation is not None:
            # Subscribers of this process with the same operation and the same view of the event
            # get the same result, computed once (resolvers/context.py, share_result).
            shared = self.context_value.shared_result(payload, self._event_operation)
            if shared is not None:
                return _SharedResult(shared)
        executor = super().build_per_event_executor(payload)
        executor._relevant_sub_fields = {}
        executor._plans = {}
        executor._completers = {}
        executor._event_operation = self._event_operation
        return executor

    def _operation_key(self) -> Any:
        """The operation as the key of a live event's shared results: its document's text, its
        name and its variables (None when they cannot be told apart)."""
        location = self.operation.loc
        if location is None:
            return None
        try:
            variables = json.dumps(self.variable_values, sort_keys=True, default=str)
        except (TypeError, ValueError):
            return None
        name = self.operation.name.value if self.operation.name else None
        return location.source.body, name, variables

    def execute_operation(self, serially: bool | None = None) -> Any:
        operation = None if self._event_operation is _UNKNOWN else self._event_operation  # a live event's
        result = super().execute_operation(serially)
        if isinstance(result, ExecutionResult):
            self._forget_plans()
            if operation is not None:  # computed without yielding to another task
                self.context_value.share_result(self.root_value, operation, result)
        elif self.is_awaitable(result):
            return self._forget_plans_after(result)
        return result  # incremental delivery: later payloads still use the plans

    async def _forget_plans_after(self, result: Any) -> Any:
        done = await result
        if isinstance(done, ExecutionResult):
            self._forget_plans()
        return done

    def _forget_plans(self) -> None:
        """Completers call back into the executor that made them: dropped with the plans once
        the execution is over, the executor is freed at once instead of by a collector pass
        (one executor per request, and per event of every live subscriber)."""
        self._plans = {}
        self._completers = {}

    # -- fields ------------------------------------------------------------------------------

    def execute_field(
        self, parent_type: GraphQLObjectType, source: Any, field_details_list: Any, path: Path, position_context: Any
    ) -> Any:
        """A query's root field the read planner compiles is one SQL statement that returns its
        finished JSON (resolvers/compiled); every other field, graphql-core's way."""
        if path.prev is None and self._compiles_reads():
            field_def = self.schema.get_field(parent_type, field_details_list[0].node.name.value)
            if field_def is not None:
                try:
                    args = get_argument_values(field_def, field_details_list[0].node, self.variable_values)
                except Exception:  # graphql-core reports it when it resolves the field
                    args = None
                value = None if args is None else compiled_root(self, parent_type, field_details_list, args)
                if value is not None:
                    return self._await_compiled(
                        value, (parent_type, source, field_details_list, path, position_context)
                    )
        return super().execute_field(parent_type, source, field_details_list, path, position_context)

    def _compiles_reads(self) -> bool:
        ctx = self.context_value
        settings = getattr(ctx, "settings", None)
        return (
            self.operation.operation == OperationType.QUERY
            and settings is not None
            and getattr(settings, "compiled_reads", False)
            and not getattr(ctx, "live", True)
        )

    async def _await_compiled(self, value: Any, field: tuple[Any, ...]) -> Any:
        """The compiled field's value; resolved after all when SQLite cannot take its statement."""
        parent_type, source, fdl, path, position_context = field
        try:
            return await value
        except TooDeep:
            resolved = super().execute_field(parent_type, source, fdl, path, position_context)
            return await resolved if self.is_awaitable(resolved) else resolved
        except Exception as raw_error:
            self.handle_field_error(
                raw_error, self.schema.get_field(parent_type, fdl[0].node.name.value).type, fdl, path
            )
            return None

    def _plans_for(self, parent_type: GraphQLObjectType, grouped_field_set: Any) -> list[tuple[Any, ...]]:
        cached = self._plans.get(id(grouped_field_set))
        if cached is not None and cached[0] is grouped_field_set:
            return cached[1]
        plans = []
        for response_name, field_details_list in grouped_field_set.items():
            first = field_details_list[0].node
            field_def = self.schema.get_field(parent_type, first.name.value)
            if field_def is None:
                continue
            kind, how = _field_plan(field_def, first)
            leaf = _leaf_type(field_def.type)
            complete = None if kind == _SLOW else self._completer(field_def.type)
            unchanged = _UNCHANGED.get(leaf)
            plans.append((response_name, field_details_list, field_def, kind, how, leaf, unchanged, complete))
        self._plans[id(grouped_field_set)] = (grouped_field_set, plans)
        return plans

    def execute_fields(
        self,
        parent_type: GraphQLObjectType,
        source_value: Any,
        path: Path | None,
        grouped_field_set: Any,
        position_context: Any,
    ) -> Any:
        if position_context is not None or self._has_middleware:  # incremental delivery, middleware
            return super().execute_fields(parent_type, source_value, path, grouped_field_set, position_context)
        return self._run_plans(parent_type, source_value, path, self._plans_for(parent_type, grouped_field_set))

    def _run_plans(self, parent_type: GraphQLObjectType, source_value: Any, path: Path | None, plans: Any) -> Any:
        """``execute_fields`` over planned fields."""
        results: dict[str, Any] = {}
        awaitable_fields: list[str] = []
        is_awaitable = self._is_awaitable
        context_info = self._context_info
        type_name = parent_type.name
        try:
            for response_name, fdl, field_def, kind, how, leaf, unchanged, complete in plans:
                if kind == _SLOW:
                    result = self.execute_field(
                        parent_type, source_value, fdl, Path(path, response_name, type_name), None
                    )
                    if result is Undefined:
                        continue
                    results[response_name] = result
                    if is_awaitable(result):
                        awaitable_fields.append(response_name)
                    continue
                try:
                    if kind == _ATTRIBUTE:
                        value = getattr(source_value, how)
                    elif kind == _CONTEXT_ONLY:
                        value = how(source_value, context_info)
                    else:
                        value = source_value
                    if type(value) not in _PLAIN and is_awaitable(value):
                        field_path = Path(path, response_name, type_name)
                        info = self._info(field_def, fdl, parent_type, field_path)
                        result = self.complete_awaitable_value(field_def.type, fdl, info, field_path, value, None)
                        awaitable_fields.append(response_name)
                    elif type(value) is unchanged:  # a string or flag read off a row: nothing to coerce
                        result = value
                    elif leaf is not None and type(value) in _SCALARS:
                        # a scalar read off a row, no path needed unless it fails
                        result = leaf.coerce_output_value(value)
                        if result is None or result is Undefined:
                            self.complete_leaf_value(leaf, value)  # raises graphql-core's own error
                    else:
                        field_path = Path(path, response_name, type_name)
                        result = complete(fdl, parent_type, field_path, value)
                        if type(result) not in _PLAIN and is_awaitable(result):
                            result = self._await_completed(result, field_def.type, fdl, field_path)
                            awaitable_fields.append(response_name)
                except Exception as raw_error:
                    self.handle_field_error(raw_error, field_def.type, fdl, Path(path, response_name, type_name))
                    result = None
                results[response_name] = result
        except Exception:
            if awaitable_fields:
                self.settle_in_background([results[f] for f in awaitable_fields])
            raise
        if not awaitable_fields:
            return results
        return self._gather_fields(results, awaitable_fields)

    async def _gather_fields(self, results: dict[str, Any], awaitable_fields: list[str]) -> dict[str, Any]:
        if len(awaitable_fields) == 1:
            results[awaitable_fields[0]] = await results[awaitable_fields[0]]
        else:
            awaited = await gather_with_cancel(*(results[f] for f in awaitable_fields))
            results.update(zip(awaitable_fields, awaited, strict=True))
        return results

    async def _await_completed(self, completed: Any, return_type: Any, fdl: Any, path: Path) -> Any:
        try:
            return await completed
        except Exception as raw_error:
            self.handle_field_error(raw_error, return_type, fdl, path)
            return None

    def _info(self, field_def: Any, fdl: Any, parent_type: GraphQLObjectType, path: Path) -> Any:
        return self.build_resolve_info(field_def, to_nodes(fdl), parent_type, path)

    def _field_info(self, fdl: Any, parent_type: GraphQLObjectType, path: Path) -> Any:
        """The resolve info of the field being completed, for graphql-core's own code paths."""
        return self._info(self.schema.get_field(parent_type, fdl[0].node.name.value), fdl, parent_type, path)

    def _slow_complete(self, return_type: Any, fdl: Any, parent_type: GraphQLObjectType, path: Path, value: Any) -> Any:
        """graphql-core's own completion, with a real resolve info."""
        return self.complete_value(return_type, fdl, self._field_info(fdl, parent_type, path), path, value, None)

    # -- completers: complete(fdl, parent_type, path, value) -> completed value ----------------

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
                raise _null_error(fdl, parent_type)
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
                    raise _null_error(fdl, parent_type)
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
                if type(item) not in _PLAIN and is_awaitable(item):
                    info = self._field_info(fdl, parent_type, path)
                    completed_results.append(
                        self.complete_awaitable_list_item_value(item, item_type, fdl, info, item_path, None)
                    )
                    awaitable_indices.append(index)
                    continue
                try:
                    completed = complete_item(fdl, parent_type, item_path, item)
                    if type(completed) not in _PLAIN and is_awaitable(completed):
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
                    raise _null_error(fdl, parent_type)
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
                entry = (fdl, plans, {} if _only_attribute_leaves(plans) else None)
                subfield_plans[id(fdl)] = entry
            completed = self._run_plans(return_type, value, path, entry[1])
            if entry[2] is not None and _immutable(value):
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


__all__ = ["CasewayExecutor", "context_only"]
