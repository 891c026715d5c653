"""Documents on workflow items: stored bytes (``storage``, ``s3``), rows and log entries
(``records``), and collection of files no row refers to (``collect``). Above the tree (a document
belongs to an item), below the cases (an action may attach documents).
"""

# The modules the other wings (and resolvers/, schema/, server/) may import; the others are
# this wing's own (tests/test_layers.py).
__all__ = [
    "collect",
    "records",
    "s3",
    "storage",
]
