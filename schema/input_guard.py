"""The input guard: every value a client sends is checked before any resolver runs.

Two things no field may receive, whatever its type: a NUL character (PostgreSQL text cannot
hold one) and a lone UTF-16 surrogate (it cannot be encoded as UTF-8, neither for the database
nor for the response). Beyond that every input has a ceiling, so that nothing a client sends
makes the server work in proportion to its size: an ``ID`` at most ``MAX_ID`` characters, any
other string at most ``MAX_STRING``, a list at most ``MAX_LIST`` items, and a ``JSON`` value at
most ``MAX_JSON_DEPTH`` deep and ``MAX_JSON_VALUES`` values, its keys at most ``MAX_JSON_KEY``
characters, its numbers finite (no NaN, no Infinity, nothing beyond a double's range such as
``1e400``). The verbs apply tighter, per-field maxima of their own as
``userErrors`` (docs/api.md, "Input limits").

Variables are checked by ``InputGuard`` before execution, against the types their operation
declares; the document's own literals by ``InputLiteralsRule``, a validation rule, so each
document is checked once (the validation cache remembers the answer). A refusal is a GraphQL
error with ``extensions.code = "INVALID_INPUT"`` and ``extensions.field``, the path of the
value. Messages never repeat the value: it may be what cannot be encoded.
"""

import math
import re
from collections.abc import Iterator
from typing import Any

from graphql import (
    GraphQLError,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNamedType,
    GraphQLNonNull,
    OperationDefinitionNode,
    StringValueNode,
    ValidationRule,
    get_named_type,
    type_from_ast,
)
from strawberry.extensions import AddValidationRules

__all__ = [
    "MAX_ID",
    "MAX_JSON_DEPTH",
    "MAX_JSON_KEY",
    "MAX_JSON_VALUES",
    "MAX_LIST",
    "MAX_STRING",
    "InputGuard",
    "InputLiteralsRule",
    "check_json",
]

MAX_ID = 100
MAX_STRING = 10_000
MAX_LIST = 10_000  # a subproject's ordering; the verbs bound their other lists tighter
MAX_JSON_DEPTH = 20
MAX_JSON_VALUES = 20_000
MAX_JSON_KEY = 200

_FORBIDDEN = re.compile("[\x00\ud800-\udfff]")
_FLOAT_MAX = 1.7976931348623157e308
Path = tuple[str | int, ...]


def invalid_input(message: str, path: Path, node: Any = None) -> GraphQLError:
    extensions: dict[str, Any] = {"code": "INVALID_INPUT"}
    if path:
        extensions["field"] = [str(p) for p in path]
    return GraphQLError(message, node, extensions=extensions)


def _where(path: Path) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".") or "A literal value"


def check_text(value: str, path: Path, limit: int = MAX_STRING, *, key: bool = False) -> None:
    """``key``: the string is a key of the object at ``path`` (a bad key is not named)."""
    if len(value) > limit:
        raise invalid_input(f"{_subject(path, key)} is longer than {limit} characters.", path)
    found = _FORBIDDEN.search(value)
    if found is not None:
        what = "a NUL character" if found.group() == "\x00" else "a lone UTF-16 surrogate"
        raise invalid_input(f"{_subject(path, key)} contains {what}, which text may not hold.", path)


def _subject(path: Path, key: bool) -> str:
    return f"A key of {_where(path)}" if key else _where(path)


def _check_scalar(item: Any, parent: Path, key: str | int) -> None:
    """A JSON leaf under ``parent``; its path is built only to report a problem."""
    if isinstance(item, str):
        if len(item) > MAX_STRING or _FORBIDDEN.search(item) is not None:
            check_text(item, (*parent, key))
    elif isinstance(item, bool) or item is None:
        return
    elif isinstance(item, float):
        if not math.isfinite(item):
            path = (*parent, key)
            raise invalid_input(f"{_where(path)} is not a finite number (NaN and Infinity are not JSON).", path)
    elif isinstance(item, int):
        if abs(item) > _FLOAT_MAX:
            path = (*parent, key)
            raise invalid_input(f"{_where(path)} is beyond the range of a double-precision number.", path)
    else:
        path = (*parent, key)
        raise invalid_input(f"{_where(path)} is not a JSON value.", path)


