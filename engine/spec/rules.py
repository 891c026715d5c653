"""Conditions written in the Common Expression Language (CEL): an action's ``enabled_when`` and
the ``when`` of its ``routes`` (docs/workflows.md, "Fields and rules").

Why CEL and why checked here: a condition is client input that runs inside an action's
transaction, so it must be a language with no loops, no I/O and a known cost, parsed by a
maintained package (cel-python) rather than by us; and a rule that reads a field that does not
exist, or compares an amount with a word, should be refused when the workflow is defined, not
found out by the first case that reaches it. The package parses; this module walks its parse tree
once at definition to type-check the expression against the declared fields and bound its size,
and evaluates it at run time over ``fields``, ``case`` and ``actor``.
"""

import ast
import re
import sys
from dataclasses import dataclass, field
from typing import Any

import celpy
import re2
from celpy import celtypes
from lark import Token, Tree

from engine.spec.rule_tree import (
    MACROS,
    ROOTS,
    depth,
    is_actor_roles,
    is_plain_list,
    literal,
    macro_variables,
    members_read,
    root_name,
)

__all__ = ["MAX_LENGTH", "MAX_NODES", "ROOTS", "Rule", "RuleError", "compile_rule", "evaluate"]

MAX_LENGTH = 1000  # characters of one condition
MAX_NODES = 400  # nodes of its parse tree: the cost budget (no loop can run longer than its list)
# levels of its parse tree (a plain comparison is 15, each pair of parentheses 10 more): the
# evaluator recurses through them, and the process's recursion limit (1,000 frames) must hold it
# inside a request's stack
MAX_DEPTH = 120
# What a condition may read besides ``fields``: the case and the actor, as (name -> CEL type).
CASE_MEMBERS = {"state": "string", "status": "string"}
ACTOR_MEMBERS = {"id": "string", "roles": "list", "is_admin": "bool"}
# A declared field's CEL type (engine/spec/field_specs.py's types).
CEL_TYPES = {
    "string": "string",
    "text": "string",
    "enum": "string",
    "user": "string",
    "date": "string",
    "datetime": "string",
    "integer": "int",
    "number": "double",
    "money": "double",
    "boolean": "bool",
}
# Why a macro's cost is bounded: it runs only over actor.roles (a spec's roles) or a list literal
# of plain values, never inside another macro and never over a macro's result, so a condition
# costs at most (its list's length) x (its nodes); chained or nested macros multiplied that, and
# 300 nodes ran for minutes (found by review).
MAX_LIST_LITERAL = 50  # items of one list literal
# The functions and methods a condition may call (CEL's standard ones that make sense here);
# another name is refused at definition, not found out by every evaluation.
_FUNCTIONS = {"has", "size", "int", "uint", "double", "string", "bool", "timestamp", "duration"}
_METHODS = {
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "size",
    "getFullYear",
    "getMonth",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getHours",
    "getMinutes",
    "getSeconds",
}
_NUMERIC = {"int", "double"}
_ORDERED = {"<": "relation_lt", "<=": "relation_le", ">": "relation_gt", ">=": "relation_ge"}
# celpy.Environment() raises the whole process's recursion limit to 2,500 (for CEL's nesting
# minimums); the server relies on the default to refuse JSON nested past it (a 1,000-deep body is a
# 400, server/app.py), so the limit is put back, and a condition nested too deeply for it is
# refused as one (RecursionError below).
_LIMIT = sys.getrecursionlimit()
_ENV = celpy.Environment()
sys.setrecursionlimit(_LIMIT)
_MISSING = re.compile(r"no such member in mapping: .?'([A-Za-z_][A-Za-z0-9_]*)")


class RuleError(Exception):
    """A condition refused at definition (a sentence), or one that failed at run time."""


@dataclass(frozen=True, slots=True)
class Rule:
    """A checked condition and its program, compiled once with the spec (specs are cached), and
    the members of ``fields``, ``case`` and ``actor`` it reads (None: it may read any)."""

    source: str
    program: Any
    reads: dict[str, frozenset[str]] | None = field(default=None, compare=False)  # follows from source

    def __repr__(self) -> str:
        return f"Rule({self.source!r})"


