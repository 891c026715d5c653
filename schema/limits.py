"""Bounded work per GraphQL operation, measured before anything runs, cheapest check first.

1. Characters, before parsing (the parser reads each one, a comment's too); then tokens, while
   parsing: graphql-core stops at ``max_tokens`` (the parse cache keys by it).
2. Depth, aliases and cost, in one walk of the document that visits each fragment once
   (its result is remembered and reused at every spread): linear in the document's size,
   whatever it expands to. A chain of fragments that each spread the next twice expands to
   2^n selections; measured here it is n fragments.
3. graphql-core's own validation (cached per document), only for a document within bounds.

The cost is GitHub's node count: a connection field (one with a ``first`` argument) returns
``first`` nodes (20 when absent, at most 100) and multiplies the cost of everything below it;
any other object field counts one per parent; a field may carry its own weight
(``metadata={COST: n}``, e.g. ``Workflow.diagram``); a list without ``first`` declares its
longest length (``metadata={MAX_ITEMS: n}``, e.g. ``CaseRole.pickList``) and counts as a
connection of that page size. Every refusal is a GraphQL error with an
``extensions.code``; the accepted cost is reported in the response's ``extensions.cost``.

4. While it runs, over HTTP and WebSocket alike (the hook is the schema's, not a transport's):
   a query or mutation is stopped at ``operation_timeout`` (``TIMEOUT``), and one connection
   runs at most ``ws_max_operations`` of them at once (``TOO_MANY_OPERATIONS``). A subscription
   is neither: it lives as long as its connection by design, and each of its events is bounded
   by the cost limit of its document (its setup is cheap: the resolver reads nothing until the
   first event).
"""

import asyncio
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from graphql import (
    DocumentNode,
    ExecutionResult,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLNamedType,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    VariableNode,
    execute_sync,
    get_named_type,
    is_composite_type,
    is_interface_type,
    is_object_type,
)
from graphql.error import GraphQLSyntaxError
from strawberry.extensions import SchemaExtension
from strawberry.extensions.parser_cache import _get_parse_cache
from strawberry.extensions.validation_cache import _get_validate_cache

from resolvers.pagination import DEFAULT_FIRST, MAX_FIRST
from schema import introspection

log = logging.getLogger("caseway.limits")

COST = "caseway_cost"  # a field's weight, in its strawberry metadata (default: 1 for objects, 0 for scalars)
MAX_ITEMS = "caseway_max_items"  # a list's longest length, in its metadata: it multiplies what the list contains


class Limits(NamedTuple):
    """The limits of server/settings.py; the server's settings reach each operation through its
    context (``context.settings``). The defaults here serve a schema run without them (tools)."""

    max_tokens: int = 2_000
    max_depth: int = 15
    max_aliases: int = 50
    max_cost: int = 50_000
    operation_timeout: float = 10.0
    ws_max_operations: int = 10
    max_chars: int = 100_000

    @classmethod
    def of(cls, settings: Any) -> "Limits":
        """From an object with the settings' attributes (the schema does not import the server)."""
        return cls(
            settings.max_query_tokens,
            settings.max_query_depth,
            settings.max_aliases,
            settings.max_query_cost,
            settings.operation_timeout,
            settings.ws_max_operations,
            settings.max_query_chars,
        )


@dataclass(frozen=True, slots=True)
class Shape:
    """What an operation may do: its deepest field, its aliased fields and its node count,
    all counted as if every fragment were written out."""

    depth: int
    aliases: int
    cost: int
    subscription: bool = False  # its events do not repeat the cost in their extensions
    introspection: int = 0  # nodes its `__schema` and `__type` fields return (schema/introspection.py)
    introspection_limit: int = 0  # one full introspection of the schema
    alike: bool = False  # a query of introspection fields alone: the same answer for every viewer


