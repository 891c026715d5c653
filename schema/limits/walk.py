"""One walk of an operation's document: its depth, aliases, cost and introspection nodes, as
if every fragment were written out, in time linear in the document (each fragment measured
once and reused at every spread)."""

from collections.abc import Mapping
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLNamedType,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    SelectionSetNode,
    VariableNode,
    get_named_type,
)

from resolvers.pagination import DEFAULT_FIRST, MAX_FIRST
from schema import introspection
from schema.limits.weights import weights

Size = tuple[int, int, int, int]  # depth, aliases, cost, introspection nodes


class Walk:
    """One walk of an operation. Fragments are measured once and remembered (per fragment:
    depth, aliases and cost at a multiplier of one, since a fragment's cost scales with the
    nodes above it). Introspection fields are counted by schema/introspection.py, their nodes
    both in the cost and on their own (bounded by one full introspection)."""

    def __init__(
        self, schema: GraphQLSchema, document: DocumentNode, variables: Mapping[str, Any], defaults: dict[str, Any]
    ) -> None:
        self.schema = schema
        self.weights = weights(schema)
        self.variables = variables
        self.defaults = defaults
        self.fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
        self.memo: dict[str, Size] = {}
        self.key_memo: dict[str, dict[str, int]] = {}  # a fragment's response keys, its spreads flattened
        self.repeated: tuple[int, str] = (0, "")  # the most copies of one response key in one selection set
        self.first_variables: set[str] = set()  # the variables the shape depends on
        self.budget = introspection.budget(schema)
        self.introspection = introspection.Walk(schema, self.fragments, variables, self.budget)

    def selection_set(
        self, node: SelectionSetNode | None, parent: GraphQLNamedType | None, *, merged: bool = False
    ) -> Size:
        """(depth, aliases, cost, introspection) of a selection set on ``parent`` (None: unknown,
        left to validation); ``merged``: an inline fragment's, whose keys its parent counted."""
        if node is None:
            return 0, 0, 0, 0
        if not merged:
            self.count_repeats(node)
        depth = aliases = cost = nodes = 0
        for selection in node.selections or ():
            if isinstance(selection, FieldNode):
                d, a, c, n = self.field(selection, parent)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                inner = self.schema.get_type(condition.name.value) if condition else parent
                d, a, c, n = self.selection_set(selection.selection_set, inner, merged=True)
            elif isinstance(selection, FragmentSpreadNode):
                d, a, c, n = self.fragment(selection.name.value)
            else:
                continue
            depth, aliases, cost, nodes = max(depth, d), aliases + a, cost + c, nodes + n
        return depth, aliases, cost, nodes

    def count_repeats(self, node: SelectionSetNode) -> None:
        """Remember the most copies of one response key in this selection set, inline fragments
        and spreads merged in as graphql-core's overlap check merges them: it compares every
        pair of them (495 copies of `viewer { login }` held a process 1 to 2.6 seconds)."""
        most = max(self.keys(node, set()).items(), key=lambda item: item[1], default=("", 0))
        if most[1] > self.repeated[0]:
            self.repeated = most[1], most[0]

    def keys(self, node: SelectionSetNode, spread: set[str]) -> dict[str, int]:
        """The response keys of a selection set and their copies; each fragment's once per set,
        as graphql-core collects them."""
        counts: dict[str, int] = {}
        for selection in node.selections or ():
            if isinstance(selection, FieldNode):
                key = (selection.alias or selection.name).value
                counts[key] = counts.get(key, 0) + 1
                continue
            if isinstance(selection, InlineFragmentNode):
                inner = self.keys(selection.selection_set, spread)
            elif isinstance(selection, FragmentSpreadNode) and selection.name.value not in spread:
                spread.add(selection.name.value)
                inner = self.fragment_keys(selection.name.value)
            else:
                continue
            for key, copies in inner.items():
                counts[key] = counts.get(key, 0) + copies
        return counts

    def fragment_keys(self, name: str) -> dict[str, int]:
        found = self.key_memo.get(name)
        if found is None:
            self.key_memo[name] = {}  # a cycle counts nothing more; validation refuses it
            definition = self.fragments.get(name)
            found = self.key_memo[name] = self.keys(definition.selection_set, {name}) if definition else {}
        return found

    def fragment(self, name: str) -> Size:
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

    def field(self, node: FieldNode, parent: GraphQLNamedType | None) -> Size:
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

    def introspection_field(self, node: FieldNode) -> Size:
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
                value = int_literal(argument.value.value)
            elif isinstance(argument.value, VariableNode):
                name = argument.value.name.value
                self.first_variables.add(name)
                value = self.variables.get(name, self.defaults.get(name))
        if not isinstance(value, int) or isinstance(value, bool):
            return DEFAULT_FIRST
        return max(0, min(value, MAX_FIRST))


def int_literal(text: str) -> int | None:
    return int(text) if len(text) <= 20 else MAX_FIRST  # no conversion of a 5,000-digit literal
