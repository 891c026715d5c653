"""Telling people: notifications of log entries (``notifications``, with who opted in:
``subscribers``), how each user takes them (``delivery``: in-app, immediate email, digests;
``mail``; ``digests``), the rows of reminders written with what they are about
(``reminder_rows``), live events (``events``), and every log entry in words for a person
(``sentences``, with the words of values in ``wording``). Below the case machinery, which calls it on
every change: it reads a case only through ``subscribers.CaseFacts``, never the cases wing.
"""

# The modules the other wings (and resolvers/, schema/, server/) may import; the others are
# this wing's own (tests/test_layers.py).
__all__ = [
    "delivery",
    "digests",
    "events",
    "mail",
    "notifications",
    "reminder_rows",
    "sentences",
    "subscribers",
    "wording",
]
