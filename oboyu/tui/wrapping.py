"""Where the preview breaks a line of Japanese: between any two characters where one is wide, at
a space, and never before a closing mark (。、」ー, small kana) nor after an opening one (「（):
the line-start and line-end rules of kinsoku shori (JIS X 4051). Rich folds such a line at the
pane's edge wherever it falls, so a user trial's preview had rows starting with 。.

Written here: the rule is two short tables. PyICU's line breaker (UAX #14) would bring a large
native library for them, and BudouX breaks at phrases, which is more than the preview needs."""

from __future__ import annotations

import unicodedata

from rich.cells import cell_len

# a row never starts with these: closing brackets and quotes, punctuation, the long-vowel mark,
# iteration marks and small kana, in their full-width and ASCII forms
NO_ROW_START = frozenset("、。，．,.・：；:;？！?!ー～〜）)］]｝}〕〉》」』】〙〗〟’”ゝゞヽヾ々…‥"
                         "ぁぃぅぇぉっゃゅょゎゕゖァィゥェォッャュョヮヵヶㇰㇱㇲㇳㇴㇵㇶㇷㇸㇹㇺㇻㇼㇽㇾㇿ")
NO_ROW_END = frozenset("（(［[｛{〔〈《「『【〘〖〝‘“")  # nor ends with an opening one


def _wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in "WF"


def _may_break(text: str, at: int) -> bool:
    """Whether a row may end before text[at] by kinsoku's rules alone; never before a mark that
    takes no cell of its own (a combining dakuten of text in NFD, as PDFs and macOS names give
    it; a variation selector), which belongs to the character before it."""
    return text[at] not in NO_ROW_START and text[at - 1] not in NO_ROW_END and cell_len(text[at]) > 0


def _breaks_between(text: str, at: int) -> bool:
    """Whether text[at - 1] and text[at] part there: after a space, or where either is wide."""
    before, after = text[at - 1], text[at]
    return before == " " or (after != " " and (_wide(before) or _wide(after)))


def row_breaks(text: str, width: int) -> list[int]:
    """The offsets where `text` is cut into rows of at most `width` cells: at the last place a
    row may end, else (one word longer than the row) at the last place kinsoku allows, else
    where it overflows. A space that overflows hangs past the edge (the caller strips it), so that
    a row is never a lone space nor cut a word short. A row may exceed `width` only for a
    character wider than it, or by those spaces."""
    breaks: list[int] = []
    start, used = 0, 0
    for at, ch in enumerate(text):
        cells = cell_len(ch)
        while ch != " " and used + cells > width and at > start:  # twice at most: a cut that moved too much down
            candidates = range(at, start, -1)
            cut = next((p for p in candidates if _breaks_between(text, p) and _may_break(text, p)), None)
            if cut is None:
                cut = next((p for p in candidates if _may_break(text, p)), at)
            breaks.append(cut)
            start, used = cut, cell_len(text[cut:at])
        used += cells
    return breaks