def check_json(value: Any, path: Path = ()) -> Any:
    """A JSON value the database and every client can hold: finite numbers, clean text, at most
    MAX_JSON_DEPTH nested and MAX_JSON_VALUES values. Returns the value (a scalar's parse_value)."""
    if not isinstance(value, dict | list):
        if path:
            _check_scalar(value, path[:-1], path[-1])
        else:
            _check_scalar(value, (), "value")
        return value
    budget = MAX_JSON_VALUES
    stack: list[tuple[Any, Path, int]] = [(value, path, 1)]
    while stack:
        container, where, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise invalid_input(f"{_where(path)} is nested deeper than {MAX_JSON_DEPTH} levels.", path)
        budget -= len(container)
        if budget < 0:
            raise invalid_input(f"{_where(path)} holds more than {MAX_JSON_VALUES} values.", path)
        if isinstance(container, dict):
            pairs: Any = container.items()
            for key in container:
                if not isinstance(key, str):
                    raise invalid_input(f"{_where(where)} has a key that is not a string.", where)
                if len(key) > MAX_JSON_KEY or _FORBIDDEN.search(key) is not None:
                    check_text(key, where, MAX_JSON_KEY, key=True)
        else:
            pairs = enumerate(container)
        for key, item in pairs:
            if isinstance(item, dict | list):
                stack.append((item, (*where, key), depth + 1))
            else:
                _check_scalar(item, where, key)
    return value


def _unwrap(type_: Any) -> Any:
    return type_.of_type if isinstance(type_, GraphQLNonNull) else type_


def check_input(value: Any, type_: Any, path: Path) -> None:
    """``value`` as sent for an input of ``type_``. Values of the wrong shape are left to
    graphql-core's coercion, which refuses them with its own clear error."""
    if value is None:
        return
    type_ = _unwrap(type_)
    if isinstance(type_, GraphQLList):
        if not isinstance(value, list):  # a single value stands for a list of one
            check_input(value, type_.of_type, path)
            return
        if len(value) > MAX_LIST:
            raise invalid_input(f"{_where(path)} has more than {MAX_LIST} items.", path)
        for index, item in enumerate(value):
            check_input(item, type_.of_type, (*path, index))
    elif isinstance(type_, GraphQLInputObjectType):
        if isinstance(value, dict):
            for name, item in value.items():
                field = type_.fields.get(name)
                if field is not None:
                    check_input(item, field.type, (*path, name))
    elif type_.name == "JSON":
        check_json(value, path)
    elif isinstance(value, str):
        check_text(value, path, MAX_ID if type_.name == "ID" else MAX_STRING)


def _operations(document: Any) -> Iterator[OperationDefinitionNode]:
    return (d for d in document.definitions if isinstance(d, OperationDefinitionNode))


def check_variables(schema: Any, document: Any, variables: dict[str, Any] | None) -> None:
    """Every variable an operation of ``document`` declares, against its declared type."""
    if not variables:
        return
    for operation in _operations(document):
        for definition in operation.variable_definitions or ():
            name = definition.variable.name.value
            if name in variables:
                type_ = type_from_ast(schema, definition.type)
                if type_ is not None:
                    check_input(variables[name], type_, (name,))


class InputLiteralsRule(ValidationRule):
    """The document's own strings, as in ``check_text``. Its numbers need no rule: Int and Float
    refuse what they cannot represent, and JSON literals pass through ``check_json``."""

    def enter_string_value(self, node: StringValueNode, *_: Any) -> None:
        named: GraphQLNamedType | None = get_named_type(self.context.get_input_type())
        limit = MAX_ID if named is not None and named.name == "ID" else MAX_STRING
        try:
            check_text(node.value, (), limit)
        except GraphQLError as error:
            self.report_error(invalid_input(error.message, (), node))


class InputGuard(AddValidationRules):
    """Adds ``InputLiteralsRule`` to validation and checks the variables on entering it. List it
    after ``BoundedWork``: a document it already refused is not checked further, and
    variables refused here skip validation (the request is refused either way)."""

    def __init__(self) -> None:
        super().__init__([InputLiteralsRule])

    def on_validate(self) -> None:  # type: ignore[override]
        ctx = self.execution_context
        if ctx.pre_execution_errors:
            return
        try:
            check_variables(ctx.schema._schema, ctx.graphql_document, ctx.variables)
        except GraphQLError as error:
            ctx.pre_execution_errors = [error]
