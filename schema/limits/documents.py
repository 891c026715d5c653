"""Parsed and validated documents, remembered by their text: only those that passed the limits
and validation, and bounded in characters as well as in number.

strawberry's parse and validation caches (one ``lru_cache`` each) kept every document they saw,
refused or not: a parsed 7 KB document of 2,000 tokens is about 0.9 MB of syntax tree, so 200
distinct hostile documents held 180 MB until 512 had pushed them out (issue 47, finding 1). A
document is kept here only once it is known to be harmless and valid, and the kept texts add up
to at most ``max_chars`` characters (about 130 bytes of tree per character).
"""

from collections import OrderedDict
from typing import Any, NamedTuple

from graphql import DocumentNode


class Key(NamedTuple):
    text: str
    max_tokens: int
    rules: tuple[Any, ...]  # the validation rules it was validated with (strawberry's vary per request)


class Documents:
    """A least-recently-used map of document texts to their parsed, valid documents."""

    def __init__(self, max_entries: int = 512, max_chars: int = 500_000) -> None:
        self.max_entries = max_entries
        self.max_chars = max_chars
        self.chars = 0
        self._kept: OrderedDict[Key, DocumentNode] = OrderedDict()

    def get(self, key: Key) -> DocumentNode | None:
        found = self._kept.get(key)
        if found is not None:
            self._kept.move_to_end(key)
        return found

    def put(self, key: Key, document: DocumentNode) -> None:
        """Keep a valid document (one longer than the whole budget is not kept)."""
        if key in self._kept or len(key.text) > self.max_chars:
            return
        self._kept[key] = document
        self.chars += len(key.text)
        while len(self._kept) > self.max_entries or self.chars > self.max_chars:
            old, _ = self._kept.popitem(last=False)
            self.chars -= len(old.text)

    def __len__(self) -> int:
        return len(self._kept)
