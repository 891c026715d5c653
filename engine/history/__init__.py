"""The activity log: what happened, written once and never changed.

Every change of a case or a resource is a log entry (``activity``: queued in the transaction,
hashed into a chain and inserted just before the commit), read back as history (``history``:
pages, filters, verification), sealed by signed ``checkpoints``. The lowest wing above the
root: everything that changes something writes here, and it reads nothing of the others.
On PostgreSQL the log is partitioned by seq and its oldest partitions can be archived
(``partitions``, in the files ``archive`` describes). ``folded_writes`` (how entries fold into
one insert) is its own detail.
"""

# The modules the other wings (and resolvers/, schema/, server/) may import; the others are
# this wing's own (tests/test_layers.py).
__all__ = [
    "activity",
    "archive",
    "checkpoints",
    "entry_kinds",
    "history",
    "partitions",
    "visits",
]
