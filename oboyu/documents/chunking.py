"""Structure-aware chunks sized by the model's own token count.

Headings start a new chunk and give it its heading path; paragraphs are cut into sentences
(Japanese 。！？ and English . ! ? ends); sentences are packed up to a target token count, and
each chunk after the first in a section repeats the previous chunk's last sentence. A section too
short to mean anything alone (`Attendees: Alice, Bob` under its own heading) joins the next. A sentence
too long for the model is cut at line breaks, then after its commas and at spaces, then at token
boundaries (never inside a character).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from oboyu.documents.extracted import LINE_BREAK, Block, Extracted

TARGET_TOKENS = 256
MIN_SECTION_TOKENS = 12  # below this a section is a label (a date, a list of names), not a passage
# hard cap per chunk: with the prefix, special tokens and up to CONTEXT_CHARS of title and
# heading path (about a token a character at worst) it stays within the model's 512
MAX_TOKENS = 440
TOKEN_CUT_MARGIN = 16
CONTEXT_CHARS = 60
CountTokens = Callable[[Sequence[str]], list[int]]
SplitTokens = Callable[[str, int], list[tuple[int, int]]]

_JA_ENDS = set("。！？!?．｡")
_EN_ENDS = set(".!?")
_OPENERS = set("「『（(【〈《")
_CLOSERS = set("」』）)]】〉》\"'”’")
_MAX_QUOTE_CHARS = 200


@dataclass
class Chunk:
    ordinal: int
    text: str
    heading: str  # heading path, " > " between levels
    start_line: int
    end_line: int
    start_char: int
    end_char: int
    tokens: int


@dataclass
class _Unit:
    start: int
    end: int
    start_line: int
    end_line: int
    tokens: int = 0
    exact: bool = True  # lines can be computed from offsets


def split_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) spans of sentences, whitespace around them excluded. A sentence end inside
    brackets (「はい。」と答えた。) does not end the sentence, unless the bracket never closes."""
    spans, start, i, n = [], 0, 0, len(text)
    depth, opened_at = 0, 0
    while i < n:
        ch = text[i]
        if ch in _OPENERS:
            if depth == 0:
                opened_at = i
            depth += 1
        elif ch in _CLOSERS and depth:
            depth -= 1
        if depth and i - opened_at > _MAX_QUOTE_CHARS:
            depth = 0  # an unbalanced bracket must not swallow the rest of the text
        end = None
        if (depth == 0 and ch in _JA_ENDS) or (depth == 0 and ch in _EN_ENDS and (i + 1 == n or text[i + 1].isspace() or text[i + 1] in _CLOSERS)):
            end = i + 1
        if end is not None:
            while end < n and (text[end] in _CLOSERS or text[end] in _JA_ENDS):
                end += 1
            spans.append((start, end))
            start = i = end
            continue
        i += 1
    spans.append((start, n))
    out = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if s < e:
            out.append((s, e))
    return out


