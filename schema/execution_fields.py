"""The fast path of Caseway's executor, part 1: how each field of a selection is run.

Why it exists: graphql-core spends most of a big read the resolvers answer on bookkeeping per
field (a resolve info, the resolver's wrapping, awaitable checks, a chain of ``complete_*``
calls) for each of the thousands of fields a nested read returns. ``python -m bench.executor``
measures it against graphql-core's own ``execute_fields`` (in-process CPU per request, small
bench data on PostgreSQL, 2026-11-26): R1 with the planner off 17.6 against 53.5 ms, a filtered
project list 8.5 against 14.3, ``Project.history`` 5.7 against 8.4, ``myTasks`` 13.7 against
17.3; a mutation's payload and the reads the planner compiles gain nothing. Worth keeping
while reads fall back to the resolvers; measure again when the planner covers more.

Here: a field's *plan*, made once per selection (``FastFields._plans_for``) and run for every
row (``FastFields._run_plans``):

- a *basic* field (no resolver, no arguments: an attribute of the row) is read with
  ``getattr``;
- a resolver marked ``@context_only`` (it reads nothing of ``info`` but ``info.context``) is
  called directly, with no resolve info built;
- a subscription's root field, executed for an event, is the event;
- anything else is graphql-core's own ``execute_field``.

Values are completed by ``schema/execution_completers.py``. What it costs to keep: it overrides
graphql-core's ``execute_fields`` and calls its ``execute_field``, ``complete_awaitable_value``,
``complete_leaf_value``, ``build_resolve_info``, ``handle_field_error`` and
``settle_in_background``, and imports ``to_nodes`` from ``graphql.execution.executor`` and
``Path``, ``Undefined``, ``gather_with_cancel`` from ``graphql.pyutils``: internals the lock pins
(graphql-core 3.3.2). Upgrading graphql-core means running ``tests/api/test_execution.py``, which
compares this executor with graphql-core's own on every branch, and fixing what it finds.
"""

from collections.abc import Callable
from types import CoroutineType, GeneratorType
from typing import Any

from graphql import (
    GraphQLBoolean,
    GraphQLID,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLString,
    is_leaf_type,
    is_non_null_type,
)
from graphql.execution.executor import to_nodes
from graphql.pyutils import Path, Undefined, gather_with_cancel

CONTEXT_ONLY = "__caseway_context_only__"

# Types whose values are certainly not awaitable: no further check needed. Starts with the
# built-in ones and learns the classes met that offer no way to be awaited (rows, workflow
# specs, edges): a nested read completes thousands of them, each an is_awaitable call before.
PLAIN: set[type] = {type(None), bool, int, float, str, list, tuple, dict}
_PLAIN_LIMIT = 1024  # row classes are made per column set; a bound, should they churn


def learning(is_awaitable: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """``is_awaitable``, noting in ``PLAIN`` the class of a value that is not and cannot be."""

    def awaitable(value: Any) -> bool:
        if is_awaitable(value):
            return True
        kind = type(value)
        if (
            len(PLAIN) < _PLAIN_LIMIT
            and not hasattr(kind, "__await__")
            and not hasattr(kind, "__getattr__")  # could answer for __await__ per instance
            and not issubclass(kind, CoroutineType | GeneratorType)
        ):
            PLAIN.add(kind)
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


class ContextInfo:
    """What a ``@context_only`` resolver receives as ``info``."""

    __slots__ = ("context",)

    def __init__(self, context: Any) -> None:
        self.context = context


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


def only_attribute_leaves(plans: list[tuple[Any, ...]]) -> bool:
    """Every field is an attribute of the value completed as a scalar or enum."""
    return bool(plans) and all(plan[3] == _ATTRIBUTE and plan[5] is not None for plan in plans)


_IMMUTABLE: dict[type, bool] = {}


def immutable(value: Any) -> bool:
    """Rows (namedtuples) and frozen dataclasses (workflow specs) cannot change under us."""
    kind = type(value)
    known = _IMMUTABLE.get(kind)
    if known is None:
        params = getattr(kind, "__dataclass_params__", None)
        known = _IMMUTABLE[kind] = issubclass(kind, tuple) or bool(params and params.frozen)
    return known


def null_error(fdl: Any, parent_type: Any) -> TypeError:
    """graphql-core's error for a null in a non-null field."""
    return TypeError(f"Cannot return null for non-nullable field {parent_type}.{fdl[0].node.name.value}.")


def _leaf_type(return_type: GraphQLOutputType) -> Any:
    """The scalar or enum type of a (non-null) leaf field, else None."""
    inner = return_type.of_type if is_non_null_type(return_type) else return_type  # type: ignore[union-attr]
    return inner if is_leaf_type(inner) else None


class FastFields:
    """``execute_fields`` over planned fields; mixed into ``CasewayExecutor`` (schema/execution.py)
    before graphql-core's execution context, whose methods and state it uses."""

    # Set by CasewayExecutor.__init__ (and dropped after each execution by _forget_plans).
    _plans: dict[int, tuple[Any, list[tuple[Any, ...]]]]
    _context_info: ContextInfo
    _has_middleware: bool
    _is_awaitable: Callable[[Any], bool]

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
                    if type(value) not in PLAIN and is_awaitable(value):
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
                        if type(result) not in PLAIN and is_awaitable(result):
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
