"""strawberry's Schema with a leaner runner for the hooks it calls once per result.

A live event is one result per subscriber: 1,000 results for one entry at 1,000 subscribers.
For each, strawberry's runner awaits every extension's ``get_results`` (ours all return
``{}``) and wraps each ``on_stream_result`` hook in a generator context manager entered
through an exit stack: 14 µs of a delivery's ~100. This runner calls only the extensions
that override a hook, directly. A hook written as a generator (code around a ``yield``)
still goes through strawberry's own context manager.
"""

import inspect
from types import TracebackType
from typing import Any

import strawberry
from graphql import GraphQLError
from strawberry.extensions import SchemaExtension
from strawberry.extensions.runner import SchemaExtensionsRunner
from strawberry.types import ExecutionContext
from strawberry.utils.await_maybe import await_maybe
from strawberry.utils.logging import StrawberryLogger

from resolvers.errors import is_client_error

_DEFAULT_RESULTS = SchemaExtension.get_results
_DEFAULT_STREAM_HOOK = SchemaExtension.on_stream_result


class _StreamResultHooks:
    """What strawberry's StreamResultContextManager does for plain hooks: call each with the
    result on entry; nothing on exit."""

    __slots__ = ("hooks", "result")

    def __init__(self, hooks: list[tuple[SchemaExtension, Any, bool]], result: Any) -> None:
        self.hooks = hooks
        self.result = result

    def __enter__(self) -> None:
        for extension, hook, is_async in self.hooks:
            if is_async:
                raise RuntimeError(
                    f"SchemaExtension hook {extension}.on_stream_result failed to complete synchronously."
                )
            hook(extension, self.result)

    def __exit__(self, *exc: object) -> None:
        return None

    async def __aenter__(self) -> None:
        for extension, hook, is_async in self.hooks:
            if is_async:
                await hook(extension, self.result)
            else:
                hook(extension, self.result)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


class LeanExtensionsRunner(SchemaExtensionsRunner):
    """Per-result hooks of only the extensions that define them, planned once per operation
    (a subscription's runner serves all of its events)."""

    _result_sources: list[SchemaExtension] | None = None
    # None: not planned yet; False: some hook is a generator, strawberry's own way is needed.
    _stream_hooks: list[tuple[SchemaExtension, Any, bool]] | bool | None = None

    async def get_extensions_results(self, ctx: ExecutionContext) -> dict[str, Any]:
        if self._result_sources is None:
            self._result_sources = [e for e in self.extensions if type(e).get_results is not _DEFAULT_RESULTS]
        data: dict[str, Any] = {}
        for extension in self._result_sources:
            data.update(await await_maybe(extension.get_results()))
        data.update(ctx.extensions_results)
        return data

    def on_stream_result(self, result: Any) -> Any:
        if self._stream_hooks is None:
            self._stream_hooks = _plain_stream_hooks(self.extensions)
        if self._stream_hooks is False:
            return super().on_stream_result(result)
        return _StreamResultHooks(self._stream_hooks, result)  # type: ignore[arg-type]


def _plain_stream_hooks(extensions: list[SchemaExtension]) -> list[tuple[SchemaExtension, Any, bool]] | bool:
    hooks = []
    for extension in extensions:
        hook = type(extension).on_stream_result
        if hook is _DEFAULT_STREAM_HOOK:
            continue
        if inspect.isgeneratorfunction(hook) or inspect.isasyncgenfunction(hook) or not callable(hook):
            return False
        hooks.append((extension, hook, inspect.iscoroutinefunction(hook)))
    return hooks


class Schema(strawberry.Schema):
    """strawberry's Schema, its operations run by LeanExtensionsRunner."""

    def process_errors(self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None) -> None:
        """Log what the server did wrong, with its traceback; a client's mistake (a refused
        document, a value no field accepts, a missing token) is answered, not logged: a guesser
        or a fuzzer must not be able to fill the log."""
        for error in errors:
            if not is_client_error(error):
                StrawberryLogger.error(error, execution_context)

    def create_extensions_runner(
        self, execution_context: ExecutionContext, extensions: list[SchemaExtension]
    ) -> SchemaExtensionsRunner:
        return LeanExtensionsRunner(execution_context=execution_context, extensions=extensions)


__all__ = ["LeanExtensionsRunner", "Schema"]
