"""What the preview shows: the result's file read again, numbered lines around its passage, the
passage marked in the gutter and the query's words highlighted near it. Run in a worker thread by
the Preview widget (widgets.py)."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text

from oboyu.documents.keywords import match_spans, query_words
from oboyu.documents.viewing import read_document
from oboyu.errors import OboyuError
from oboyu.search.query import Result
from oboyu.text import visible, visible_pieces

MATCH = Style(bold=True, color="black", bgcolor="yellow")  # readable on light and dark themes
PREVIEW_MAX_BYTES = 20 * 1024 * 1024
PREVIEW_CONTEXT_LINES = 200  # lines of the file shown around the passage
HIGHLIGHT_LINES = 40  # lines around the passage whose matches are marked


def highlighted(text: str, spans: list[tuple[int, int]], style: Style | str = "") -> Text:
    """Text from a file with its matches marked, control characters made visible (piece by
    piece, since a visible form may be longer than the character it stands for)."""
    out = Text(style=style, no_wrap=True, overflow="ellipsis")
    for piece, matched in visible_pieces(text, spans):
        out.append(piece, style=MATCH if matched else "")
    return out


def preview_text(lines: list[str], first: int, last: int, spans: dict[int, list[tuple[int, int]]],
                 context: int = PREVIEW_CONTEXT_LINES) -> tuple[Text, int]:
    """Numbered lines around the passage (lines first..last, 1-based) with the passage marked in
    the gutter and matches highlighted; returns the text and the row of the passage's first line."""
    lo, hi = max(1, first - context), min(len(lines), last + context)
    width = len(str(hi))
    out = Text(no_wrap=True, overflow="crop", end="")
    for number in range(lo, hi + 1):
        inside = first <= number <= last
        out.append(f"{number:>{width}} ", style="bold" if inside else "dim")
        out.append("▌ " if inside else "  ", style="yellow" if inside else "")
        line = highlighted(lines[number - 1], spans.get(number, []))
        out.append_text(line)
        if number < hi:
            out.append("\n")
    return out, first - lo


def read_preview(result: Result, query: str) -> tuple[Text, int]:
    """The preview of `result` and the row its passage starts on; a file that cannot be read again
    gives its indexed passage under the reason."""
    try:
        lines = read_document(result.path, PREVIEW_MAX_BYTES, result.file_type or None).lines
    except OboyuError as exc:
        return Text(visible(f"{exc} (showing the indexed passage)") + "\n\n" + visible(result.snippet)), 0
    terms = set(query_words(query))
    lo, hi = max(1, result.start_line - HIGHLIGHT_LINES), min(len(lines), result.end_line + HIGHLIGHT_LINES)
    spans = {n: match_spans(lines[n - 1], terms) for n in range(lo, hi + 1)}
    return preview_text(lines, result.start_line, min(result.end_line, len(lines)), spans)
