"""What the preview shows: the result's file read again, numbered lines around its passage, the
passage marked in the gutter and the query's words highlighted near it. Run in a worker thread by
the Preview widget (widgets.py)."""

from __future__ import annotations

import io
import re

from rich.console import Console
from rich.style import Style
from rich.text import Text

from oboyu.documents.keywords import match_spans, query_words
from oboyu.documents.viewing import read_document
from oboyu.errors import OboyuError
from oboyu.search.query import Result
from oboyu.text import visible, visible_pieces
from oboyu.tui.wrapping import row_breaks

MATCH = Style(bold=True, color="black", bgcolor="yellow")  # readable on light and dark themes
_FOCUS = Style(meta={"passage": True})  # invisible: finds the rows of a passage within a long line
PREVIEW_MAX_BYTES = 20 * 1024 * 1024
PREVIEW_CONTEXT_LINES = 200  # lines of the file shown around the passage
HIGHLIGHT_LINES = 40  # lines around the passage whose matches are marked
LINE_OF_PASSAGES = 2000  # characters: a longer line holds several passages (one is 512 tokens at most)


def highlighted(text: str, spans: list[tuple[int, int]], style: Style | str = "") -> Text:
    """Text from a file with its matches marked, control characters made visible (piece by
    piece, since a visible form may be longer than the character it stands for)."""
    out = Text(style=style, no_wrap=True, overflow="ellipsis")
    for piece, matched in visible_pieces(text, spans):
        out.append(piece, style=MATCH if matched else "")
    return out


def preview_text(lines: list[str], first: int, last: int, spans: dict[int, list[tuple[int, int]]],
                 context: int = PREVIEW_CONTEXT_LINES, width: int = 0,
                 focus: tuple[int, int] | None = None) -> tuple[Text, int]:
    """Numbered lines around the passage (lines first..last, 1-based) with the passage marked in
    the gutter and matches highlighted, each line wrapped to `width` cells under its number (0:
    not wrapped); returns the text and the row the passage starts on. Wrapped, because a
    paragraph is often one line (a Word file's, a note's): cut at the pane's edge, the preview
    showed its first forty characters. `focus`, columns of line `first`: where in that line the
    passage is, when the line holds more than the passage (a minified file's one line of 108 KB
    showed its start, a hundred rows above the passage); only its rows are marked."""
    lo, hi = max(1, first - context), min(len(lines), last + context)
    number_width = len(str(hi))
    room = width - number_width - 3  # the number, a space, the gutter's mark and a space
    console = Console(width=max(room, 1), file=io.StringIO(), color_system=None) if room > 0 else None
    out = Text(no_wrap=True, overflow="crop", end="")
    rows = first_row = 0
    passage_row: int | None = None
    for number in range(lo, hi + 1):
        line = highlighted(lines[number - 1], spans.get(number, []))
        focused = focus is not None and number == first
        if focused and focus:
            raw = lines[number - 1]
            line.stylize(_FOCUS, len(visible(raw[: focus[0]])), len(visible(raw[: focus[1]])))
        if number == first:
            first_row = rows  # where the passage starts, unless its focus is further down the line
        parts = _rows(line, console, room)
        for i, part in enumerate(parts or [line]):
            inside = first <= number <= last and (not focused or any(span.style == _FOCUS for span in part.spans))
            if focused and inside and passage_row is None:
                passage_row = rows
            if rows:
                out.append("\n")
            label = f"{number:>{number_width}} " if i == 0 else " " * (number_width + 1)
            out.append(label, style="bold" if inside else "dim")
            out.append("▌ " if inside else "  ", style="yellow" if inside else "")
            out.append_text(part)
            rows += 1
    return out, first_row if passage_row is None else passage_row


def _rows(line: Text, console: Console | None, room: int) -> list[Text]:
    """A line cut into rows of `room` cells: English by Rich's word wrap, a line with Japanese
    by kinsoku's rules (`wrapping.row_breaks`)."""
    if console is None or line.cell_len <= room:
        return [line]
    if line.plain.isascii():
        return list(line.wrap(console, room, no_wrap=False, overflow="fold"))
    line = line.copy()
    line.expand_tabs()  # as Rich's wrap does: a tab takes no cell in `cell_len`
    rows = list(line.divide(row_breaks(line.plain, room)))
    for row in rows:
        row.rstrip()  # a space that hung past the edge
    return rows


def read_preview(result: Result, query: str, width: int = 0) -> tuple[Text, int]:
    """The preview of `result`, wrapped to `width`, and the row its passage starts on; a file that
    cannot be read again gives its indexed passage under the reason."""
    try:
        lines = read_document(result.path, PREVIEW_MAX_BYTES, result.file_type or None).lines
    except OboyuError as exc:
        return Text(visible(f"{exc} (showing the indexed passage)") + "\n\n" + visible(result.snippet)), 0
    terms = set(query_words(query))
    lo, hi = max(1, result.start_line - HIGHLIGHT_LINES), min(len(lines), result.end_line + HIGHLIGHT_LINES)
    spans = {n: match_spans(lines[n - 1], terms) for n in range(lo, hi + 1)}
    focus = None
    if result.start_line == result.end_line <= len(lines):
        focus = snippet_columns(lines[result.start_line - 1], result.snippet)
    return preview_text(lines, result.start_line, min(result.end_line, len(lines)), spans, width=width, focus=focus)


def snippet_columns(line: str, snippet: str) -> tuple[int, int] | None:
    """Where a result's snippet is in its line, when the line is longer than a passage can be
    (several passages): the snippet's words with any spacing between them (a snippet's runs of
    spaces are one). In a shorter line the passage is the line, and all of it is marked."""
    words = snippet.strip("…").split()
    if not words or len(line) <= LINE_OF_PASSAGES:
        return None
    found = re.search(r"\s+".join(map(re.escape, words)), line)
    return found.span() if found else None