def compile_rule(source: Any, field_types: dict[str, str], *, with_actor: bool = True) -> Rule:
    """Parse ``source`` and check it against the declared fields (name -> field type); raises
    RuleError with a sentence saying what is wrong. ``with_actor``: whether it may read the actor
    (a route may; an enabled_when is asked at a change, for no one in particular)."""
    if not isinstance(source, str) or not source.strip():
        raise RuleError("A condition must be a non-empty string of CEL.")
    if len(source) > MAX_LENGTH:
        raise RuleError(f"A condition is at most {MAX_LENGTH} characters; this one has {len(source)}.")
    try:
        tree = _ENV.compile(source)
    except RecursionError:
        raise RuleError("The condition is nested too deeply.") from None
    except celpy.CELParseError as error:
        where = getattr(error, "column", None)
        raise RuleError(
            "The condition is not valid CEL" + (f" (at character {where})" if where else "") + "."
        ) from None
    nodes = sum(1 for _ in tree.iter_subtrees())
    if nodes > MAX_NODES:
        raise RuleError(f"The condition is too costly: {nodes} parts, at most {MAX_NODES}.")
    if depth(tree) > MAX_DEPTH:
        raise RuleError("The condition is nested too deeply: take some parentheses out.")
    checker = _Checker({name: CEL_TYPES[kind] for name, kind in field_types.items()}, macro_variables(tree))
    checker.with_actor = with_actor
    result = checker.type_of(tree)
    if result not in ("bool", "dyn"):
        raise RuleError(f"The condition must be true or false, not {_words(result)}.")
    return Rule(source=source, program=_ENV.program(tree), reads=members_read(tree))


def evaluate(rule: Rule, activation: dict[str, Any]) -> bool:
    """The condition's value over ``fields``, ``case`` and ``actor`` (plain JSON values);
    RuleError when it cannot be evaluated (a field without a value, a division by zero)."""
    try:
        value = rule.program.evaluate({name: celpy.json_to_cel(part) for name, part in activation.items()})
    except (celpy.CELEvalError, TypeError, ValueError, KeyError) as error:
        raise RuleError(_failure(error)) from None
    except RecursionError:
        raise RuleError("it is nested too deeply to evaluate") from None
    if isinstance(value, celpy.CELEvalError):
        raise RuleError(_failure(value))
    if not isinstance(value, celtypes.BoolType):
        raise RuleError("it gave a value that is not true or false")
    return bool(value)


def _failure(error: Exception) -> str:
    text = str(error)
    missing = _MISSING.search(text)
    if missing is not None:
        return f"the field {missing.group(1)} has no value"
    if "divide by zero" in text:
        return "it divides by zero"
    return "its values have the wrong types"


def _words(kind: str) -> str:
    return {"int": "a whole number", "double": "a number", "string": "a string", "list": "a list"}.get(kind, kind)


