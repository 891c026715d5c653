"""An operation's shape (schema/limits/bounds.py), measured by one walk of its document and
cached by schema, document text and operation, then by the values of the variables that set
page sizes."""

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
)

from schema import introspection
from schema.limits.bounds import Shape
from schema.limits.walk import Walk, int_literal


def _operation(document: DocumentNode, name: str | None) -> OperationDefinitionNode | None:
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if name is None:
        return operations[0] if len(operations) == 1 else None
    return next((o for o in operations if o.name is not None and o.name.value == name), None)


def _defaults(operation: OperationDefinitionNode) -> dict[str, Any]:
    return {
        v.variable.name.value: int_literal(v.default_value.value)
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
    walk = Walk(schema, document, variables, _defaults(operation))
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
        introspection_bytes=walk.budget.size,
        alike=operation.operation is OperationType.QUERY and _alike(operation.selection_set, walk.fragments),
        repeated=walk.repeated[0],
        repeated_key=walk.repeated[1],
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
