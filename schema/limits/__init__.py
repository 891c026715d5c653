"""Bounded work per GraphQL operation, measured before anything runs, cheapest check first.

One concept per module: ``bounds`` (the limits and the refusal of a shape past them),
``weights`` (what a field costs), ``walk`` (one walk of a document), ``shapes`` (an operation's
shape, cached), ``extension`` (``BoundedWork``, the schema extension that applies them).

1. Characters, before parsing (the parser reads each one, a comment's too); then tokens, while
   parsing: graphql-core stops at ``max_tokens`` (the parse cache keys by it).
2. Depth, aliases and cost, in one walk of the document that visits each fragment once
   (its result is remembered and reused at every spread): linear in the document's size,
   whatever it expands to. A chain of fragments that each spread the next twice expands to
   2^n selections; measured here it is n fragments.
3. graphql-core's own validation (cached per document), only for a document within bounds.

The cost is GitHub's node count: a connection field (one with a ``first`` argument) returns
``first`` nodes (20 when absent, at most 100) and multiplies the cost of everything below it;
any other object field counts one per parent; a field may carry its own weight
(``metadata={COST: n}``, e.g. ``Workflow.diagram``); a list without ``first`` declares its
longest length (``metadata={MAX_ITEMS: n}``, e.g. ``CaseRole.pickList``) and counts as a
connection of that page size. Every refusal is a GraphQL error with an
``extensions.code``; the accepted cost is reported in the response's ``extensions.cost``.

4. While it runs, over HTTP and WebSocket alike (the hook is the schema's, not a transport's):
   a query or mutation is stopped at ``operation_timeout`` (``TIMEOUT``), and one connection
   runs at most ``ws_max_operations`` of them at once (``TOO_MANY_OPERATIONS``). A subscription
   is neither: it lives as long as its connection by design, and each of its events is bounded
   by the cost limit of its document (its setup is cheap: the resolver reads nothing until the
   first event).
"""

from schema.limits.bounds import Limits, Shape, refusal
from schema.limits.extension import BoundedWork
from schema.limits.shapes import measure
from schema.limits.weights import COST, MAX_ITEMS

__all__ = ["COST", "MAX_ITEMS", "BoundedWork", "Limits", "Shape", "measure", "refusal"]
