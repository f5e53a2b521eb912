"""Extracted text and its structure: the types every reader returns (blocks with their lines, parts
such as pages), and the helpers that cut lines and paragraphs out of a text. A leaf (it imports
only the small top-level `text`), so every reader and the chunker can build on it."""

from __future__ import annotations

import bisect
import dataclasses
import functools
import re
from dataclasses import dataclass, field

from oboyu.text import SURROGATE, valid_text


@dataclass
class Block:
    text: str
    start_char: int
    end_char: int
    start_line: int
    end_line: int
    heading_level: int = 0  # > 0 for a heading of that level
    kind: str = "text"  # text | heading | code
    exact: bool = True  # text is source[start_char:end_char], so sentence lines can be computed


@dataclass
class Extracted:
    text: str  # what character offsets refer to
    blocks: list[Block] = field(default_factory=list)
    title: str | None = None
    # (offset in `text`, number) where each page, slide, row, chapter, ... begins
    parts: list[tuple[int, int]] = field(default_factory=list)

    @functools.cached_property
    def _part_offsets(self) -> list[int]:
        return [offset for offset, _ in self.parts]

    def parts_between(self, start: int, end: int) -> tuple[int | None, int | None]:
        """The numbers of the parts the text from `start` to `end` spans (None, None: no parts)."""
        if not self.parts:
            return None, None
        offsets = self._part_offsets
        first = max(0, bisect.bisect_right(offsets, start) - 1)
        last = max(0, bisect.bisect_right(offsets, max(start, end - 1)) - 1)
        return self.parts[first][1], self.parts[last][1]

    def made_valid(self) -> Extracted:
        """This text as UTF-8 can hold it (`text.valid_text`), its blocks and parts moved with it
        where a surrogate pair became one character: readers of JSON, RTF or a damaged PDF may
        hand on what the keyword tokenizer and the store cannot take."""
        # an exact block's text is a slice of `text`: only the others can hold what `text` does not
        if not (SURROGATE.search(self.text) or (self.title and SURROGATE.search(self.title))
                or any(SURROGATE.search(b.text) for b in self.blocks if not b.exact)):
            return self
        text, moved = _valid_with_offsets(self.text)
        blocks = [dataclasses.replace(b, text=valid_text(b.text), start_char=moved[b.start_char], end_char=moved[b.end_char])
                  for b in self.blocks]
        parts = [(moved[offset], number) for offset, number in self.parts]
        return Extracted(text, blocks, valid_text(self.title) if self.title else self.title, parts)


def _valid_with_offsets(text: str) -> tuple[str, list[int]]:
    """`valid_text(text)`, and where each offset of `text` (and its end) lies in it."""
    out: list[str] = []
    moved = [0] * (len(text) + 1)
    i = 0
    while i < len(text):
        moved[i] = len(out)
        high, low = text[i], text[i + 1] if i + 1 < len(text) else ""
        if "\ud800" <= high <= "\udbff" and "\udc00" <= low <= "\udfff":
            out.append(chr(0x10000 + ((ord(high) - 0xD800) << 10) + (ord(low) - 0xDC00)))
            moved[i + 1] = moved[i]
            i += 2
            continue
        out.append("\ufffd" if "\ud800" <= high <= "\udfff" else high)
        i += 1
    moved[len(text)] = len(out)
    return "".join(out), moved


class Unextractable(Exception):
    """A file whose text cannot be had; the message says why (for the skipped list)."""


LINE_BREAK = re.compile(r"\r\n|\r|\n")  # what editors count as lines (not \f, \x85, \u2028)


def split_lines(text: str) -> list[str]:
    """The lines of a text, as line numbers in results count them."""
    lines = LINE_BREAK.split(text)
    return lines[:-1] if lines and lines[-1] == "" else lines


def plain_blocks(text: str) -> list[Block]:
    """Paragraphs (separated by blank lines) of plain text."""
    return paragraphs(text, 0, lines_with_offsets(text))


def lines_with_offsets(text: str) -> list[tuple[int, str]]:
    """(offset, line without its line break) for every line."""
    out, pos = [], 0
    for match in LINE_BREAK.finditer(text):
        out.append((pos, text[pos : match.start()]))
        pos = match.end()
    if pos < len(text):
        out.append((pos, text[pos:]))
    return out


def first_h1(blocks: list[Block]) -> str | None:
    return next((b.text for b in blocks if b.heading_level == 1), None)


def line_block(text: str, lines: list[tuple[int, str]], first: int, last: int, **kw) -> Block:
    """A block spanning lines first..last (0-based, inclusive), trimmed of outer whitespace."""
    start = lines[first][0]
    end = lines[last][0] + len(lines[last][1])
    raw = text[start:end]
    lead = len(raw) - len(raw.lstrip())
    body = raw.strip()
    return Block(body, start + lead, start + lead + len(body), first + 1, last + 1, **kw)


def paragraphs(text: str, begin: int, lines: list[tuple[int, str]], kind: str = "text", end: int | None = None) -> list[Block]:
    """Blocks separated by blank lines, over lines[begin:end]."""
    blocks, first = [], None
    stop = len(lines) if end is None else end
    for i in range(begin, stop):
        if lines[i][1].strip():
            if first is None:
                first = i
        elif first is not None:
            blocks.append(line_block(text, lines, first, i - 1, kind=kind))
            first = None
    if first is not None:
        blocks.append(line_block(text, lines, first, stop - 1, kind=kind))
    return blocks
