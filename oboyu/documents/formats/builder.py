"""An `Extracted` assembled from pieces: headings, paragraphs and rows, joined by blank lines.

Every block is a slice of the text it builds, so the chunker's offsets and lines are exact in it,
and a preview or `read` that shows this text shows the lines a result names. `part` marks where a
page, slide, row, chapter or message begins, for the locations results show.
"""

from __future__ import annotations

import re

from oboyu.documents.extracted import Block, Extracted

_BLANK_RUNS = re.compile(r"\n[ \t\u3000]*(?:\n[ \t\u3000]*)+")
_TRAILING_SPACE = re.compile(r"[ \t\u3000]+\n")
SEPARATOR = "\n\n"


def tidy(text: str) -> str:
    """One paragraph's text: line breaks as \\n, no blank lines inside, no outer whitespace."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x0b", "\n").replace("\x0c", "\n")
    text = _TRAILING_SPACE.sub("\n", text)
    return _BLANK_RUNS.sub("\n", text).strip()


class TextBuilder:
    def __init__(self, title: str | None = None) -> None:
        self.title = title
        self._pieces: list[str] = []
        self._blocks: list[Block] = []
        self._parts: list[tuple[int, int]] = []
        self._pos = 0
        self._line = 1  # the last line of the text so far (1 before anything)

    def heading(self, text: str, level: int) -> None:
        self._add(tidy(text).replace("\n", " "), level=max(1, min(level, 9)), kind="heading")

    def paragraph(self, text: str, kind: str = "text") -> None:
        """A paragraph (`text`), a code block (`code`, never cut into sentences) or a record:
        one table or sheet row (`row`, kept whole)."""
        self._add(tidy(text), kind=kind)

    def part(self, number: int) -> None:
        """The blocks added from here on are in part `number` (a page, slide, row, ...)."""
        if self._parts and self._parts[-1][0] == self._pos + self._gap():
            self._parts[-1] = (self._parts[-1][0], number)
        else:
            self._parts.append((self._pos + self._gap(), number))

    def include(self, other: Extracted, level: int) -> None:
        """The blocks of another document (an attachment), its headings below level `level`."""
        for block in other.blocks:
            if block.heading_level:
                self.heading(block.text, block.heading_level + level)
            else:
                self.paragraph(block.text, block.kind)

    @property
    def empty(self) -> bool:
        return not any(not b.heading_level for b in self._blocks)

    @property
    def size(self) -> int:
        """Blocks added so far."""
        return len(self._blocks)

    def build(self) -> Extracted:
        # a part that no text followed (an empty last paragraph, slide or chapter) would begin past
        # the end of the text, on a line previews do not have
        parts = [part for part in self._parts if part[0] < self._pos]
        return Extracted(SEPARATOR.join(self._pieces), self._blocks, self.title or None, parts=parts)

    def _gap(self) -> int:
        return len(SEPARATOR) if self._pieces else 0

    def _add(self, text: str, level: int = 0, kind: str = "text") -> None:
        if not text:
            return
        start = self._pos + self._gap()
        if self._pieces:
            self._line += SEPARATOR.count("\n")
        lines = text.count("\n")
        self._blocks.append(Block(text, start, start + len(text), self._line, self._line + lines, level, kind))
        self._pieces.append(text)
        self._pos = start + len(text)
        self._line += lines
