"""Introspection inside the cost limit, and its answers served from a cache.

An introspection field (`__schema`, `__type`) returns the schema itself, whose size the cost
model of schema/limits/ cannot see in the field types: `__Schema.types` is a list of every type,
`__Type.fields` of a type's fields, and `types { fields { type { ofType { fields … } } } }` nests
them. Unbounded, 50 aliases of one `__schema` fragment answered 5 MB and held the process for
seconds (issue 40). So the nodes an introspection will return are counted exactly, by walking
its selections over the schema (the answer is a function of the two): each (selection, schema
object) pair is counted once and its count reused wherever it appears again, so the walk's work
grows with the distinct pairs, not with what they expand to, and it stops as soon as the count
passes the schema's bound. The bound is one full introspection of this schema (the query
`graphql.get_introspection_query` makes with every option on, which asks for more than
GraphiQL's does): no client needs to read the schema twice in one request.

An operation made of introspection fields alone (GraphiQL's query, a code generator's) answers
the same for every viewer, so its answer is kept per schema, document, operation and variables
(`AnswerCache`): the first request of a document executes it, later ones are served at once.
"""

import json
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLSchema,
    InlineFragmentNode,
    SelectionSetNode,
    StringValueNode,
    VariableNode,
    execute_sync,
    get_introspection_query,
    is_abstract_type,
    is_enum_type,
    is_input_object_type,
    is_interface_type,
    is_object_type,
    is_wrapping_type,
    parse,
)

INTROSPECTION_FIELDS = frozenset({"__schema", "__type"})
ROOT_FIELDS_ALIKE = frozenset({"__schema", "__type", "__typename"})  # an operation of these answers alike for all


class OverBudget(Exception):
    """The walk passed its bound: the introspection asks for more than one full introspection."""


@dataclass(frozen=True, slots=True)
class Budget:
    """Per schema: the nodes one full introspection returns (the most an operation may ask
    for) and the walk's work allowed to count them (selections visited, three times what the
    full introspection needs: room for a client's own layout of it)."""

    nodes: int
    work: int
    size: int = 0  # the answer's bytes, estimated as ``Walk`` estimates them (0: not bounded)


class Walk:
    """Counts the objects the introspection fields of one document will return."""

    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: Mapping[str, FragmentDefinitionNode],
        variables: Mapping[str, Any],
        budget: Budget | None,
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self.budget = budget
        self.memo: dict[tuple[int, tuple[int, ...]], tuple[int, int]] = {}
        self.nodes = 0  # counted so far, over every introspection field of the operation
        self.size = 0  # bytes of the answer, estimated: its keys, scalars and descriptions
        self.work = 0

    def root_field(self, node: FieldNode) -> int:
        """Nodes of a `__schema` or `__type(name:)` field of the query root; adds them to the total."""
        if node.name.value == "__schema":
            value: Any = self.schema
        else:
            value = self.schema.get_type(self._name_argument(node) or "")
        counted, size = (
            (0, 0) if value is None else self._count(value, (node.selection_set,) if node.selection_set else ())
        )
        counted += value is not None
        self.nodes += counted
        self.size += size
        self._check()
        return counted

    def _name_argument(self, node: FieldNode) -> str | None:
        for argument in node.arguments or ():
            if argument.name.value != "name":
                continue
            if isinstance(argument.value, StringValueNode):
                return argument.value.value
            if isinstance(argument.value, VariableNode):
                found = self.variables.get(argument.value.name.value)
                return found if isinstance(found, str) else None
        return None

    def _check(self) -> None:
        budget = self.budget
        if budget is not None and (
            self.nodes > budget.nodes or self.work > budget.work or (budget.size and self.size > budget.size)
        ):
            raise OverBudget

    def _count(self, value: Any, selection_sets: tuple[SelectionSetNode, ...]) -> tuple[int, int]:
        """Objects below ``value`` (a schema, type, field, argument, enum value or directive)
        that the merged ``selection_sets`` select, and the bytes of its answer (each key, each
        scalar, each description and deprecation reason at its length: aliases of `description`
        repeat the schema's text, which counting objects alone did not see; issue 47, finding 5)."""
        key = (id(value), tuple(id(s) for s in selection_sets))
        found = self.memo.get(key)
        if found is not None:
            return found
        total = size = 0
        for response_key, nodes in self._collect(selection_sets).items():
            children = _children(self.schema, value, nodes[0].name.value)
            size += len(response_key) + 4  # "key": and a comma
            if children is None:
                size += _scalar_size(value, nodes[0].name.value)
                continue  # a scalar, or null here
            inner = tuple(n.selection_set for n in nodes if n.selection_set is not None)
            for child in children:
                self.work += 1
                nodes_below, size_below = self._count(child, inner)
                total += 1 + nodes_below
                size += 2 + size_below
            if self.budget is not None and total > self.budget.nodes:
                raise OverBudget  # what this value alone holds is too much already
        self.memo[key] = total, size
        self._check()
        return total, size

    def _collect(self, selection_sets: Iterable[SelectionSetNode]) -> dict[str, list[FieldNode]]:
        """Fields by response key, fragments written out (as graphql-core merges them)."""
        fields: dict[str, list[FieldNode]] = {}
        pending = list(selection_sets)
        seen: set[str] = set()
        while pending:
            for selection in pending.pop().selections or ():
                self.work += 1
                if isinstance(selection, FieldNode):
                    key = selection.alias.value if selection.alias else selection.name.value
                    fields.setdefault(key, []).append(selection)
                elif isinstance(selection, InlineFragmentNode):
                    pending.append(selection.selection_set)
                elif isinstance(selection, FragmentSpreadNode):
                    name = selection.name.value
                    fragment = self.fragments.get(name)
                    if fragment is not None and name not in seen:  # a cycle: validation refuses it
                        seen.add(name)
                        pending.append(fragment.selection_set)
        self._check()
        return fields