def refusal(shape: Shape, limits: Limits) -> GraphQLError | None:
    """The error for the first limit the shape passes, if any."""
    if shape.depth > limits.max_depth:
        return _error(
            f"The query is {shape.depth} fields deep; at most {limits.max_depth} are allowed.", "QUERY_TOO_DEEP"
        )
    if shape.aliases > limits.max_aliases:
        return _error(
            f"The query has {shape.aliases} aliases (fragments counted at each use); at most {limits.max_aliases}"
            " are allowed.",
            "TOO_MANY_ALIASES",
        )
    if shape.introspection > shape.introspection_limit:
        return _error(
            f"The query's introspection asks for more than the whole schema (at most {shape.introspection_limit}"
            " nodes, one full introspection, are allowed); ask for it once.",
            "QUERY_TOO_COSTLY",
            limit=shape.introspection_limit,
        )
    if shape.cost > limits.max_cost:
        return _error(
            f"The query may return {shape.cost} nodes (each connection counts its `first`, 20 when absent); at most"
            f" {limits.max_cost} are allowed. Ask for smaller pages or fewer nested connections.",
            "QUERY_TOO_COSTLY",
            cost=shape.cost,
            limit=limits.max_cost,
        )
    return None


def _error(message: str, code: str, **details: Any) -> GraphQLError:
    return GraphQLError(message, extensions={"code": code, **details})


# --- Measuring a document ---------------------------------------------------------------------


class _Weights:
    """Per schema, computed once: each field's weight and which fields are connections."""

    def __init__(self, schema: GraphQLSchema) -> None:
        self.weights: dict[tuple[str, str], int] = {}
        self.connections: set[tuple[str, str]] = set()
        self.lists: dict[tuple[str, str], int] = {}  # bounded lists: their longest length
        wrappers: set[str] = set()  # connection and edge types: their fields wrap nodes already counted
        for type_ in schema.type_map.values():
            if not (is_object_type(type_) or is_interface_type(type_)) or type_.name.startswith("__"):
                continue
            for name, field in type_.fields.items():  # type: ignore[union-attr]
                returned = get_named_type(field.type)
                definition = (field.extensions or {}).get("strawberry-definition")
                metadata = getattr(definition, "metadata", None) or {}
                self.weights[type_.name, name] = int(metadata.get(COST, 1 if is_composite_type(returned) else 0))
                if MAX_ITEMS in metadata:
                    self.lists[type_.name, name] = int(metadata[MAX_ITEMS])
                if "first" in field.args and is_object_type(returned):
                    self.connections.add((type_.name, name))
                    wrappers.add(returned.name)
                    edges = returned.fields.get("edges")  # type: ignore[union-attr]
                    if edges is not None:
                        wrappers.add(get_named_type(edges.type).name)
        for type_name, name in list(self.weights):
            if type_name in wrappers:
                self.weights[type_name, name] = 0


_weights_by_schema: dict[int, _Weights] = {}


def _weights(schema: GraphQLSchema) -> _Weights:
    found = _weights_by_schema.get(id(schema))
    if found is None:
        found = _weights_by_schema[id(schema)] = _Weights(schema)
    return found


_Size = tuple[int, int, int, int]  # depth, aliases, cost, introspection nodes


