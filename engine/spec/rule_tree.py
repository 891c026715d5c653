"""Reading a CEL parse tree (lark's, as cel-python makes it): the shapes engine/spec/rules.py's
checks ask about, apart so that the checks read as rules."""

from typing import Any

from lark import Token, Tree

MACROS = {"all", "exists", "exists_one", "map", "filter"}
ROOTS = ("fields", "case", "actor")  # what a condition reads, each by its members


def is_actor_roles(node: Any) -> bool:
    """The tree of ``actor.roles`` (member > member_dot(actor, roles))."""
    while isinstance(node, Tree) and node.data in ("member", "primary") and len(node.children) == 1:
        node = node.children[0]
    return (
        isinstance(node, Tree)
        and node.data == "member_dot"
        and root_name(node.children[0]) == "actor"
        and str(node.children[1]) == "roles"
    )


def is_plain_list(node: Any) -> bool:
    """A list literal whose items are plain literals (no list, map or expression inside)."""
    while isinstance(node, Tree) and node.data in ("member", "primary") and len(node.children) == 1:
        node = node.children[0]
    if not (isinstance(node, Tree) and node.data == "list_lit"):
        return False
    return not any(
        sub.data in ("list_lit", "map_lit", "member_dot_arg", "ident")
        for sub in node.iter_subtrees()
        if sub is not node
    )


def depth(tree: Tree) -> int:
    """The levels of a parse tree, counted without recursion (the tree may be deep)."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in node.children if isinstance(child, Tree))
    return deepest


def root_name(node: Any) -> str | None:
    """``fields`` for the tree of the bare identifier ``fields`` (member > primary > ident)."""
    while isinstance(node, Tree) and node.data in ("member", "primary") and len(node.children) == 1:
        node = node.children[0]
    if isinstance(node, Tree) and node.data == "ident":
        return str(node.children[0])
    return None


def literal(token: Any) -> str:
    return {
        "INT_LIT": "int",
        "UINT_LIT": "int",
        "FLOAT_LIT": "double",
        "STRING_LIT": "string",
        "MLSTRING_LIT": "string",
        "BYTES_LIT": "dyn",
        "BOOL_LIT": "bool",
        "NULL_LIT": "null",
    }.get(getattr(token, "type", ""), "dyn")


def macro_variables(tree: Tree) -> set[str]:
    """The variables that macros such as ``exists(r, ...)`` bind: dynamic, not unknown names."""
    bound = set()
    for node in tree.iter_subtrees():
        if node.data == "member_dot_arg" and len(node.children) == 3:
            name, args = node.children[1], node.children[2]
            if str(name) in MACROS and isinstance(args, Tree) and args.children:
                first = args.children[0]
                idents = [t for t in first.scan_values(lambda v: isinstance(v, Token) and v.type == "IDENT")]
                if len(idents) == 1:
                    bound.add(str(idents[0]))
    return bound


def members_read(tree: Tree) -> dict[str, frozenset[str]] | None:
    """The members of ``fields``, ``case`` and ``actor`` a condition names (``fields.amount``), by
    root, so that an evaluation converts those alone; None when it names a root otherwise than
    as the target of a member (the checks refuse that; None reads every member)."""
    found: dict[str, set[str]] = {root: set() for root in ROOTS}
    members = 0
    for node in tree.iter_subtrees():
        if node.data == "member_dot":
            root = root_name(node.children[0])
            if root in found:
                found[root].add(str(node.children[1]))
                members += 1
    names = sum(1 for node in tree.iter_subtrees() if node.data == "ident" and str(node.children[0]) in found)
    if names != members:  # a root named bare, or a macro's variable of its name
        return None
    return {root: frozenset(read) for root, read in found.items()}
