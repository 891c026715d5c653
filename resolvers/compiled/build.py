"""A plan made into one SQL statement for one execution: the viewer, the arguments.

``Build.object`` turns an object plan over a row source into a JSON expression, field by
field through each field's form; ``Build.connection`` assembles a Relay connection from a
page subquery (``j``: the edge's JSON, ``c``: its cursor, ``rn``: its place, ``first`` + 1
rows at most: the extra one only says there is a next page).
"""

from collections.abc import Callable
from typing import Any

from graphql.execution.values import get_argument_values
from sqlalchemy import bindparam, func, select

from engine.people import deputies
from engine.people.actors import Actor
from models import Deputyship
from resolvers.compiled.sql import JsonSql

__all__ = ["Build", "Page", "SqlViewer"]


class Page:
    """What a connection form returns: the page subquery, its size (a bound parameter) and its
    total count (a scalar SQL expression, only built when the selection asks for ``totalCount``);
    a log's, the sentence on its archived entries (``archived``, when asked: resolvers/compiled/log.py)."""

    __slots__ = ("archived", "first", "query", "total")

    def __init__(self, query: Any, first: Any, total: Any, archived: Any = None) -> None:
        self.query = query
        self.first = first
        self.total = total
        self.archived = archived


class SqlViewer:
    """The viewer as the visibility rules see it while a statement is built: whether they are an
    admin (which changes the SQL) and their parties as one expanding parameter, so that the
    statement serves every viewer of that kind (``Build.params`` gives the parties). Their id
    and the instant deputyships are judged at (``deputies_at``, as on ``engine.people.actors.Actor``)
    are parameters too, so a cached statement never freezes the time."""

    __slots__ = ("deputies_at", "is_admin", "party_ids", "user_id")

    def __init__(self, is_admin: bool) -> None:
        self.is_admin = is_admin
        self.party_ids = bindparam("viewer_parties", expanding=True)
        self.user_id = bindparam("viewer_user")
        self.deputies_at = bindparam("viewer_at", type_=Deputyship.__table__.c.starts_at.type)


