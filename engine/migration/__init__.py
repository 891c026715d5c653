"""Moving running cases to another version of their workflow (``migration``: the verb, dry
run and real; ``migration_plan``: where each case lands). The top wing: it drives the case
machinery. Who may migrate (``migration_access``), the set-based batch (``migration_batch``) and
the case-by-case moves (``migration_moves``) are its own details.
"""

# The modules the other wings (and resolvers/, schema/, server/) may import; the others are
# this wing's own (tests/test_layers.py).
__all__ = [
    "migration",
    "migration_plan",
]