class _Measure:
    """One walk of an operation. Fragments are measured once and remembered (per fragment:
    depth, aliases and cost at a multiplier of one, since a fragment's cost scales with the
    nodes above it). Introspection fields are counted by schema/introspection.py, their nodes
    both in the cost and on their own (bounded by one full introspection)."""

    def __init__(
        self, schema: GraphQLSchema, document: DocumentNode, variables: Mapping[str, Any], defaults: dict[str, Any]
    ) -> None:
        self.schema = schema
        self.weights = _weights(schema)
        self.variables = variables
        self.defaults = defaults
        self.fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
        self.memo: dict[str, _Size] = {}
        self.first_variables: set[str] = set()  # the variables the shape depends on
        self.budget = introspection.budget(schema)
        self.introspection = introspection.Walk(schema, self.fragments, variables, self.budget)

    def selection_set(self, node: SelectionSetNode | None, parent: GraphQLNamedType | None) -> _Size:
        """(depth, aliases, cost, introspection) of a selection set on ``parent`` (None: unknown,
        left to validation)."""
        if node is None:
            return 0, 0, 0, 0
        depth = aliases = cost = nodes = 0
        for selection in node.selections or ():
            if isinstance(selection, FieldNode):
                d, a, c, n = self.field(selection, parent)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                inner = self.schema.get_type(condition.name.value) if condition else parent
                d, a, c, n = self.selection_set(selection.selection_set, inner)
            elif isinstance(selection, FragmentSpreadNode):
                d, a, c, n = self.fragment(selection.name.value)
            else:
                continue
            depth, aliases, cost, nodes = max(depth, d), aliases + a, cost + c, nodes + n
        return depth, aliases, cost, nodes

    def fragment(self, name: str) -> _Size:
        found = self.memo.get(name)
        if found is not None:
            return found
        definition = self.fragments.get(name)
        if definition is None:
            return 0, 0, 0, 0  # an unknown fragment: validation reports it
        self.memo[name] = (0, 0, 0, 0)  # a cycle counts nothing more; validation refuses it
        found = self.memo[name] = self.selection_set(
            definition.selection_set, self.schema.get_type(definition.type_condition.name.value)
        )
        return found

    def field(self, node: FieldNode, parent: GraphQLNamedType | None) -> _Size:
        name = node.name.value
        if name in introspection.INTROSPECTION_FIELDS and parent is not None and parent is self.schema.query_type:
            return self.introspection_field(node)
        field_def = getattr(parent, "fields", {}).get(name) if parent is not None else None
        returned = get_named_type(field_def.type) if field_def is not None else None
        key = (parent.name, name) if parent is not None else None
        depth, aliases, cost, nodes = self.selection_set(node.selection_set, returned)
        aliases += node.alias is not None
        if key in self.weights.connections:
            page = self.first(node)
            cost = page + page * cost
        elif key in self.weights.lists:
            page = self.weights.lists[key]  # type: ignore[index]
            cost = page + page * cost
        else:
            cost += self.weights.weights.get(key, 1 if node.selection_set else 0)  # type: ignore[arg-type]
        return depth + 1, aliases, cost, nodes

    def introspection_field(self, node: FieldNode) -> _Size:
        """A `__schema` or `__type` field: its depth and aliases as any field's (the types below
        it are left unknown), its nodes counted over the schema; past the bound, one more than
        the bound (the walk stopped there)."""
        depth, aliases, _, _ = self.selection_set(node.selection_set, None)
        for argument in node.arguments or ():
            if isinstance(argument.value, VariableNode):
                self.first_variables.add(argument.value.name.value)  # `__type(name: $n)`: its answer depends on it
        try:
            nodes = self.introspection.root_field(node)
        except introspection.OverBudget:
            nodes = self.budget.nodes + 1
        return depth + 1, aliases + (node.alias is not None), nodes, nodes

    def first(self, node: FieldNode) -> int:
        """The page size a connection field asks for, as check_first will see it (clamped: a
        value out of range is refused when the field runs)."""
        value: Any = None
        for argument in node.arguments or ():
            if argument.name.value != "first":
                continue
            if isinstance(argument.value, IntValueNode):
                value = _int_literal(argument.value.value)
            elif isinstance(argument.value, VariableNode):
                name = argument.value.name.value
                self.first_variables.add(name)
                value = self.variables.get(name, self.defaults.get(name))
        if not isinstance(value, int) or isinstance(value, bool):
            return DEFAULT_FIRST
        return max(0, min(value, MAX_FIRST))


def _int_literal(text: str) -> int | None:
    return int(text) if len(text) <= 20 else MAX_FIRST  # no conversion of a 5,000-digit literal


def _operation(document: DocumentNode, name: str | None) -> OperationDefinitionNode | None:
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if name is None:
        return operations[0] if len(operations) == 1 else None
    return next((o for o in operations if o.name is not None and o.name.value == name), None)


def _defaults(operation: OperationDefinitionNode) -> dict[str, Any]:
    return {
        v.variable.name.value: _int_literal(v.default_value.value)
        for v in operation.variable_definitions or ()
        if isinstance(v.default_value, IntValueNode)
    }


class _Entry:
    """A document's measures: the variables its page sizes read, and the shapes seen for
    their values (a few per document: clients page with a handful of sizes)."""

    __slots__ = ("first_variables", "shapes")

    def __init__(self, first_variables: tuple[str, ...]) -> None:
        self.first_variables = first_variables
        self.shapes: dict[tuple[Any, ...], Shape] = {}


_CACHE_SIZE = 512
_SHAPES_PER_DOCUMENT = 16
_cache: OrderedDict[tuple[int, str, str | None], _Entry] = OrderedDict()


