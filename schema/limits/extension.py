"""``BoundedWork``, the schema extension that holds every operation to the limits: the
document's length and tokens while parsing, its shape before validation, the time limit and
a connection's concurrent operations while it runs (the package's points 1 to 4), and the
accepted cost in the response's ``extensions.cost``."""

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

from graphql import ExecutionResult, GraphQLError, OperationType, execute_sync, parse
from graphql.error import GraphQLSyntaxError
from graphql.validation.rules import overlapping_fields_can_be_merged
from graphql.validation.validate import ValidationAbortedError
from strawberry.extensions import SchemaExtension
from strawberry.schema.schema import validate_document

from schema import introspection
from schema.limits.bounds import Limits, limit_error, refusal
from schema.limits.documents import Documents, Key
from schema.limits.shapes import measure

log = logging.getLogger("caseway.limits")

# graphql-core's overlap check stops after this much work (its own default, 500,000, was 1.4 s
# here); the dashboard's documents spend at most 27, and a document within the repeat limit at
# most ~145,000 (40 ms): refused past 20,000, a few milliseconds. Read when the rule starts.
VALIDATION_WORK = 20_000
overlapping_fields_can_be_merged.MAX_COMPLEXITY_BUDGET = VALIDATION_WORK


class BoundedWork(SchemaExtension):
    """Parses (stopping at the token limit), checks the operation against the limits of the
    server's settings (from the request context), then validates it — so a document refused by
    a cheap check never reaches graphql-core's rules; a valid document is remembered, parsed and
    validated, by its text (schema/limits/documents.py). Takes the place of ParserCache and
    ValidationCache."""

    def __init__(self) -> None:
        self.key: Key | None = None
        self.known = False  # the document was found remembered: parsed and valid
        self.limits = Limits()
        self.cost: int | None = None
        self.answer_key: tuple[Any, ...] | None = None  # of an introspection answer to serve or keep

    def on_operation(self) -> Iterator[None]:
        settings = getattr(self.execution_context.context, "settings", None)
        if hasattr(settings, "max_query_cost"):
            self.limits = Limits.of(settings)
        self.execution_context.parse_options["max_tokens"] = self.limits.max_tokens
        yield

    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        if context.query and len(context.query) > self.limits.max_chars:  # before the parser reads each one
            raise limit_error(
                f"The document is {len(context.query)} characters long (comments and whitespace included); at most"
                f" {self.limits.max_chars} are allowed.",
                "QUERY_TOO_LARGE",
            )
        if context.query:  # strawberry refuses a missing query itself
            self.key = Key(context.query, self.limits.max_tokens, tuple(context.validation_rules))
            known = _documents.get(self.key)
            self.known = known is not None
            try:
                context.graphql_document = known or parse(context.query, **context.parse_options)
            except GraphQLSyntaxError as error:
                code = "TOO_MANY_TOKENS" if _TOKENS_EXCEEDED in error.message else "GRAPHQL_PARSE_FAILED"
                raise GraphQLError(
                    error.message, source=error.source, positions=error.positions, extensions={"code": code}
                ) from None
        yield

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        document = context.graphql_document
        assert document is not None
        shape = measure(context.schema._schema, document, context.operation_name, context.variables)
        refused = refusal(shape, self.limits) if shape is not None else None
        if refused is not None:
            context.pre_execution_errors = [refused]
        else:
            rules = tuple(context.validation_rules)
            errors = [] if self.known else validate_document(context.schema._schema, document, rules)
            context.pre_execution_errors = [_about_the_document(e) for e in errors]
            if not errors and not self.known and self.key is not None:
                _documents.put(self.key, document)
            if shape is not None and not shape.subscription and not errors:
                self.cost = shape.cost
            if shape is not None and shape.alike and not errors:
                source = document.loc.source.body if document.loc is not None else ""
                self.answer_key = _answers.key(
                    context.schema._schema, source, context.operation_name, context.variables
                )
        yield

    async def on_execute(self) -> AsyncIterator[None]:
        """A query or mutation runs within the time limit, and a live connection (whose context
        is shared by its operations) runs a bounded number at once; see the module's point 4."""
        context = self.execution_context
        if context.operation_type is OperationType.SUBSCRIPTION:
            yield
            return
        connection = context.context if getattr(context.context, "live", False) else None
        if connection is not None:
            if connection.running_operations >= self.limits.ws_max_operations:
                raise limit_error(
                    f"At most {self.limits.ws_max_operations} queries and mutations run at once on one connection;"
                    " wait for one to finish.",
                    "TOO_MANY_OPERATIONS",
                )
            connection.running_operations += 1
        if self.answer_key is not None:
            context.result = _introspection_answer(context, self.answer_key)
        seconds = self.limits.operation_timeout
        limit = asyncio.timeout(seconds)
        try:
            async with limit:
                yield
        except TimeoutError:
            if not limit.expired():
                raise
            # Whatever it awaited was cancelled; a write's transaction rolled back unless it had committed.
            log.warning("an operation was stopped after %s seconds", seconds)
            raise limit_error(
                f"The operation took longer than {seconds:g} seconds and was stopped.", "TIMEOUT"
            ) from None
        finally:
            if connection is not None:
                connection.running_operations -= 1

    def get_results(self) -> dict[str, Any]:
        if self.cost is None:
            return {}
        return {"cost": {"requested": self.cost, "limit": self.limits.max_cost}}


_TOKENS_EXCEEDED = "tokens. Parsing aborted."
_documents = Documents()
_answers = introspection.AnswerCache()


def _introspection_answer(context: Any, key: tuple[Any, ...]) -> ExecutionResult:
    """An operation of introspection fields alone: from the cache, else executed by
    graphql-core's plain executor (introspection resolves synchronously: half the time of the
    general path) and kept when it succeeded."""
    answer = _answers.get(key)
    if answer is not None:
        return ExecutionResult(data=answer)
    result = execute_sync(
        context.schema._schema,
        context.graphql_document,
        variable_values=context.variables,
        operation_name=context.operation_name,
    )
    if result.data and not result.errors:
        _answers.put(key, result.data)
    return result


def _about_the_document(error: GraphQLError) -> GraphQLError:
    """Every validation error is the document's fault, told to the client with a code (a rule
    that set its own, INVALID_INPUT or TOO_MANY_LOGINS, keeps it) — even when a value's
    conversion raised (an integer literal of 5,000 digits), which is not masked as unexpected."""
    if error.original_error is None and (error.extensions or {}).get("code"):
        return error
    if isinstance(error, ValidationAbortedError):
        return limit_error(
            "The query's fields take too much work to compare (fields of one name in one selection set, fragments"
            f" merged in, are compared pairwise; at most {VALIDATION_WORK} steps are allowed): ask for each once.",
            "QUERY_TOO_COMPLEX",
        )
    return GraphQLError(
        error.message.split("; use sys.")[0],  # Python's advice on its digit limit means nothing to a client
        nodes=error.nodes,
        extensions={**(error.extensions or {}), "code": "GRAPHQL_VALIDATION_FAILED"},
    )