class _Checker:
    """The types of a CEL parse tree's nodes: enough to catch an unknown field and a comparison
    of different kinds; what cannot be known (a function's result) is ``dyn`` and checked at run
    time."""

    def __init__(self, fields: dict[str, str], bound: set[str]) -> None:
        self.fields = fields
        self.bound = bound
        self.with_actor = True
        self.in_macro = False

    def type_of(self, node: Any) -> str:
        if isinstance(node, Token):
            return "dyn"
        handler = getattr(self, "_" + node.data, None)
        if handler is not None:
            return handler(node)
        kinds = [self.type_of(child) for child in node.children]
        return kinds[0] if len(kinds) == 1 else "dyn"

    def _expr(self, node: Tree) -> str:
        if len(node.children) == 1:
            return self.type_of(node.children[0])
        condition, yes, no = (self.type_of(child) for child in node.children)
        self._want(condition, "bool", "The condition of ?: ")
        return yes if yes == no else "dyn"

    def _conditionalor(self, node: Tree) -> str:
        return self._logical(node, "||")

    def _conditionaland(self, node: Tree) -> str:
        return self._logical(node, "&&")

    def _logical(self, node: Tree, operator: str) -> str:
        kinds = [self.type_of(child) for child in node.children]
        if len(kinds) == 1:
            return kinds[0]
        for kind in kinds:
            self._want(kind, "bool", f"Both sides of {operator} ")
        return "bool"

    def _relation(self, node: Tree) -> str:
        if len(node.children) == 1:
            return self.type_of(node.children[0])
        operator, right = node.children
        left_kind = self.type_of(operator.children[0])
        right_kind = self.type_of(right)
        if operator.data == "relation_in":
            if right_kind not in ("list", "map", "dyn"):
                raise RuleError(f"'in' needs a list on its right, not {_words(right_kind)}.")
            return "bool"
        if "dyn" in (left_kind, right_kind) or "null" in (left_kind, right_kind):
            return "bool"
        if operator.data in _ORDERED.values():
            comparable = (left_kind in _NUMERIC and right_kind in _NUMERIC) or left_kind == right_kind == "string"
        else:
            comparable = left_kind == right_kind
        if not comparable:
            raise RuleError(f"It compares {_words(left_kind)} with {_words(right_kind)}.")
        return "bool"

    def _arithmetic(self, node: Tree) -> str:
        if len(node.children) == 1:
            return self.type_of(node.children[0])
        operator, right = node.children
        left_kind, right_kind = self.type_of(operator.children[0]), self.type_of(right)
        if "dyn" in (left_kind, right_kind):
            return "dyn"
        if left_kind != right_kind or left_kind not in (*_NUMERIC, "string", "list"):
            raise RuleError(f"It adds or multiplies {_words(left_kind)} and {_words(right_kind)}.")
        return left_kind

    _addition = _arithmetic
    _multiplication = _arithmetic

    def _unary(self, node: Tree) -> str:
        if len(node.children) == 1:
            return self.type_of(node.children[0])
        operator, operand = node.children
        kind = self.type_of(operand)
        if operator.data == "unary_not":
            self._want(kind, "bool", "! ")
            return "bool"
        if kind not in (*_NUMERIC, "dyn"):
            raise RuleError(f"It negates {_words(kind)}.")
        return kind

    def _member_dot(self, node: Tree) -> str:
        target, name = node.children
        root = root_name(target)
        if root == "fields":
            if str(name) not in self.fields:
                raise RuleError(f"It reads fields.{name}, which the workflow does not declare.")
            return self.fields[str(name)]
        if root == "actor" and not self.with_actor:
            raise RuleError(
                "enabled_when is asked whenever the case changes, for no one in particular: "
                "it reads fields and case, not actor"
            )
        if root in ("case", "actor"):
            members = CASE_MEMBERS if root == "case" else ACTOR_MEMBERS
            if str(name) not in members:
                raise RuleError(f"It reads {root}.{name}; {root} has {', '.join(members)}.")
            return members[str(name)]
        self.type_of(target)
        return "dyn"

    def _member_dot_arg(self, node: Tree) -> str:
        target, method = node.children[0], str(node.children[1])
        if method in MACROS:
            return self._macro(node, target, method)
        if method not in _METHODS:
            raise RuleError(
                f"It calls .{method}(), which a condition cannot use; it may call {', '.join(sorted(_METHODS))}."
            )
        for child in node.children:
            if isinstance(child, Tree):
                self.type_of(child)
        if method == "matches":
            self._check_pattern(node)
        return "bool" if method in ("contains", "startsWith", "endsWith", "matches") else "dyn"

    def _macro(self, node: Tree, target: Any, method: str) -> str:
        if self.in_macro:
            raise RuleError(f"It uses .{method}() inside another list macro; nested macros multiply their cost.")
        if not (is_actor_roles(target) or is_plain_list(target)):
            raise RuleError(
                f".{method}() runs over actor.roles or a list of plain values written in the condition, "
                "not over another expression."
            )
        self.in_macro = True
        try:
            for child in node.children:
                if isinstance(child, Tree):
                    self.type_of(child)
        finally:
            self.in_macro = False
        return "bool" if method in ("all", "exists", "exists_one") else "list"

    @staticmethod
    def _check_pattern(node: Tree) -> None:
        """A literal pattern is compiled now (RE2, as at run time): a bad one is refused here."""
        literals = [v for v in node.scan_values(lambda v: isinstance(v, Token) and v.type == "STRING_LIT")]
        for token in literals[:1]:
            try:
                re2.compile(ast.literal_eval(str(token)))
            except Exception:  # any refusal of the pattern: said in words
                raise RuleError(f"Its pattern {token} is not a valid regular expression.") from None

    def _primary(self, node: Tree) -> str:
        child = node.children[0]
        if isinstance(child, Tree) and child.data == "ident":
            name = str(child.children[0])
            if name in ("fields", "case", "actor"):
                raise RuleError(f"It reads {name} as a whole; read one of its members ({name}.name).")
            if name not in self.bound:
                raise RuleError(f"It names {name!r}; a condition reads fields.NAME, case.state or actor.roles.")
            return "dyn"
        if isinstance(child, Tree) and child.data == "literal":
            return literal(child.children[0])
        if isinstance(child, Tree) and child.data == "list_lit":
            items = sum(1 for _ in child.scan_values(lambda v: isinstance(v, Token)))
            if items > MAX_LIST_LITERAL:
                raise RuleError(f"A list in a condition has at most {MAX_LIST_LITERAL} items.")
            self.type_of(child)
            return "list"
        if isinstance(child, Tree) and child.data == "map_lit":
            self.type_of(child)
            return "map"
        if isinstance(child, Tree) and child.data == "ident_arg":
            function = str(child.children[0])
            if function not in _FUNCTIONS:
                raise RuleError(
                    f"It calls {function}(), which a condition cannot use; it may call {', '.join(sorted(_FUNCTIONS))}."
                )
            for part in child.children[1:]:
                self.type_of(part)
            return "bool" if function == "has" else "dyn"
        return self.type_of(child)

    @staticmethod
    def _want(kind: str, wanted: str, where: str) -> None:
        if kind not in (wanted, "dyn"):
            raise RuleError(f"{where}must be true or false, not {_words(kind)}.")
