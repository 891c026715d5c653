"""Compiled reads: a query's root field answered by one SQL statement that builds its JSON.

For ``node(id:)`` (of a project, subproject or workflow item) and ``projects``, when every
field of the selection has an SQL form (``forms.FORMS``), the planner (``plan``) makes a plan,
cached per (document, operation, root field, shape of the variables); each execution builds
the plan's statement for its viewer and arguments (``build``; the visibility rules inside it,
written once in ``resolvers.visibility``) and runs it: the database returns the field's
finished JSON, which graphql-core takes as the field's completed value. Anything else, or an
argument the resolvers would refuse, returns None: the executor resolves that root field the
usual way (a slower answer, never a different one). ``CASEWAY_COMPILED_READS=false`` turns it
all off. A statement the database refuses is logged and the field resolved, as when SQLite's
parser cannot take it: a compiled read is never answered as an error the resolvers would not
give.
"""

import json
import logging
from collections import OrderedDict
from typing import Any

from graphql import GraphQLError, GraphQLObjectType
from prometheus_client import Counter
from sqlalchemy import select
from sqlalchemy.exc import DBAPIError, OperationalError

from models import kind_of
from resolvers.compiled.build import Build
from resolvers.compiled.forms import root_row
from resolvers.compiled.pages import projects_page
from resolvers.compiled.plan import Field, NotCompiled, ObjectPlan, plan_connection, plan_object
from resolvers.compiled.sql import JsonSql
from resolvers.compiled.tasks import my_tasks

__all__ = ["RootPlan", "TooDeep", "compiled_root"]

log = logging.getLogger("caseway.compiled")

# How each query's root field was answered, in /metrics: ``compiled`` (one statement), ``resolved``
# (a field without an SQL form, a node kind not compiled, or an argument the resolvers refuse)
# or ``fell_back`` (the statement failed; the resolvers answered). The differential tests read
# it to tell a compiled answer from a fallback (tests/fixtures/compiled.py).
READS = Counter(
    "caseway_compiled_reads",
    "Query root fields the read planner was asked for, by how they were answered.",
    ["outcome"],
)


class TooDeep(Exception):
    """The compiled statement failed, and the field is resolved instead: SQLite's parser took
    no statement this deep (it holds about five nested subqueries), or the database refused it
    otherwise (logged). A plan that can never run is forgotten as not compilable."""


# The most recently used plans are kept (least recently used dropped first): a hot document's
# plan stays however many one-off documents pass through.
_PLANS_KEPT = 512
# (document, operation, response name, variable shape) -> RootPlan, or None: not compilable
_plans: OrderedDict[tuple[Any, ...], "RootPlan | None"] = OrderedDict()


class RootPlan:
    """A root field's plan (``node`` of one kind, or ``projects``) and its statement for each
    kind of viewer (admin or not), made at its first execution and kept."""

    __slots__ = ("field", "kind", "plan", "statements")

    def __init__(self, field: Any, kind: str | None, plan: ObjectPlan) -> None:
        self.field = field  # a plan.Field of the root field (its node and definition)
        self.kind = kind  # the node kind, for node(id:)
        self.plan = plan
        self.statements: dict[tuple[bool, bool], tuple[Any, Build]] = {}

    def statement(self, postgres: bool, is_admin: bool, variables: Any) -> tuple[Any, Build]:
        made = self.statements.get((postgres, is_admin))
        if made is None:
            b = Build(JsonSql(postgres=postgres), is_admin, variables)
            made = self.statements[(postgres, is_admin)] = (self._build(b), b)
        return made

    def _build(self, b: Build) -> Any:
        if self.field.name == "myTasks":
            return my_tasks(b, self.field)
        if self.kind is None:  # projects
            return b.connection(self.plan, projects_page(b, self.field))
        table, visible = root_row(self.kind)  # type: ignore[misc]
        node_id, _ = b.arg(self.field, "id")
        return select(b.object(self.plan, table)).select_from(table).where(table.c.id == node_id, visible(b.actor))