class Chunker:
    def __init__(
        self,
        count_tokens: CountTokens,
        split_tokens: SplitTokens,
        target_tokens: int | None = None,
        max_tokens: int = MAX_TOKENS,
    ):
        self.count_tokens = count_tokens
        self.split_tokens = split_tokens
        self.target = TARGET_TOKENS if target_tokens is None else target_tokens  # read when made: benchmarks try others
        self.max = max_tokens

    def chunk(self, doc: Extracted) -> list[Chunk]:
        breaks = [m.start() for m in LINE_BREAK.finditer(doc.text)]

        def line_of(offset: int) -> int:
            """1-based line of the character at `offset` (\r\n, \r and \n end lines)."""
            return bisect.bisect_left(breaks, offset) + 1

        sections: list[tuple[str, list[_Unit]]] = []
        path: list[tuple[int, str]] = []
        units: list[_Unit] = []
        for block in doc.blocks:
            if block.heading_level:
                if units:
                    sections.append((heading_path(path), units))
                    units = []
                path = under_heading(path, block)
                continue
            units.extend(self._units(block, line_of))
        if units:
            sections.append((heading_path(path), units))

        headings = [b for b in doc.blocks if b.heading_level]
        if not sections and headings:
            # a file of headings only (a title with no body yet, an outline) is still findable
            first, last = headings[0], headings[-1]
            exact = first.exact and last.exact
            lines = (line_of(first.start_char), line_of(last.end_char - 1)) if exact else (first.start_line, last.end_line)
            sections.append(("", [_Unit(first.start_char, last.end_char, *lines, exact=exact)]))
        all_units = [u for _, us in sections for u in us]
        for unit, n in zip(all_units, self.count_tokens([doc.text[u.start : u.end] for u in all_units])):
            unit.tokens = n
        chunks: list[Chunk] = []
        for heading, section_units in _join_short(sections):
            for group in self._pack(self._fit(section_units, doc.text, line_of)):
                head, tail = group[0], group[-1]
                if not any(ch.isalnum() for ch in doc.text[head.start : tail.end]):
                    # punctuation alone (、, ---) means nothing, yet its vector lies near every
                    # query's: a file holding only 、 was a "good match" for asdf qwer (0.70)
                    continue
                chunks.append(
                    Chunk(
                        ordinal=len(chunks),
                        text=doc.text[head.start : tail.end],
                        heading=heading,
                        start_line=head.start_line,
                        end_line=tail.end_line,
                        start_char=head.start,
                        end_char=tail.end,
                        tokens=sum(u.tokens for u in group),
                    )
                )
        return chunks

    def _units(self, block: Block, line_of: Callable[[int], int]) -> list[_Unit]:
        spans = [(0, len(block.text))] if block.kind in ("code", "row") else split_sentences(block.text)
        units = []
        for s, e in spans:
            start, end = block.start_char + s, block.start_char + e
            if block.exact:
                units.append(_Unit(start, end, line_of(start), line_of(end - 1)))
            else:
                units.append(_Unit(start, end, block.start_line, block.end_line, exact=False))
        return units

    def _fit(self, units: list[_Unit], text: str, line_of: Callable[[int], int]) -> list[_Unit]:
        """Cut units over the hard cap: at line breaks first, then at token boundaries."""
        out: list[_Unit] = []
        for unit in units:
            if unit.tokens <= self.max:
                out.append(unit)
                continue
            body = text[unit.start : unit.end]
            pieces = _line_spans(body)
            if len(pieces) < 2:
                pieces = _clause_spans(body)
            if len(pieces) < 2:
                # a piece tokenised alone can count a token or two more than inside the whole
                # (a word's leading mark): cut short of the cap, or each would split again and
                # leave a passage of one character (a trial's one-line 96 KB log: 40 such)
                pieces = self.split_tokens(body, self.max - TOKEN_CUT_MARGIN)
            counts = self.count_tokens([body[s:e] for s, e in pieces])
            sub = []
            for (s, e), n in zip(pieces, counts):
                start, end = unit.start + s, unit.start + e
                lines = (line_of(start), line_of(end - 1)) if unit.exact else (unit.start_line, unit.end_line)
                sub.append(_Unit(start, end, lines[0], lines[1], n, unit.exact))
            out.extend(self._fit(sub, text, line_of) if any(u.tokens > self.max for u in sub) and len(sub) > 1 else sub)
        return out

    def _pack(self, units: list[_Unit]) -> list[list[_Unit]]:
        groups: list[list[_Unit]] = []
        current: list[_Unit] = []
        size = 0
        for unit in units:
            if current and size + unit.tokens > self.target:
                groups.append(current)
                overlap = current[-1]
                # one sentence of overlap, when it is short enough to leave room
                if len(current) > 1 and overlap.tokens + unit.tokens <= self.target and overlap.tokens <= self.target // 4:
                    current, size = [overlap], overlap.tokens
                else:
                    current, size = [], 0
            current.append(unit)
            size += unit.tokens
        if current:
            groups.append(current)
        return groups


def _join_short(sections: list[tuple[str, list[_Unit]]]) -> list[tuple[str, list[_Unit]]]:
    """Sections with their too-short ones joined to the next (the last to the one before); the
    joined passage keeps the first section's heading path."""
    out: list[tuple[str, list[_Unit]]] = []
    carried: tuple[str, list[_Unit]] | None = None
    for heading, units in sections:
        if carried is not None:
            heading, units, carried = carried[0], carried[1] + units, None
        if sum(u.tokens for u in units) < MIN_SECTION_TOKENS:
            carried = (heading, units)
        else:
            out.append((heading, units))
    if carried is not None:
        if out:
            out[-1] = (out[-1][0], out[-1][1] + carried[1])
        else:
            out.append(carried)
    return out


_CLAUSE = re.compile(r"[^\s、，,；;]*[、，,；;]+|[^\s、，,；;]+")


def _clause_spans(body: str) -> list[tuple[int, int]]:
    """Spans of `body` cut after its commas (、，,；;) and at its spaces, for a sentence too long
    for the model that has no line break: packed again, they make passages that end between
    clauses and words, not inside one."""
    return [m.span() for m in _CLAUSE.finditer(body)]


def _line_spans(body: str) -> list[tuple[int, int]]:
    """Spans of the non-blank lines of `body`, outer whitespace excluded."""
    spans, pos = [], 0
    for match in [*LINE_BREAK.finditer(body), None]:
        end = match.start() if match else len(body)
        line = body[pos:end]
        if line.strip():
            lead = len(line) - len(line.lstrip())
            spans.append((pos + lead, pos + lead + len(line.strip())))
        pos = match.end() if match else len(body)
    return spans


def under_heading(path: list[tuple[int, str]], heading: Block) -> list[tuple[int, str]]:
    """The (level, title) path after `heading`: those above its level, then it."""
    return [p for p in path if p[0] < heading.heading_level] + [(heading.heading_level, heading.text)]


def heading_path(path: list[tuple[int, str]]) -> str:
    """(level, title) pairs as passages name their section: `確定申告 > 準備`."""
    return " > ".join(title for _, title in path)
