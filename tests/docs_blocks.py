"""The fenced code blocks of the repository's Markdown, for the tests that run them.

A block is its info string's language (```` ```sh ````, ```` ```graphql ````, ```` ```yaml ````)
and its text, with the HTML comment on the line before it, if any: ``<!-- not run: REASON -->``
keeps a block from being run (it would serve forever or install), ``<!-- spec: NAME -->`` names
an example workflow spec, ``<!-- refused: NAME CODE PATH -->`` an example spec that is refused,
``<!-- warned: NAME CODE PATH -->`` one defined with a warning.
"""

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```\s*$", re.M | re.S)
_MARKER = re.compile(r"<!--\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    language: str
    text: str
    marker: str  # the comment before the block, "" if none
    line: int

    @property
    def where(self) -> str:
        return f"line {self.line}"


def blocks(path: Path) -> list[Block]:
    source = path.read_text()
    found = []
    for match in _FENCE.finditer(source):
        before = source[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.search(before)
        found.append(
            Block(
                language=match.group(1),
                text=match.group(2),
                marker=marker.group(1) if marker else "",
                line=source.count("\n", 0, match.start()) + 1,
            )
        )
    return found
