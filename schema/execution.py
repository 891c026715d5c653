"""Caseway's executor: graphql-core's, with the few things a request needs of it, and a faster
road for the fields the resolvers answer.

A graphql-core execution context subclass (strawberry's, given to the schema in
schema/__init__.py), because these happen inside graphql-core's execution:

- a query's root field the read planner compiles (resolvers/compiled) is answered with its
  finished JSON from one SQL statement (``execute_field`` at the root);
- variables that cannot be coerced, or an unknown operation name, are the request's fault and
  carry the code ``BAD_USER_INPUT`` (``build``);
- a live event's result is computed once for the subscribers of a process that would all get
  the same (same operation, same view of the event; see resolvers/context.py), and each event
  is an execution of its own with no memo carried over (``build_per_event_executor``);
- the fields the resolvers answer take a shorter road than graphql-core's (``FastFields`` of
  schema/execution_fields.py, ``Completers`` of schema/execution_completers.py): with the
  planner in place it still pays, 1.3x to 3x less CPU on the reads the planner does not compile
  (``python -m bench.executor``); their docstrings say what keeping them costs.

No field is ever resolved twice, and results and errors are the ones graphql-core produces
(tests/api/test_execution.py runs both executors side by side).
"""

import json
from typing import Any

from graphql import ExecutionResult, GraphQLObjectType, OperationType
from graphql.execution.values import get_argument_values
from graphql.pyutils import Path
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from resolvers.compiled import TooDeep, compiled_root
from schema.execution_completers import Completers
from schema.execution_fields import ContextInfo, FastFields, context_only, learning

_UNKNOWN: Any = object()


class _SharedResult:
    """The executor of a live event whose result another subscriber computed."""

    __slots__ = ("result",)

    def __init__(self, result: ExecutionResult) -> None:
        self.result = result

    def execute_operation(self, serially: bool | None = None) -> ExecutionResult:
        return self.result


class CasewayExecutor(FastFields, Completers, StrawberryGraphQLCoreExecutionContext):
    """See the module docstring."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._context_info = ContextInfo(self.context_value)
        self._has_middleware = bool(self.middleware_manager and self.middleware_manager.middlewares)
        self._is_awaitable = learning(self.is_awaitable)
        # grouped field set -> its fields' plans; the sets are memoized by graphql-core for the
        # whole execution, so each selection is planned once however many rows it applies to.
        self._plans = {}
        self._completers = {}
        self._runtime_types = {}
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

    # -- compiled reads ----------------------------------------------------------------------

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


__all__ = ["CasewayExecutor", "context_only"]