def _scalar_size(value: Any, field: str) -> int:
    """A scalar's bytes in the answer: a description or deprecation reason at its length, any
    other (a name, a kind, a flag) as a short string."""
    if field == "description":
        return len(getattr(value, "description", None) or "") + 2
    if field == "deprecationReason":
        return len(getattr(value, "deprecation_reason", None) or "") + 2
    return 12


def _children(schema: GraphQLSchema, value: Any, field: str) -> list[Any] | None:
    """The objects an introspection field returns for ``value`` (None for a scalar field or a
    null). Every deprecated field, argument and enum value is included: a bound, whatever
    `includeDeprecated` says."""
    if isinstance(value, GraphQLSchema):
        if field == "types":
            return list(value.type_map.values())
        if field == "directives":
            return list(value.directives)
        root = {"queryType": value.query_type, "mutationType": value.mutation_type}.get(field)
        if field == "subscriptionType":
            root = value.subscription_type
        return [root] if root is not None else None
    if field == "type":
        return [value.type] if hasattr(value, "type") else None
    if field == "args":
        return list(value.args.values()) if hasattr(value, "args") else None
    if field == "ofType":
        return [value.of_type] if is_wrapping_type(value) else None
    if field == "fields":
        return list(value.fields.values()) if is_object_type(value) or is_interface_type(value) else None
    if field == "inputFields":
        return list(value.fields.values()) if is_input_object_type(value) else None
    if field == "interfaces":
        return list(value.interfaces) if is_object_type(value) or is_interface_type(value) else None
    if field == "possibleTypes":
        return list(schema.get_possible_types(value)) if is_abstract_type(value) else None
    if field == "enumValues":
        return list(value.values.values()) if is_enum_type(value) else None
    return None


_FULL = parse(
    get_introspection_query(
        descriptions=True,
        specified_by_url=True,
        directive_is_repeatable=True,
        schema_description=True,
        input_value_deprecation=True,
    )
)
_budgets: dict[int, Budget] = {}


def budget(schema: GraphQLSchema) -> Budget:
    """The bound of ``schema`` (computed once: a few milliseconds)."""
    found = _budgets.get(id(schema))
    if found is None:
        fragments = {d.name.value: d for d in _FULL.definitions if isinstance(d, FragmentDefinitionNode)}
        walk = Walk(schema, fragments, {}, None)
        operation = _FULL.definitions[0]
        for field in operation.selection_set.selections:  # type: ignore[attr-defined]
            walk.root_field(field)
        found = _budgets[id(schema)] = Budget(nodes=walk.nodes, work=3 * walk.work, size=walk.size)
    return found


def warm(schema: GraphQLSchema) -> None:
    """Compute the schema's bound and run the full introspection once, at a server's start: the
    first client to introspect then pays neither (measured in A1: its first round took several
    times the later ones)."""
    budget(schema)
    execute_sync(schema, _FULL)


class AnswerCache:
    """Answers of operations made of introspection fields alone, by schema, document,
    operation and variables; the least recently used goes first. Bounded: ``size`` answers,
    each at most one full introspection."""

    def __init__(self, size: int = 32) -> None:
        self.size = size
        self.answers: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()

    @staticmethod
    def key(schema: GraphQLSchema, source: str, operation: str | None, variables: Any) -> tuple[Any, ...] | None:
        try:
            values = json.dumps(variables or {}, sort_keys=True)
        except (TypeError, ValueError):
            return None
        return (id(schema), source, operation, values)

    def get(self, key: tuple[Any, ...]) -> dict[str, Any] | None:
        found = self.answers.get(key)
        if found is not None:
            self.answers.move_to_end(key)
        return found

    def put(self, key: tuple[Any, ...], data: dict[str, Any]) -> None:
        self.answers[key] = data
        if len(self.answers) > self.size:
            self.answers.popitem(last=False)


__all__ = [
    "INTROSPECTION_FIELDS",
    "ROOT_FIELDS_ALIKE",
    "AnswerCache",
    "Budget",
    "OverBudget",
    "Walk",
    "budget",
    "warm",
]