def measure(
    schema: GraphQLSchema, document: DocumentNode, operation_name: str | None, variables: Mapping[str, Any] | None
) -> Shape | None:
    """The shape of the operation that will run (None when the document names no single
    operation: graphql-core refuses it). Cached by schema, document text and operation, then by
    the values of the variables that set page sizes."""
    variables = variables if isinstance(variables, Mapping) else {}
    source = document.loc.source.body if document.loc is not None else None
    key = (id(schema), source, operation_name) if source is not None else None
    entry = _cache.get(key) if key is not None else None  # type: ignore[arg-type]
    if entry is not None:
        _cache.move_to_end(key)  # type: ignore[arg-type]
        values = tuple(_hashable(variables.get(v)) for v in entry.first_variables)
        shape = entry.shapes.get(values)
        if shape is not None:
            return shape
    operation = _operation(document, operation_name)
    if operation is None:
        return None
    walk = _Measure(schema, document, variables, _defaults(operation))
    root = schema.get_root_type(operation.operation)
    depth, aliases, cost, nodes = walk.selection_set(operation.selection_set, root)
    subscription = operation.operation is OperationType.SUBSCRIPTION
    shape = Shape(
        depth=depth,
        aliases=aliases,
        cost=cost,
        subscription=subscription,
        introspection=nodes,
        introspection_limit=walk.budget.nodes,
        alike=operation.operation is OperationType.QUERY and _alike(operation.selection_set, walk.fragments),
    )
    if key is not None:
        if entry is None:
            entry = _cache[key] = _Entry(tuple(sorted(walk.first_variables)))
            if len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
        if len(entry.shapes) < _SHAPES_PER_DOCUMENT:
            entry.shapes[tuple(_hashable(variables.get(v)) for v in entry.first_variables)] = shape
    return shape


def _hashable(value: Any) -> Any:
    """A variable's value as a cache key: ints as they are (True is not 1 here), a type's name
    (`__type(name: $n)`) as it is, else its type."""
    if isinstance(value, int | None) and not isinstance(value, bool):
        return value
    return value if isinstance(value, str) and len(value) <= 200 else repr(type(value))


def _alike(selections: SelectionSetNode, fragments: Mapping[str, FragmentDefinitionNode]) -> bool:
    """Whether every root field is an introspection field (or `__typename`): the answer is then
    the same for every viewer."""
    pending, seen = [selections], set()
    while pending:
        for selection in pending.pop().selections or ():
            if isinstance(selection, FieldNode):
                if selection.name.value not in introspection.ROOT_FIELDS_ALIKE:
                    return False
            elif isinstance(selection, InlineFragmentNode):
                pending.append(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode) and selection.name.value not in seen:
                seen.add(selection.name.value)
                fragment = fragments.get(selection.name.value)
                if fragment is None:
                    return False
                pending.append(fragment.selection_set)
    return True


# --- The extension ----------------------------------------------------------------------------


class BoundedWork(SchemaExtension):
    """Parses (through the shared parse cache, stopping at the token limit), checks the
    operation against the limits of the server's settings (from the request context), then
    validates it (through the shared validation cache) — so a document refused by a cheap check
    never reaches graphql-core's rules. Takes the place of ParserCache and ValidationCache."""

    def __init__(self, maxsize: int = 512) -> None:
        self.parse = _get_parse_cache(maxsize)
        self.validate = _get_validate_cache(maxsize)
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
            raise _error(
                f"The document is {len(context.query)} characters long (comments and whitespace included); at most"
                f" {self.limits.max_chars} are allowed.",
                "QUERY_TOO_LARGE",
            )
        if context.query:  # strawberry refuses a missing query itself
            try:
                context.graphql_document = self.parse(context.query, **context.parse_options)
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
        error = refusal(shape, self.limits) if shape is not None else None
        if error is not None:
            context.pre_execution_errors = [error]
        else:
            errors = self.validate(context.schema._schema, document, context.validation_rules)
            context.pre_execution_errors = [_about_the_document(e) for e in errors]
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
                raise _error(
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
            raise _error(f"The operation took longer than {seconds:g} seconds and was stopped.", "TIMEOUT") from None
        finally:
            if connection is not None:
                connection.running_operations -= 1

    def get_results(self) -> dict[str, Any]:
        if self.cost is None:
            return {}
        return {"cost": {"requested": self.cost, "limit": self.limits.max_cost}}


_TOKENS_EXCEEDED = "tokens. Parsing aborted."
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
    return GraphQLError(
        error.message.split("; use sys.")[0],  # Python's advice on its digit limit means nothing to a client
        nodes=error.nodes,
        extensions={**(error.extensions or {}), "code": "GRAPHQL_VALIDATION_FAILED"},
    )


__all__ = ["COST", "MAX_ITEMS", "BoundedWork", "Limits", "Shape", "measure", "refusal"]