class Build:
    """A plan's statement: the database's JSON functions, the kind of viewer, and every value
    that varies between executions (the viewer's parties, the arguments) as a bound parameter
    that ``params`` computes again for each execution. A statement is made once per plan and
    kind of viewer and kept with it."""

    def __init__(self, json: JsonSql, is_admin: bool, variables: Any) -> None:
        self.json = json
        self.actor: Any = SqlViewer(is_admin)
        self.variables = variables
        self._shared: dict[str, Any] = {}
        self._views = 0  # CTEs made by _view, for their names
        # bound parameter key -> (field, argument name, transform of the argument's value)
        self._arguments: dict[str, tuple[Any, str, Callable[[Any], Any]]] = {}
        # bound parameter key -> its value for the viewer of an execution (``value``)
        self._values: dict[str, tuple[Callable[[Actor], Any], Any]] = {}

    def arg(
        self, field: Any, name: str, transform: Callable[[Any], Any] = lambda value: value, type_: Any = None
    ) -> tuple[Any, Any]:
        """A bound parameter for ``transform(argument)`` of ``field`` (of ``type_``, when the
        database must know it: ``:p IS NULL``), and its value now (it may decide the statement's
        shape only as far as the variables' shape does: null or not)."""
        key = f"arg{len(self._arguments)}"
        self._arguments[key] = (field, name, transform)
        return bindparam(key, type_=type_), transform(self.args(field).get(name))

    def value(self, key: str, compute: Callable[[Actor], Any], type_: Any = None) -> Any:
        """A bound parameter computed afresh for each execution from its viewer, admins too
        (``myTasks`` reads an admin's own parties; "now" is never frozen into a kept statement)."""
        if key not in self._values:
            self._values[key] = (compute, bindparam(key, type_=type_))
        return self._values[key][1]

    def params(self, actor: Actor, variables: Any) -> dict[str, Any]:
        """The parameters of one execution (a GraphQLError: an argument the resolvers refuse)."""
        values: dict[str, Any] = (
            {}
            if actor.is_admin
            else {"viewer_parties": sorted(actor.party_ids), "viewer_user": actor.user_id, "viewer_at": deputies.now()}
        )
        for key, (compute, _) in self._values.items():
            values[key] = compute(actor)
        by_field: dict[int, dict[str, Any]] = {}
        for key, (field, name, transform) in self._arguments.items():
            args = by_field.get(id(field))
            if args is None:
                args = by_field[id(field)] = get_argument_values(field.definition, field.node, variables)
            values[key] = transform(args.get(name))
        return values

    def shared(self, name: str, make: Any) -> Any:
        """One ``make()`` per statement under ``name`` (a CTE read by several subqueries)."""
        if name not in self._shared:
            self._shared[name] = make()
        return self._shared[name]

    def args(self, field: Any) -> dict[str, Any]:
        """The field's arguments, coerced as the resolvers receive them (by GraphQL name)."""
        return get_argument_values(field.definition, field.node, self.variables)

    def object(self, plan: Any, source: Any) -> Any:
        """The JSON object of ``plan`` over the current row of ``source``."""
        pairs = []
        for field in plan.fields:
            if field.form is None:  # __typename
                pairs.append((field.response, self.json.text(field.sub)))
            else:
                pairs.append((field.response, field.form.build(self, source, field)))
        return self.json.object(pairs)

    def rows(self, plan: Any, source: Any, where: list[Any], order: list[Any]) -> Any:
        """A JSON array of ``plan`` over the rows of ``source`` that satisfy ``where``, in
        ``order`` (a nested value: a scalar subquery). Only SQLite's rows are sorted in the
        subquery (``JsonSql.array``): PostgreSQL's aggregate sorts them, and a sort of the
        subquery too was a second sort per case (R1: 200 cases' actions and roles)."""
        columns = [self.object(plan, source).label("j"), *(o.label(f"o{i}") for i, o in enumerate(order))]
        inner = select(*columns).select_from(source).where(*where)
        if not self.json.postgres:
            inner = inner.order_by(*order)
        inner = inner.correlate_except(source).subquery()
        keys = [inner.c[f"o{i}"] for i in range(len(order))]
        return self.json.nested(select(self.json.array(inner.c.j, keys)).scalar_subquery())

    def one(self, plan: Any, table: Any, key: str, value: Any, where: tuple[Any, ...] = ()) -> Any:
        """The JSON object of ``plan`` over the one row of ``table`` whose column ``key`` is
        ``value`` (a column of the enclosing row) and that satisfies ``where``, else null (a
        nested value: a scalar subquery; on SQLite read from a view, see ``_view``)."""
        if not self.json.postgres:
            return self.json.nested(self._view(plan, table, key, value, where))
        query = select(self.object(plan, table)).select_from(table).where(table.c[key] == value, *where)
        query = query.correlate_except(table)
        return query.scalar_subquery()

    def _view(self, plan: Any, table: Any, key: str, value: Any, where: tuple[Any, ...] = ()) -> Any:
        """SQLite: the object read from a CTE of its own, ``NOT MATERIALIZED`` and used once,
        so that SQLite flattens it back into the lookup (one row found by ``key``'s index, never
        the whole table). Its body is parsed at the statement's top, not inside the subqueries
        around the lookup: SQLite's parser holds about eight nested subqueries, and R1 (node,
        subprojects, items, case, roles, assignees, with the visibility rules in the pages'
        conditions) nests more; each object below a connection or a one-row relation starts
        afresh in its own CTE."""
        self._views += 1
        name = f"view{self._views}"  # before the body, which may make views of its own
        body = select(table.c[key].label("k"), self.object(plan, table).label("j")).select_from(table).where(*where)
        view = body.cte(name).prefix_with("NOT MATERIALIZED")
        return select(view.c.j).where(view.c.k == value).scalar_subquery()

    def connection(self, plan: Any, page: Page) -> Any:
        """The select of a connection's JSON over ``page`` (one row)."""
        rows = page.query
        shown = rows.c.rn <= page.first
        pairs = []
        for field in plan.fields:
            if field.name == "__typename":
                pairs.append((field.response, self.json.text(field.sub)))
            elif field.name == "edges":
                pairs.append((field.response, self.json.array(rows.c.j, [rows.c.rn], where=shown)))
            elif field.name == "totalCount":
                pairs.append((field.response, page.total))
            elif field.name == "archived":
                pairs.append((field.response, page.archived))
            else:  # pageInfo
                info = []
                for part in field.sub.fields:
                    if part.name == "__typename":
                        info.append((part.response, self.json.text(part.sub)))
                    elif part.name == "hasNextPage":
                        info.append((part.response, self.json.boolean(func.count() > page.first)))
                    else:  # endCursor
                        info.append((part.response, self.json.last_text(rows.c.c, [rows.c.rn], shown)))
                pairs.append((field.response, self.json.object(info)))
        if not any(field.name in ("edges", "pageInfo") for field in plan.fields):
            return select(self.json.object(pairs))  # no aggregate over the page: one row, none read
        return select(self.json.object(pairs)).select_from(rows)

    def edge(self, plan: Any, source: Any, cursor: Any = None, *, view: bool = True) -> Any:
        """One edge's JSON over a child row of ``source``: its cursor is the child's id, unless
        ``cursor`` (an SQL string) says otherwise (a log entry's is its ``seq``). ``view=False``:
        the node is made of the row itself on SQLite too, when ``source`` is already a CTE of
        its own (``myTasks``' page), which SQLite parses at the statement's top."""
        edge_plan = next((f.sub for f in plan.fields if f.name == "edges"), None)
        if edge_plan is None:
            return self.json.object([])
        pairs = []
        for field in edge_plan.fields:
            if field.name == "__typename":
                pairs.append((field.response, self.json.text(field.sub)))
            elif field.name == "cursor":
                pairs.append((field.response, source.c.id if cursor is None else cursor))
            elif self.json.postgres or not view:  # node
                pairs.append((field.response, self.object(field.sub, source)))
            else:
                pairs.append((field.response, self.json.nested(self._view(field.sub, source, "id", source.c.id))))
        return self.json.object(pairs)

    @staticmethod
    def counted(plan: Any) -> bool:
        return any(field.name == "totalCount" for field in plan.fields)

    @staticmethod
    def asked(plan: Any, name: str) -> bool:
        return any(field.name == name for field in plan.fields)
