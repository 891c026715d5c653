"""Read-your-writes across replicas: which WAL position an HTTP request's reads must see.

A request that wrote answers with the header ``Caseway-Read-After`` (the primary's WAL position
after its commit) and the process remembers it for the bearer token; the token's next reads in
this process, and those of any request that sends the header back (to any process), are served
by a replica only once it has replayed that far (models/replicas.py). A header that is not a WAL
position is no reason to refuse a read: it makes the primary answer, which is always right.
Only with replicas (CASEWAY_DATABASE_REPLICA_URLS); without them nothing is set or sent.
"""

import collections
from typing import Any

from models.replicas import NOWHERE, READ_POSITION, ReadPosition, format_lsn, parse_lsn

HEADER = "caseway-read-after"
REMEMBERED_TOKENS = 10_000  # the newest tokens' positions kept per process


class ReadPositions:
    def __init__(self) -> None:
        self._by_token: collections.OrderedDict[str, int] = collections.OrderedDict()

    def begin(self, request: Any, token: str | None) -> ReadPosition:
        """The request's position, set for its reads (``READ_POSITION``)."""
        sent = request.headers.get(HEADER)
        after = 0 if sent is None else (parse_lsn(sent.strip()) or NOWHERE)
        if token is not None:
            after = max(after, self._by_token.get(token, 0))
        position = ReadPosition(after=after, token=token)
        READ_POSITION.set(position)
        return position

    def finish(self, response: Any) -> None:
        """After the request: remember and send the position its last commit reached."""
        position = READ_POSITION.get()
        if position is None or position.committed is None:
            return
        response.headers[HEADER] = format_lsn(position.committed)
        token = position.token
        if token is not None:
            self._by_token[token] = max(position.committed, self._by_token.get(token, 0))
            self._by_token.move_to_end(token)
            while len(self._by_token) > REMEMBERED_TOKENS:
                self._by_token.popitem(last=False)
