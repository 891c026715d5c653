"""The resource tree: projects and subprojects (``resources``), their budgets (``budgets``)
and the order of a subproject's items (``ordering``). Items themselves start cases, so they
live in the cases wing (``engine.cases.items``), above this one.
"""

# The modules the other wings (and resolvers/, schema/, server/) may import; the others are
# this wing's own (tests/test_layers.py).
__all__ = [
    "budgets",
    "item_status",
    "ordering",
    "resources",
]
