"""A root field's selection as a plan: what each response key is made of, checked once.

The planner walks the selection the way graphql-core would complete it (``collect`` is the
executor's own ``collect_subfields``: fragments, aliases, ``@skip``/``@include`` and merged
fields come out exactly as the resolvers see them) and looks each field up in
``resolvers.compiled.forms.FORMS``. A field without a form, a directive it does not know, a
deferred fragment, or a table met twice on one path (its SQL would correlate with the wrong
row; a parent pointer's fresh alias starts the path again, see ``_below``) makes the whole root
field ``NotCompiled``: it is answered by the resolvers instead.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphql import GraphQLObjectType, get_named_type, is_object_type, is_union_type

from resolvers.compiled.forms import CONNECTION, FORMS, LEAF, OBJECT, PARTIES, Form

__all__ = ["Field", "NotCompiled", "ObjectPlan", "plan_connection", "plan_object"]

_KNOWN_DIRECTIVES = frozenset({"skip", "include"})  # already applied by collect_subfields


class NotCompiled(Exception):
    """The selection has something the planner has no SQL form for."""


@dataclass(frozen=True, slots=True)
class Field:
    """One key of the response object: its response name, the schema field it selects, its
    form (None for a connection's own fields and ``__typename``) and the plan below it."""

    response: str
    name: str
    form: Form | None
    sub: Any  # ObjectPlan, a dict of ObjectPlans by type name (parties), or None for a leaf
    node: Any  # the field's AST node: its arguments are read at each execution
    definition: Any  # the schema's GraphQLField (None for __typename)


@dataclass(frozen=True, slots=True)
class ObjectPlan:
    type_name: str
    fields: tuple[Field, ...]


Collect = Callable[[GraphQLObjectType, Any], Any]


def plan_object(collect: Collect, type_: GraphQLObjectType, details: Any, tables: frozenset[str]) -> ObjectPlan:
    """The plan of an object of ``type_`` selected by ``details`` (a field details list), read
    from rows of ``tables`` (those of the enclosing objects, which must not repeat)."""
    grouped, deferred, *_ = collect(type_, details)
    if deferred:
        raise NotCompiled("@defer")
    forms = FORMS.get(type_.name)
    if forms is None:
        raise NotCompiled(type_.name)
    fields = []
    for response, field_details in grouped.items():
        node = field_details[0].node
        name = node.name.value
        for details_ in field_details:
            if any(d.name.value not in _KNOWN_DIRECTIVES for d in details_.node.directives or ()):
                raise NotCompiled("directive")
        if name == "__typename":
            fields.append(Field(response, name, None, type_.name, node, None))
            continue
        definition = type_.fields.get(name)
        form = forms.get(name)
        if form is None or definition is None:
            raise NotCompiled(f"{type_.name}.{name}")
        fields.append(
            Field(response, name, form, _below(collect, form, definition, field_details, tables), node, definition)
        )
    return ObjectPlan(type_.name, tuple(fields))


def _below(collect: Collect, form: Form, definition: Any, details: Any, tables: frozenset[str]) -> Any:
    """The plan below a field, and the path check: ``tables`` are the tables whose rows the SQL
    around this field reads under their own names.

    A table met twice under its own name is refused: a form below the second meeting that
    names the table (its own rows are pinned by ``correlate_except``, but a condition or a form
    reaching for a row above, as ``_players`` reaches for its case by ``_CASE``) would get the
    nearer row, not the one it means. A ``fresh`` form (a parent pointer) reads its row under
    an alias of its own, which no SQL text elsewhere names, and the path starts again below
    it: nothing below can mean a row above it by name, because every parent pointer is read by
    ``Build.one``, which on SQLite is a CTE at the statement's top (``Build._view``) where no
    row above is in scope at all; a form that reached across one would answer wrongly there,
    and the differential tests run every form on SQLite. Below it, a table met twice is refused
    again: item → subproject → workflowItems → case → roles compiles (the page's items are the
    only ``workflow_item`` rows the SQL below the subproject names), and so does case →
    workflowItem → case, but a form reading one table twice between two parent pointers does
    not."""
    if form.shape == LEAF:
        return None
    if form.fresh:
        tables = frozenset()
    elif form.table is not None:
        if form.table in tables:
            raise NotCompiled(f"{form.table} twice on one path")
        tables = tables | {form.table}
    named = get_named_type(definition.type)
    if form.shape == PARTIES:
        if not is_union_type(named):
            raise NotCompiled("parties")
        return {kind.name: plan_object(collect, kind, details, tables) for kind in named.types}
    if not is_object_type(named):
        raise NotCompiled(named.name)
    if form.shape == CONNECTION:
        return plan_connection(collect, named, details, tables)
    assert form.shape == OBJECT
    return plan_object(collect, named, details, tables)


# A connection's own fields, by the type they belong to: Connection, Edge, PageInfo (``archived``:
# a log's connection only, ActivityConnection).
_CONNECTION_FIELDS = {"edges", "pageInfo", "totalCount", "archived"}
_EDGE_FIELDS = {"cursor", "node"}
_PAGE_INFO_FIELDS = {"hasNextPage", "endCursor"}


def plan_connection(collect: Collect, type_: GraphQLObjectType, details: Any, tables: frozenset[str]) -> ObjectPlan:
    """A Relay connection: its fields, its edges' and its page info's, the nodes' plans."""
    fields = []
    for field in _plain_fields(collect, type_, details, _CONNECTION_FIELDS):
        if field.name == "edges":
            edge_type = get_named_type(field.definition.type)
            edge_fields = []
            for edge_field in _plain_fields(collect, edge_type, field.sub, _EDGE_FIELDS):
                if edge_field.name == "node":
                    node_type = get_named_type(edge_field.definition.type)
                    edge_field = _with_sub(edge_field, plan_object(collect, node_type, edge_field.sub, tables))
                edge_fields.append(edge_field)
            field = _with_sub(field, ObjectPlan(edge_type.name, tuple(edge_fields)))
        elif field.name == "pageInfo":
            info_type = get_named_type(field.definition.type)
            field = _with_sub(
                field,
                ObjectPlan(info_type.name, tuple(_plain_fields(collect, info_type, field.sub, _PAGE_INFO_FIELDS))),
            )
        fields.append(field)
    return ObjectPlan(type_.name, tuple(fields))


def _with_sub(field: Field, sub: Any) -> Field:
    return Field(field.response, field.name, field.form, sub, field.node, field.definition)


def _plain_fields(collect: Collect, type_: GraphQLObjectType, details: Any, known: set[str]) -> list[Field]:
    """The fields selected on a connection, edge or page info, each with its field details
    list as ``sub`` (planned further by the caller)."""
    grouped, deferred, *_ = collect(type_, details)
    if deferred:
        raise NotCompiled("@defer")
    fields = []
    for response, field_details in grouped.items():
        node = field_details[0].node
        name = node.name.value
        if any(d.name.value not in _KNOWN_DIRECTIVES for fd in field_details for d in fd.node.directives or ()):
            raise NotCompiled("directive")
        if name == "__typename":
            fields.append(Field(response, name, None, type_.name, node, None))
        elif name in known:
            fields.append(Field(response, name, None, field_details, node, type_.fields[name]))
        else:
            raise NotCompiled(f"{type_.name}.{name}")
    return fields