def _shape(value: Any) -> Any:
    """What of a variable's value can change a plan: a flag (``@skip``/``@include``), whether
        it is null (or an empty string), the kind of an id (``node(id:)``), and so of an input
    object's parts."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return ("id", kind_of(value), value == "")  # an empty filter part counts as not given
    if isinstance(value, dict):  # an input object: which of its parts are given
        return tuple(sorted((key, _shape(part)) for key, part in value.items()))
    return type(value).__name__


def _plan(executor: Any, parent_type: GraphQLObjectType, details: Any, args: dict[str, Any]) -> "RootPlan | None":
    node = details[0].node
    name = node.name.value
    definition = parent_type.fields.get(name)  # None for __schema and __type: never compiled
    kind = None
    if name == "node":
        kind = kind_of(args["id"])
        if kind is None or root_row(kind) is None:
            return None
        type_ = executor.schema.get_type(kind)
    elif name in ("projects", "myTasks") and definition is not None:
        type_ = definition.type.of_type  # ProjectConnection!, EnabledActionConnection!
    else:
        return None
    try:
        if kind is None:
            table = "project" if name == "projects" else "enabled_action"
            plan = plan_connection(executor.collect_subfields, type_, details, frozenset({table}))
        else:
            plan = plan_object(executor.collect_subfields, type_, details, frozenset({root_row(kind)[0].name}))  # type: ignore[index]
    except NotCompiled:
        return None
    response = node.alias.value if node.alias else name
    return RootPlan(Field(response, name, None, plan, node, definition), kind, plan)


def compiled_root(executor: Any, parent_type: GraphQLObjectType, details: Any, args: dict[str, Any]) -> Any:
    """An awaitable of the root field's JSON value, or None when the resolvers must answer."""
    ctx = executor.context_value
    location = executor.operation.loc
    key = None
    if location is not None:
        operation = executor.operation.name.value if executor.operation.name else None
        shape = tuple(sorted((k, _shape(v)) for k, v in executor.variable_values.coerced.items()))
        node = details[0].node
        response = node.alias.value if node.alias else node.name.value
        # myTasks' order decides its statement: an enum's shape alone would not tell the two apart
        order = args.get("orderBy")
        key = (location.source.body, operation, response, _shape(args.get("id")), getattr(order, "value", order), shape)
    if key is not None and key in _plans:
        _plans.move_to_end(key)  # used now: the last to go
        root = _plans[key]
    else:
        root = _plan(executor, parent_type, details, args)
        if key is not None:
            _plans[key] = root
            if len(_plans) > _PLANS_KEPT:
                _plans.popitem(last=False)
    if root is None:
        READS.labels("resolved").inc()
        return None
    try:
        actor = ctx.viewer
        statement, b = root.statement(not ctx.db.is_sqlite, actor.is_admin, executor.variable_values)
        params = b.params(actor, executor.variable_values)
    except GraphQLError:  # a refused argument or no viewer: the resolvers say so
        READS.labels("refused").inc()
        return None
    # myTasks' statement (visibility of each task's case and item, for every party of the
    # viewer) took PostgreSQL 50-270 ms to plan at 1M items and under 1 ms to run: a custom plan
    # per request, as PostgreSQL never found its generic plan cheaper on paper. Its generic plan
    # runs as fast (R6's TASKS, bench/REPORT.md), so it is planned once per connection.
    generic = root.field.name == "myTasks" and not ctx.db.is_sqlite
    return _run(ctx, statement, params, key, generic=generic)


async def _run(ctx: Any, statement: Any, params: dict[str, Any], key: Any, *, generic: bool = False) -> Any:
    try:
        rows = await ctx.session.rows(statement, params, generic_plan=generic)
    except DBAPIError as error:
        too_deep = "parser stack overflow" in str(error.orig)
        if not too_deep:
            log.exception("a compiled read failed; the resolvers answer it")
        # An operational error may pass (a lost connection, a timeout): the plan is kept then.
        if key is not None and (too_deep or not isinstance(error, OperationalError)):
            _plans[key] = None
        READS.labels("fell_back").inc()
        raise TooDeep from None
    READS.labels("compiled").inc()
    value = rows[0][0] if rows else None
    return json.loads(value) if isinstance(value, str) else value
